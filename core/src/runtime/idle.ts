/**
 * Giving memory back to the operating system while the service is idle (issue 34 point 5). A lab's service is
 * idle most of the time, yet after a burst of polls or requests its resident memory stays at the burst's
 * peak: V8 keeps the heap it grew (in BENCHMARKS.md section 7x, 133 MiB of heap holding 64 MiB of objects, of
 * which a full collection leaves 37 MiB), and glibc's allocator keeps the native pages it freed (TLS and HTTP
 * buffers of the device connections). Every `intervalSeconds` the reclaimer looks at the process: when it
 * used less than {@link IDLE_CPU_SHARE} of one core meanwhile and its resident memory grew by at least
 * {@link MIN_GROWTH_BYTES} since the last reclaim, it runs one full garbage collection and, on Linux with
 * glibc, `malloc_trim(0)`. A busy process is never interrupted; an idle one pays one collection (tens of
 * milliseconds) per burst.
 *
 * Both means are best effort and found at start: V8's `gc` is exposed at run time through `node:v8` flags and
 * read from a new `node:vm` context; `malloc_trim` is called through FFI (permitted by `-A`). Either missing
 * (another platform or libc, a narrower permission set) only leaves that half out.
 *
 * @module
 */
import v8 from "node:v8";
import vm from "node:vm";
import process from "node:process";
import { logger } from "../util/log.ts";

/** Largest share of one core the process may have used over the interval for it to count as idle. */
export const IDLE_CPU_SHARE = 0.05;
/** Growth of the resident memory since the last reclaim below which nothing is done. */
export const MIN_GROWTH_BYTES = 16 * 1024 * 1024;

/** V8's full garbage collection, or null when the runtime does not expose it. */
function fullGc(): (() => void) | null {
  try {
    v8.setFlagsFromString("--expose-gc");
    const gc: unknown = vm.runInNewContext("gc");
    return typeof gc === "function" ? () => void gc() : null;
  } catch {
    return null;
  }
}

/** glibc's `malloc_trim(0)` (free pages of every arena back to the system), or null elsewhere. */
function mallocTrim(): (() => void) | null {
  if (Deno.build.os !== "linux") return null;
  try {
    const libc = Deno.dlopen("libc.so.6", { malloc_trim: { parameters: ["usize"], result: "i32" } });
    return () => void libc.symbols.malloc_trim(0n);
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
 */
export function startIdleReclaimer(intervalSeconds: number): IdleReclaimer {
  const gc = intervalSeconds > 0 ? fullGc() : null;
  const trim = intervalSeconds > 0 ? mallocTrim() : null;
  let reclaims = 0;
  if (!gc && !trim) return { stop() {}, reclaims };
  const log = logger("memory");
  const intervalMs = intervalSeconds * 1000;
  let cpu = cpuMs();
  let after = 0; // resident memory after the last reclaim (none yet)
  const timer = setInterval(() => {
    const used = cpuMs() - cpu;
    const rss = Deno.memoryUsage().rss;
    if (used <= IDLE_CPU_SHARE * intervalMs && rss - after >= MIN_GROWTH_BYTES) {
      const t0 = performance.now();
      gc?.();
      trim?.();
      after = Deno.memoryUsage().rss;
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
    stop: () => clearInterval(timer),
    get reclaims() {
      return reclaims;
    },
  };
}
