import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { type Db, queryWithin, type ReservedSession } from "../db/open.ts";
import type { Metrics } from "./metrics.ts";
import type { WriteGuard } from "./cycle.ts";
import { logger } from "../util/log.ts";

const log = logger("poller");

/** Advisory lock class id of the poller (the object id is derived from the schema name). */
export const POLL_LOCK_CLASS = 20261121;

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

/** Told `true` when this instance became the leader, `false` when it lost leadership. */
export type LeadershipListener = (leader: boolean) => void;

/**
 * Leader election of the polling instances, apart from scheduling: on PostgreSQL the leader is the
 * holder of a session advisory lock on a connection of its own; it keeps the lock while it lives and the
 * others try once per `ensure()` (the worker calls it once per scan), so a killed leader is replaced
 * within one scan. `guard()` re-checks leadership inside a write transaction. On embedded PGlite this
 * instance is the leader by construction (one process). Listeners hear every change of leadership.
 */
export class PollLeader {
  /** The dedicated lock session (PostgreSQL), kept while the leader runs. */
  #session: ReservedSession | null = null;
  /** Backend pid of the session that holds the lock; null when this instance does not hold it. */
  #lockPid: number | null = null;
  #lockKey: number | null = null;
  #stopping = false;
  #stopped = false;
  #listeners = new Set<LeadershipListener>();

  constructor(private db: Db, private metrics: Metrics) {}

  /** Whether this instance leads (always, on embedded PGlite: one process by construction). */
  get isLeader(): boolean {
    if (this.#stopped) return false;
    return this.db.kind === "pglite" || this.#lockPid !== null;
  }

  /** Hear became-leader (`true`) and lost-leadership (`false`); returns the unsubscribe function. */
  subscribe(listener: LeadershipListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Prepare the election (the lock key of the current schema); taking the lock is left to `ensure()`. */
  async start(): Promise<void> {
    if (this.db.kind === "postgres") await this.#key();
    else this.metrics.lockHeld.set(1);
  }

  /** No lock is taken from now on (a stop is under way); the one held is released by `stop()`. */
  resign(): void {
    this.#stopping = true;
  }

  /** Confirm leadership (the holder keeps the lock) or try to take it once. */
  async ensure(): Promise<boolean> {
    if (this.db.kind === "pglite") {
      this.metrics.lockHeld.set(1);
      return true;
    }
    try {
      if (await this.#confirmOrTake()) return true;
    } catch (e) {
      log.warn("Could not check the poll lock: {error}", { error: String(e) });
      this.#lost();
      this.#dropSession();
    }
    this.metrics.lockHeld.set(0);
    return false;
  }

  async #confirmOrTake(): Promise<boolean> {
    const key = [POLL_LOCK_CLASS, await this.#key()];
    // The session may have been re-established under us (a new backend holds no lock): ask it.
    const { pid, held } = (await this.#lockQuery<{ pid: number; held: boolean }>(
      `select pg_backend_pid() as pid, ${HELD_BY} as held`,
      key,
    ))[0]!;
    if (held) {
      this.#lockPid = pid;
      this.metrics.lockHeld.set(1);
      return true;
    }
    if (this.#lockPid !== null) this.#lost();
    if (this.#stopping) return false;
    const { ok } =
      (await this.#lockQuery<{ ok: boolean }>("select pg_try_advisory_lock($1, $2) as ok", key))[0]!;
    if (ok) {
      this.#lockPid = pid;
      this.metrics.lockHeld.set(1);
      log.info("Took the poll lock (session {pid})", { pid });
      this.#emit(true);
      return true;
    }
    log.debug("The poll lock is held by another instance; trying again next scan");
    return false;
  }

  /** Inside the write transaction: is the lock still held by the session this instance took it on? */
  guard(): WriteGuard | undefined {
    if (this.db.kind === "pglite") return undefined;
    return async (tx: Kysely<Database>) => {
      const pid = this.#lockPid;
      if (pid === null) return false;
      const r = await sql<{ held: boolean }>`select exists(select 1 from pg_locks where locktype = 'advisory'
        and classid = ${POLL_LOCK_CLASS} and objid = ${this.#lockKey} and objsubid = 2 and pid = ${pid}
        and granted) as held`.execute(tx);
      const held = r.rows[0]?.held === true;
      if (!held && this.#lockPid === pid) this.#lost();
      return held;
    };
  }

  /** Release the lock (if held) and its session; this instance leads no more. */
  async stop(): Promise<void> {
    this.#stopping = true;
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

  async #key(): Promise<number> {
    if (this.#lockKey === null) {
      // One row by construction, as for the lock queries below (a select without from).
      const { s } = (await sql<{ s: string }>`select current_schema() as s`.execute(this.db.kysely)).rows[0]!;
      this.#lockKey = pollLockKey(s);
    }
    return this.#lockKey;
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

  /** Leadership is lost: nothing more is written until the lock is taken again. */
  #lost() {
    if (this.#lockPid === null) return;
    log.warn("Lost the poll lock; no poll results are written until it is taken again");
    this.#lockPid = null;
    this.metrics.lockHeld.set(0);
    this.#emit(false);
  }

  #emit(leader: boolean) {
    for (const l of this.#listeners) l(leader);
  }

  /** Give up a session that failed: a broken connection is never reused (a fresh one next scan). */
  #dropSession() {
    const s = this.#session;
    this.#session = null;
    s?.release().catch(() => {});
  }
}
