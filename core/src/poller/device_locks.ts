import { sql } from "kysely";
import { type Db, queryWithin, type ReservedSession } from "../db/open.ts";
import { logger } from "../util/log.ts";
import { Batcher } from "../util/batcher.ts";

const log = logger("poller");

/** Advisory lock class id of per-device poll locks (the object id is a hash of the device id). */
export const DEVICE_LOCK_CLASS = 20261122;

/**
 * Advisory lock class every lease-aware instance holds (shared) on its device-lock session: a device lock
 * held by a session without it is an instance of a version before leases (docs/polling.md "Upgrading").
 */
export const LEASE_AWARE_CLASS = 20261123;

/** Close the lock session this long after the last device lock was released. */
const LINGER_MS = 2_000;
const QUERY_TIMEOUT_MS = 10_000;

/** The advisory lock object id of a device (collisions only make two devices wait for each other). */
export function deviceLockKey(deviceId: string): number {
  let h = 2166136261;
  for (const c of new TextEncoder().encode(deviceId)) h = Math.imul(h ^ c, 16777619) >>> 0;
  return h & 0x7fffffff;
}

/**
 * Per-device poll locks shared by every instance on one PostgreSQL (session advisory locks on one
 * dedicated session per instance, opened while polls run): a device is polled by one instance at a
 * time, whether by the worker or by a manual snapshot. Faults fail open: a broken lock session never
 * stops a poll, it only logs a warning.
 */
export class DeviceLocks {
  #session: Promise<ReservedSession> | null = null;
  #held = 0;
  #idle: ReturnType<typeof setTimeout> | undefined;
  #locks = new Batcher<number, boolean>((keys) => this.#batch("pg_try_advisory_lock", keys));
  #unlocks = new Batcher<number, boolean>((keys) => this.#batch("pg_advisory_unlock", keys));

  /** Locks over a reserved session of `db` (a PostgreSQL database; the session opens on first use). */
  constructor(private db: Db) {}

  /** Take the device's lock if no other instance holds it (true also when the lock session fails). */
  async tryLock(deviceId: string): Promise<boolean> {
    clearTimeout(this.#idle);
    this.#held++;
    let ok = true;
    try {
      ok = await this.#locks.run(deviceLockKey(deviceId));
    } catch (e) {
      log.warn("Per-device poll lock unavailable, polling without it: {error}", { error: String(e) });
      this.#drop();
    }
    if (!ok) this.#done();
    return ok;
  }

  /** Release a lock taken with `tryLock`. */
  async unlock(deviceId: string): Promise<void> {
    try {
      if (this.#session) await this.#unlocks.run(deviceLockKey(deviceId));
    } catch {
      this.#drop(); // ending the session releases whatever it held
    } finally {
      this.#done();
    }
  }

  /** One round trip for many keys: `fn` applied to each, answers in key order. */
  async #batch(fn: "pg_try_advisory_lock" | "pg_advisory_unlock", keys: number[]): Promise<boolean[]> {
    const session = await (this.#session ??= this.#open());
    const rows = await queryWithin<{ ok: boolean }>(
      session,
      QUERY_TIMEOUT_MS,
      `select ${fn}($1, k) as ok from unnest($2::int4[]) with ordinality as t(k, n) order by n`,
      [DEVICE_LOCK_CLASS, keys],
    );
    if (rows.length !== keys.length) throw new Error(`${fn}: ${rows.length} answers for ${keys.length} keys`);
    return rows.map((r) => r.ok === true);
  }

  /** A lock session, marked lease-aware (see {@link LEASE_AWARE_CLASS}). */
  async #open(): Promise<ReservedSession> {
    const s = await this.db.reserve();
    try {
      await queryWithin(s, QUERY_TIMEOUT_MS, "select pg_advisory_lock_shared($1, 0)", [LEASE_AWARE_CLASS]);
    } catch (e) {
      await s.release().catch(() => {});
      throw e;
    }
    return s;
  }

  /**
   * Whether the device's lock is held by an instance of a version before leases (a session not marked
   * lease-aware): only then must this instance keep off the device. A lease-aware holder (one paused past
   * its lease, say) is left to the lease's fencing.
   */
  async heldByLegacy(deviceId: string): Promise<boolean> {
    const r = await sql<{ legacy: boolean }>`select exists(select 1 from pg_locks h
      where h.locktype = 'advisory' and h.classid = ${DEVICE_LOCK_CLASS} and h.objid = ${
      deviceLockKey(deviceId)
    }
        and h.objsubid = 2 and h.granted and not exists(select 1 from pg_locks m where m.pid = h.pid
          and m.locktype = 'advisory' and m.classid = ${LEASE_AWARE_CLASS} and m.granted)) as legacy`
      .execute(this.db.kysely);
    return r.rows[0]?.legacy === true;
  }

  #done() {
    if (--this.#held > 0) return;
    const idle = setTimeout(() => this.#drop(), LINGER_MS);
    Deno.unrefTimer(idle);
    this.#idle = idle;
  }

  #drop() {
    const s = this.#session;
    this.#session = null;
    s?.then((x) => x.release()).catch(() => {});
  }

  /** Close the lock session now (its locks are released with it). */
  close(): Promise<void> {
    clearTimeout(this.#idle);
    const s = this.#session;
    this.#session = null;
    return s ? s.then((x) => x.release(), () => {}) : Promise.resolve();
  }
}
