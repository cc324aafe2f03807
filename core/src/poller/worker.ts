import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { type Db, queryWithin, type ReservedSession } from "../db/open.ts";
import type { Metrics } from "./metrics.ts";
import {
  DeviceBusyError,
  LostLockError,
  PollCancelledError,
  type PollService,
  type WriteGuard,
} from "./cycle.ts";
import { logger } from "../util/log.ts";
import { NotFoundError } from "../errors.ts";

const log = logger("poller");

/** Advisory lock class id of the poller (the object id is derived from the schema name). */
export const POLL_LOCK_CLASS = 20261121;

/**
 * How long after a device's due time the scan that waits for it starts: the due rule is strict
 * (`lastPollAt + interval` earlier than now), so the scan starts just after, not at, the due time.
 */
export const WAKE_MARGIN_MS = 50;

/** Longest wait for a query on the lock session before it is given up as broken. */
const LOCK_QUERY_TIMEOUT_MS = 10_000;

/** The advisory lock object id for a schema: instances sharing a schema share the poll lock. */
export function pollLockKey(schema: string): number {
  let h = 2166136261;
  for (const c of new TextEncoder().encode(schema)) h = Math.imul(h ^ c, 16777619) >>> 0;
  return h & 0x7fffffff;
}

/** Whether `pid` holds the poll lock `key` (two-key advisory locks show as objsubid 2). */
const HELD_BY = `exists(select 1 from pg_locks where locktype = 'advisory' and classid = $1 and objid = $2
  and objsubid = 2 and granted and pid = pg_backend_pid())`;

export interface WorkerOptions {
  scanSeconds: number;
  concurrency: number;
}

/**
 * The polling worker: a scan every `scanSeconds` selects due devices and polls them with bounded
 * concurrency. On PostgreSQL only the holder of an advisory lock polls. The lock is a session lock on
 * a connection of its own; the holder keeps it while it lives, and the others try once per scan, so a
 * due device is polled by the next scan however many instances run, and a killed holder is replaced
 * within one scan. Before writing, each cycle re-checks inside its transaction that the lock is still
 * held by this instance's session; a lost lock stops all writing until the lock is taken again.
 */
export class PollWorker {
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The dedicated lock session (PostgreSQL), kept while the worker runs. */
  #session: ReservedSession | null = null;
  /** Backend pid of the session that holds the lock; null when this instance does not hold it. */
  #lockPid: number | null = null;
  #lockKey: number | null = null;
  /** Due devices selected by the latest scan and not started yet, oldest poll first. */
  #queue: string[] = [];
  #active = 0;
  #stopping = false;
  #stopped = false;
  #selecting: Promise<boolean> | null = null;
  #abort = new AbortController();
  /** Ends a tick's wait for the next due device early (stop). */
  #wake: (() => void) | null = null;
  /** Scans run while holding the lock. */
  scans = 0;
  /** Scans that found due devices of the previous scan not started yet. */
  overruns = 0;

  /** A worker polling due devices of `db` with `poller`, recording into `metrics`. */
  constructor(
    private db: Db,
    private poller: PollService,
    private metrics: Metrics,
    private opts: WorkerOptions,
  ) {}

  /** Whether this instance holds the poll lock (always, on embedded PGlite: one process by construction). */
  get holdsLock(): boolean {
    if (this.#stopped) return false;
    return this.db.kind === "pglite" || this.#lockPid !== null;
  }

  /** Start scanning: the first scan now, then one every `scanSeconds`. */
  async start(): Promise<void> {
    if (this.db.kind === "postgres") await this.#key();
    log.info("Polling worker started: scan every {scan} s, concurrency {concurrency}", {
      scan: this.opts.scanSeconds,
      concurrency: this.opts.concurrency,
    });
    this.#tick();
  }

  /**
   * A scan tick, at least `scanSeconds` after the previous scan started. When no device is due yet but one
   * becomes due within a scan period, the scan waits until that moment (plus WAKE_MARGIN_MS) instead of
   * finding it "not yet due" and leaving it to the following scan: a device polled at the end of one scan
   * with an interval equal to the scan period would otherwise be polled every two periods. The next tick
   * is timed from the scan's actual start, so scans are never more frequent than `scanSeconds`.
   */
  #tick() {
    if (this.#stopping) return;
    this.#timer = undefined;
    (async () => {
      const wait = await this.#untilDue().catch(() => 0);
      if (wait > 0 && wait < this.opts.scanSeconds * 1000) {
        await new Promise<void>((r) => {
          this.#timer = setTimeout(r, wait + WAKE_MARGIN_MS);
          this.#wake = r;
        });
        this.#wake = null;
      }
      if (this.#stopping) return;
      this.#timer = setTimeout(() => this.#tick(), this.opts.scanSeconds * 1000);
      this.#scanTick();
    })();
  }

  /**
   * Milliseconds, on the database clock, until the earliest enabled device becomes due (0 or less when one
   * is due now or was never polled).
   */
  async #untilDue(): Promise<number> {
    const r = await sql<{ ms: number | string | null; never: boolean }>`select
        extract(epoch from min(last_poll_at + poll_interval_seconds * interval '1 second') - now()) * 1000
          as ms,
        bool_or(last_poll_at is null) as never
      from devices where enabled`.execute(this.db.kysely);
    const row = r.rows[0];
    if (!row || row.never || row.ms === null) return 0;
    return Number(row.ms);
  }

  #scanTick() {
    if (this.#queue.length) {
      // due devices of the previous scan have not even started: an overrun
      this.metrics.overruns.inc();
      this.overruns++;
      log.warn(
        "Poll overrun: {queued} due device(s) from the previous scan not started yet, {active} polling",
        { queued: this.#queue.length, active: this.#active },
      );
    }
    if (this.#selecting) return;
    this.scan().catch((e) => log.error("Scan failed: {error}", { error: String(e) }));
  }

  /**
   * One scan: take or confirm the lock, re-read due devices from the database (those not polling in
   * this process), and poll them. Resolves when the polls this scan started are done. Scans may
   * overlap: a hung device never holds up the next scan, and a device is never polled twice at once.
   */
  async scan(): Promise<void> {
    const t0 = performance.now();
    if (this.#selecting || this.#stopping) return;
    this.#selecting = (async () => {
      if (!(await this.#ensureLock())) return false;
      const due = await dueDevices(this.db.kysely);
      if (this.#stopping || !this.holdsLock) return false;
      // Replace, not append: devices still waiting from an earlier scan are re-validated by this read.
      this.#queue = due.filter((id) => !this.poller.isPolling(id));
      this.scans++;
      return true;
    })();
    try {
      if (!(await this.#selecting)) return;
    } finally {
      this.#selecting = null;
    }
    if (this.#queue.length) log.debug("Scan: {n} due device(s)", { n: this.#queue.length });
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
          while (this.#queue.length && !this.#stopping && this.holdsLock) {
            const id = this.#queue.shift()!;
            if (this.poller.isPolling(id)) continue; // a manual snapshot got there first
            try {
              await this.poller.poll(id, { guard, signal: this.#abort.signal });
            } catch (e) {
              if (e instanceof LostLockError || e instanceof PollCancelledError) continue;
              if (e instanceof DeviceBusyError) { // a manual snapshot elsewhere records this poll
                log.debug("Skipped device {id}: being polled by another instance", { id });
                continue;
              }
              if (!(e instanceof NotFoundError)) { // deleted since the scan
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

  async #key(): Promise<number> {
    if (this.#lockKey === null) {
      // One row by construction, as for the lock queries below (a select without from).
      const { s } = (await sql<{ s: string }>`select current_schema() as s`.execute(this.db.kysely)).rows[0]!;
      this.#lockKey = pollLockKey(s);
    }
    return this.#lockKey;
  }

  /** Inside the write transaction: is the lock still held by the session this instance took it on? */
  #guard(): WriteGuard | undefined {
    if (this.db.kind === "pglite") return undefined;
    return async (tx: Kysely<Database>) => {
      const pid = this.#lockPid;
      if (pid === null) return false;
      const r = await sql<{ held: boolean }>`select exists(select 1 from pg_locks where locktype = 'advisory'
        and classid = ${POLL_LOCK_CLASS} and objid = ${this.#lockKey} and objsubid = 2 and pid = ${pid}
        and granted) as held`.execute(tx);
      const held = r.rows[0]?.held === true;
      if (!held && this.#lockPid === pid) this.#lostLock();
      return held;
    };
  }

  async #lockQuery<T>(text: string, params: unknown[]): Promise<T[]> {
    const kept = this.#session;
    this.#session ??= await this.db.reserve();
    try {
      return await queryWithin<T>(this.#session, LOCK_QUERY_TIMEOUT_MS, text, params);
    } catch (e) {
      if (!kept) throw e;
      // The kept session broke (database restarted, backend terminated): once more on a new session, so
      // that polling resumes in the first scan after the database is back, not the second.
      log.debug("Poll lock session lost ({error}); opening a new one", { error: String(e) });
      this.#dropSession();
      this.#session = await this.db.reserve();
      return await queryWithin<T>(this.#session, LOCK_QUERY_TIMEOUT_MS, text, params);
    }
  }

  /** Confirm the lock (the holder keeps it) or try to take it (once per scan). */
  async #ensureLock(): Promise<boolean> {
    if (this.db.kind === "pglite") {
      this.metrics.lockHeld.set(1);
      return true;
    }
    try {
      const key = [POLL_LOCK_CLASS, await this.#key()];
      // The session may have been re-established under us (a new backend holds no lock): ask it.
      const { pid, held } = (await this.#lockQuery<{ pid: number; held: boolean }>(
        `select pg_backend_pid() as pid, ${HELD_BY} as held`,
        key,
      ))[0]!;
      if (held) {
        this.#lockPid = pid;
        return true;
      }
      if (this.#lockPid !== null) this.#lostLock();
      if (this.#stopping) return false;
      const { ok } = (await this.#lockQuery<{ ok: boolean }>(
        "select pg_try_advisory_lock($1, $2) as ok",
        key,
      ))[0]!;
      if (ok) {
        this.#lockPid = pid;
        this.metrics.lockHeld.set(1);
        log.info("Took the poll lock (session {pid})", { pid });
        return true;
      }
      log.debug("The poll lock is held by another instance; trying again next scan");
    } catch (e) {
      log.warn("Could not check the poll lock: {error}", { error: String(e) });
      this.#lostLock();
      this.#dropSession();
    }
    this.metrics.lockHeld.set(0);
    return false;
  }

  /** Stop polling: nothing more is started or written until the lock is taken again. */
  #lostLock() {
    this.#queue = [];
    if (this.#lockPid === null) return;
    log.warn("Lost the poll lock; no poll results are written until it is taken again");
    this.#lockPid = null;
    this.metrics.lockHeld.set(0);
  }

  /** Give up a session that failed: a broken connection is never reused (a fresh one next scan). */
  #dropSession() {
    const s = this.#session;
    this.#session = null;
    s?.release().catch(() => {});
  }

  /** Stop scanning, let running polls finish within `graceMs`, then release the lock. */
  async stop(graceMs: number): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#timer);
    this.#wake?.();
    this.#queue = [];
    await this.#selecting?.catch(() => {});
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
    if (this.#session) {
      if (this.#lockPid !== null) {
        await this.#lockQuery("select pg_advisory_unlock($1, $2)", [POLL_LOCK_CLASS, this.#lockKey])
          .catch(() => {});
        log.info("Released the poll lock");
      }
      await this.#session.release().catch(() => {});
      this.#session = null;
    }
    this.#lockPid = null;
    this.#stopped = true;
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
