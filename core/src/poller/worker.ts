import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import type { Db, ReservedSession } from "../db/open.ts";
import type { Metrics } from "./metrics.ts";
import { LostLockError, type PollService, type WriteGuard } from "./cycle.ts";
import { logger } from "../log.ts";

const log = logger("poller");

/** Advisory lock class id of the poller (the object id is derived from the schema name). */
export const POLL_LOCK_CLASS = 20261121;

function schemaHash(s: string): number {
  let h = 2166136261;
  for (const c of new TextEncoder().encode(s)) h = Math.imul(h ^ c, 16777619) >>> 0;
  return h & 0x7fffffff;
}

export interface WorkerOptions {
  scanSeconds: number;
  concurrency: number;
}

/**
 * The polling worker: a scan every `scanSeconds` selects due devices and polls them with bounded
 * concurrency. On PostgreSQL only the holder of an advisory lock (held on a dedicated session) polls;
 * the holder keeps it, the others retry every scan, so a killed holder is replaced within one scan.
 */
export class PollWorker {
  #timer: ReturnType<typeof setTimeout> | undefined;
  #reserved: ReservedSession | null = null;
  #lockKey = 0;
  #queue: string[] = [];
  #active = 0;
  #stopping = false;
  #selecting = false;
  #abort = new AbortController();
  scans = 0;
  overruns = 0;

  constructor(
    private db: Db,
    private poller: PollService,
    private metrics: Metrics,
    private opts: WorkerOptions,
  ) {}

  get holdsLock(): boolean {
    return this.db.kind === "pglite" || this.#reserved !== null;
  }

  async start(): Promise<void> {
    if (this.db.kind === "postgres") {
      const [{ s }] = (await sql<{ s: string }>`select current_schema() as s`.execute(this.db.kysely)).rows;
      this.#lockKey = schemaHash(s);
    }
    log.info("Polling worker started: scan every {scan} s, concurrency {concurrency}", {
      scan: this.opts.scanSeconds,
      concurrency: this.opts.concurrency,
    });
    this.#tick();
  }

  #tick() {
    if (this.#stopping) return;
    this.#timer = setTimeout(() => this.#tick(), this.opts.scanSeconds * 1000);
    if (this.#queue.length) {
      // due devices from an earlier scan have not even started: an overrun
      this.metrics.overruns.inc();
      this.overruns++;
      log.warn(
        "Poll overrun: {queued} due device(s) from the previous scan not started yet, {active} polling",
        {
          queued: this.#queue.length,
          active: this.#active,
        },
      );
    }
    if (this.#selecting) return;
    this.scan().catch((e) => log.error("Scan failed: {error}", { error: String(e) }));
  }

  /**
   * One scan: take or confirm the lock, select due devices (not already polling or queued), poll them.
   * Resolves when the devices this scan started are done. Scans may overlap: a hung device never holds
   * up the next scan, and a device is never polled twice at once.
   */
  async scan(): Promise<void> {
    const t0 = performance.now();
    this.#selecting = true;
    let fresh: string[] = [];
    try {
      if (!(await this.#ensureLock())) return;
      const due = await dueDevices(this.db.kysely);
      fresh = due.filter((id) => !this.poller.isPolling(id) && !this.#queue.includes(id));
      this.#queue.push(...fresh);
      this.scans++;
    } finally {
      this.#selecting = false;
    }
    if (fresh.length) log.debug("Scan: {n} due device(s)", { n: fresh.length });
    await this.#pump();
    this.metrics.scanDuration.observe((performance.now() - t0) / 1000);
  }

  async #pump(): Promise<void> {
    const workers: Promise<void>[] = [];
    const guard = this.#guard();
    while (this.#queue.length && this.#active < this.opts.concurrency && !this.#stopping) {
      this.#active++;
      workers.push((async () => {
        try {
          while (this.#queue.length && !this.#stopping) {
            const id = this.#queue.shift()!;
            try {
              await this.poller.poll(id, { guard, signal: this.#abort.signal });
            } catch (e) {
              if (e instanceof LostLockError) {
                this.#lostLock();
                this.#queue.length = 0;
              } else if ((e as { status?: number }).status !== 404) {
                log.error("Poll of device {id} failed: {error}", { id, error: String(e) });
              }
            }
          }
        } finally {
          this.#active--;
        }
      })());
    }
    await Promise.all(workers);
  }

  #guard(): WriteGuard | undefined {
    if (this.db.kind === "pglite") return undefined;
    const pid = this.#reserved?.pid;
    const key = this.#lockKey;
    return async (tx: Kysely<Database>) => {
      if (pid === undefined) return false;
      const r = await sql<{ held: boolean }>`select exists(select 1 from pg_locks where locktype = 'advisory'
        and classid = ${POLL_LOCK_CLASS} and objid = ${key} and objsubid = 2 and pid = ${pid} and granted) as held`
        .execute(tx);
      return r.rows[0]?.held === true;
    };
  }

  async #ensureLock(): Promise<boolean> {
    if (this.db.kind === "pglite") {
      this.metrics.lockHeld.set(1);
      return true;
    }
    if (this.#reserved) {
      try {
        await this.#reserved.query("select 1");
        return true;
      } catch {
        this.#lostLock();
      }
    }
    let r: ReservedSession | null = null;
    try {
      r = await this.db.reserve();
      const [{ ok }] = await r.query<{ ok: boolean }>("select pg_try_advisory_lock($1, $2) as ok", [
        POLL_LOCK_CLASS,
        this.#lockKey,
      ]);
      if (ok) {
        this.#reserved = r;
        this.metrics.lockHeld.set(1);
        log.info("Took the poll lock (session {pid})", { pid: r.pid });
        return true;
      }
      await r.release();
    } catch (e) {
      log.warn("Could not try the poll lock: {error}", { error: String(e) });
      await r?.release().catch(() => {});
    }
    this.metrics.lockHeld.set(0);
    return false;
  }

  #lostLock() {
    if (!this.#reserved) return;
    log.warn("Lost the poll lock; no poll results are written until it is taken again");
    const r = this.#reserved;
    this.#reserved = null;
    this.metrics.lockHeld.set(0);
    r.release().catch(() => {});
  }

  /** Stop scanning, let running polls finish within `graceMs`, then release the lock. */
  async stop(graceMs: number): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#timer);
    this.#queue.length = 0;
    const drained = this.poller.drain();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = await Promise.race([
      drained.then(() => false),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      log.warn("Shutdown grace period over; cancelling {n} running poll(s)", {
        n: this.poller.inflightCount,
      });
      this.#abort.abort();
      await drained;
    }
    if (this.#reserved) {
      await this.#reserved.query("select pg_advisory_unlock($1, $2)", [POLL_LOCK_CLASS, this.#lockKey])
        .catch(() => {});
      await this.#reserved.release().catch(() => {});
      this.#reserved = null;
    }
    this.metrics.lockHeld.set(0);
  }
}

/** Ids of enabled devices that are due: never polled, or last poll + interval earlier than now. */
export async function dueDevices(db: Kysely<Database>, limit = 100_000): Promise<string[]> {
  const rows = await db.selectFrom("devices").select("id")
    .where("enabled", "=", true)
    .where((eb) =>
      eb.or([
        eb("last_poll_at", "is", null),
        eb(sql`last_poll_at + poll_interval_seconds * interval '1 second'`, "<", sql`now()`),
      ])
    )
    .orderBy(sql`last_poll_at nulls first`).limit(limit).execute();
  return rows.map((r) => r.id);
}
