/**
 * Giving memory back to the operating system while the service is idle (issue 34 point 5). A lab's service is
 * idle most of the time, yet after a burst of polls or requests its resident memory stays at the burst's
 * peak: V8 keeps the heap it grew (in BENCHMARKS.md section 7x, 133 MiB of heap holding 64 MiB of objects, of
 * which a full collection leaves 37 MiB), and glibc's allocator keeps the native pages it freed (TLS and HTTP
 * buffers of the device connections). Every `intervalSeconds` the reclaimer looks at the process: once it is
 * idle after a burst, it runs one full garbage collection and, on Linux with glibc, `malloc_trim(0)`. A busy
 * process is never interrupted; an idle one pays one collection (tens to hundreds of milliseconds) per burst
 * ({@link ReclaimPolicy} decides).
 *
 * Both means are best effort and found at start: V8's `gc` is exposed at run time through `node:v8` flags and
 * read from a new `node:vm` context; `malloc_trim` is called through FFI (permitted by `-A`). Either missing
 * (another platform or libc, a narrower permission set) only leaves that half out. With PGlite in a worker
 * (`DUT_PGLITE_WORKER=on`), whose heap is another isolate's, the worker collects its own first (`alsoCollect`).
 *
 * @module
 */
import process from "node:process";
import { logger } from "../util/log.ts";
import { fullGc } from "../util/gc.ts";

/** Largest share of one core the process may have used over the interval for it to count as idle. */
export const IDLE_CPU_SHARE = 0.05;
/** Growth of the resident memory since the last reclaim below which nothing is done. */
export const MIN_GROWTH_BYTES = 16 * 1024 * 1024;

/**
 * More than this share of one core over an interval makes it a burst (a poll round, a report, a prune). It
 * lies well above {@link IDLE_CPU_SHARE}, so that a service polling steadily near the idle share does not
 * count its ups and downs, nor a reclaim's aftermath, as bursts.
 */
export const BUSY_CPU_SHARE = 0.2;

/**
 * When to reclaim: after an interval in which the process was idle (at most {@link IDLE_CPU_SHARE} of one
 * core), when some interval since the last reclaim was a burst (more than {@link BUSY_CPU_SHARE}) and its
 * resident memory grew by at least {@link MIN_GROWTH_BYTES} since then. Start-up counts as a burst.
 *
 * The burst is what makes it one reclaim per burst. A service that polls its devices steadily at a few
 * percent of a core (the events benchmark: 150 devices every 30 s) regrows within 10 s, after a reclaim, the
 * 16-21 MiB of heap and allocator pages its steady work needs; reclaiming each time (every 10 s, 65-230 ms
 * each) cost it 1.7 % of a core, two thirds more than its polling. What such a service holds without a
 * burst is its working set, which V8's own collector keeps in check.
 */
export class ReclaimPolicy {
  #burst = true;
  #after = 0; // resident memory after the last reclaim (none yet)

  /** A policy for checks every `intervalMs`. */
  constructor(private intervalMs: number) {}

  /** After an interval in which the process used `usedMs` of CPU and now holds `rss` bytes: reclaim now? */
  due(usedMs: number, rss: number): boolean {
    if (usedMs > BUSY_CPU_SHARE * this.intervalMs) this.#burst = true;
    if (usedMs > IDLE_CPU_SHARE * this.intervalMs) return false;
    return this.#burst && rss - this.#after >= MIN_GROWTH_BYTES;
  }

  /** A reclaim was done; the process holds `rss` bytes after it. */
  reclaimed(rss: number): void {
    this.#after = rss;
    this.#burst = false;
  }
}

/**
 * glibc's `malloc_trim(0)` (free pages of every arena back to the system), or null elsewhere; `close` unloads
 * the library (a reclaimer that stops leaves no library open).
 */
function mallocTrim(): { trim(): void; close(): void } | null {
  if (Deno.build.os !== "linux") return null;
  try {
    const libc = Deno.dlopen("libc.so.6", { malloc_trim: { parameters: ["usize"], result: "i32" } });
    return { trim: () => void libc.symbols.malloc_trim(0n), close: () => libc.close() };
  } catch {
    return null;
  }
}

/** CPU time (user and system) of this process in milliseconds. */
function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** A running reclaimer: `stop()` ends it; `reclaims` counts the reclaims so far. */
export interface IdleReclaimer {
  stop(): void;
  readonly reclaims: number;
}

/**
 * Start the reclaimer (`intervalSeconds` 0: none). Its timer does not keep the process alive. The first
 * reclaim may come one interval after start-up, which leaves start-up's garbage behind as well.
 * `alsoCollect`: another isolate's collection (PGlite's worker, `Db.reclaim`), awaited before this thread's.
 */
export function startIdleReclaimer(
  intervalSeconds: number,
  alsoCollect?: () => Promise<unknown>,
): IdleReclaimer {
  const gc = intervalSeconds > 0 ? fullGc() : null;
  let trim = intervalSeconds > 0 ? mallocTrim() : null;
  let reclaims = 0;
  if (!gc && !trim) return { stop() {}, reclaims };
  const log = logger("memory");
  const intervalMs = intervalSeconds * 1000;
  const policy = new ReclaimPolicy(intervalMs);
  let cpu = cpuMs();
  let reclaiming = false;
  const timer = setInterval(async () => {
    if (reclaiming) return;
    const rss = Deno.memoryUsage().rss;
    if (policy.due(cpuMs() - cpu, rss)) {
      reclaiming = true;
      const t0 = performance.now();
      await alsoCollect?.().catch((e) =>
        log.debug("The worker's collection failed: {error}", { error: String(e) })
      );
      gc?.();
      trim?.trim();
      reclaiming = false;
      const after = Deno.memoryUsage().rss;
      policy.reclaimed(after);
      reclaims++;
      log.debug("Idle: gave back {freed} MiB in {ms} ms (resident {rss} MiB)", {
        freed: Math.round((rss - after) / 2 ** 20),
        ms: Math.round(performance.now() - t0),
        rss: Math.round(after / 2 ** 20),
      });
    }
    cpu = cpuMs(); // the reclaim's own work does not count against the next interval
  }, intervalMs);
  Deno.unrefTimer(timer);
  return {
    stop: () => {
      clearInterval(timer);
      trim?.close();
      trim = null;
    },
    get reclaims() {
      return reclaims;
    },
  };
}
