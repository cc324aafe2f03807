import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import type { PollStatus } from "../errors.ts";
import type { DeviceRow } from "../devices/store.ts";
import { logger } from "../util/log.ts";
import { PREPARED } from "../db/prepared.ts";
import { groupByDevice, insertSnapshots, lockDevices, updateDevices } from "./store_rows.ts";
import type { HashedSnapshot } from "./hash.ts";
import { writePayloads } from "./payloads.ts";
import { statusChangeEvents } from "./notify.ts";
import type { Foreground } from "../util/foreground.ts";

export { type HashedSnapshot, hashSnapshot } from "./hash.ts";

/** What one poll cycle writes: its status and, on success, its snapshots. */
export interface Outcome {
  /** The poll's status. */
  status: PollStatus;
  /** The poll's summary (`lastPollError`): on success what was collected (and notes), else the error. */
  error: string;
  /** The snapshots collected (empty unless the poll succeeded). */
  snapshots: HashedSnapshot[];
  /**
   * The certificate a `self-signed` device without a pin presented (trust on first use), pinned with the
   * poll's results: in the same transaction as its status, and only while the device still has no pin and
   * the same URL and TLS mode (a PATCH during the poll wins).
   */
  pinnedCertSha256?: string | null;
}

/**
 * Re-checks, inside the write transaction, that this instance may still write poll results. A guard with a
 * {@link GuardGroup} is checked together with the batch's other guards of that group, in one statement.
 */
export type WriteGuard = ((tx: Kysely<Database>) => Promise<boolean>) & { group?: GuardGroup };

/**
 * Guards that one statement checks together (the poll leases' fences, leases.ts): a batch of 64 polls costs
 * one round trip to the database instead of 64, while the transaction holds PGlite's single session.
 */
export interface GuardGroup {
  /**
   * Checks `guards` (distinct, of this group, in the device id order every writer locks devices in) inside the
   * transaction, taking the same locks in the same order as each guard alone would; one result per guard.
   */
  check(tx: Kysely<Database>, guards: WriteGuard[]): Promise<boolean[]>;
}

/** The poll lock was lost before the results were written: the cycle wrote nothing. */
export class LostLockError extends Error {
  /** `"LostLockError"`: how logs and stack traces name the error. */
  override name = "LostLockError";
}

/** What the store did with one poll's results. */
export interface Stored {
  /** The database clock at the write (the poll's `lastPollAt` and its snapshots' `collectedAt`). */
  at: Date;
  /** Payloads this write added (the rest were already stored, by content). */
  newPayloads: number;
  /** The snapshots this write stored for the poll (id and label). */
  snapshots?: Array<{ id: string; endpoint_label: string }>;
  /** The run active at the write, when snapshots were linked to one. */
  executionId?: string | null;
  /**
   * What the write hooks asked to announce for this poll once the write committed (see
   * {@link StoredBatch.announce}), in the order they asked; the poll cycle runs them after the poll's own
   * live events.
   */
  announcements?: Array<() => Promise<void>>;
}

/** One poll's write, as a {@link PollWriteHook} sees it. */
export interface StoredPoll {
  /** The polled device's row as the poll read it. */
  device: DeviceRow;
  /** The snapshots this write stored for the poll (id and label). */
  rows: Array<{ id: string; endpoint_label: string }>;
  /** What the poll collected: each label's payload (and its canonical text and hash). */
  snapshots: HashedSnapshot[];
}

/** A batch of poll results the store has just written, inside its transaction. */
export interface StoredBatch {
  /** The write transaction: what a hook writes commits or rolls back with the snapshots. */
  tx: Kysely<Database>;
  /** The database clock at the write. */
  at: Date;
  /** The run active at the write (its snapshots are linked to it), or null. */
  executionId: string | null;
  /** The polls of the batch that stored snapshots. */
  polls: StoredPoll[];
  /**
   * Announce something about a device's poll once the write has committed (a hook's live event): `publish`
   * runs after the poll's own events, and never when the transaction rolls back.
   */
  announce(deviceId: string, publish: () => Promise<void>): void;
}

/**
 * Called inside the store's transaction after a batch's snapshots are written, for features that record
 * something derived from what was stored (the runs feature registers its decrypt-alert writer). Given at
 * build time, so that the poller knows no feature; a hook that throws fails the batch like a failed insert
 * (each poll is then retried on its own).
 */
export type PollWriteHook = (batch: StoredBatch) => Promise<void>;

/** How a {@link PollStore} is built. */
export interface PollStoreOptions {
  /** Write hooks, called in this order in each transaction that stored snapshots. */
  hooks?: readonly PollWriteHook[];
  /**
   * Transactions written at once (default 1). More than one only on PostgreSQL, whose pool gives each its own
   * connection (PGlite has one session: a second transaction would only wait for the first).
   */
  writers?: number;
  /**
   * Milliseconds an idle store waits for more results before it starts a transaction (default 0: at the end of
   * the event loop's turn). On PGlite every statement costs the service's own CPU whatever it carries, so
   * larger batches pay off there (BENCHMARKS.md section 2c).
   */
  lingerMs?: number;
  /**
   * New payloads go to the database as one binary parameter of their UTF-8 bytes (node-postgres) instead of a
   * text array (default, PGlite: its binary parameters cost it more than text, BENCHMARKS.md section 2d).
   */
  binaryPayloads?: boolean;
  /**
   * PostgreSQL: `idle_in_transaction_session_timeout` of each write transaction (the poll lease's length), so
   * that a writer paused mid-transaction does not hold its devices' locks past its leases.
   */
  idleInTransactionMs?: number;
  /**
   * While the API answers requests (`foreground.busy`), an idle store waits up to `busyLingerMs` (instead of
   * `lingerMs`) for more results of scheduled polls, so that a scan commits a few larger batches and the
   * device list's answers are rebuilt less often (docs/polling.md "The API comes first"). A manual snapshot's
   * result is written at once.
   */
  foreground?: Foreground;
  busyLingerMs?: number;
  /**
   * With `foreground`: results that arrive while a batch is written wait `busyLingerMs` too, instead of being
   * written right after it, so that the reads its commit made stale go first. Only for a database off the
   * event loop (PGlite in a worker), whose one session those reads would wait for; in the main thread, the
   * larger batches it makes would block the API longer (BENCHMARKS.md section 7x).
   */
  lingerAfterBatch?: boolean;
}

interface Job {
  row: DeviceRow;
  module: { name: string; version: string } | null;
  outcome: Outcome;
  guard?: WriteGuard;
  /** A scheduled poll's result (may wait for others while the API is busy); a manual snapshot's is not. */
  background: boolean;
  resolve(s: Stored): void;
  reject(e: unknown): void;
}

/** At most this many polls' results go into one transaction. */
export const MAX_BATCH = 64;

/**
 * Results waiting before a further writer starts beside a busy one: fewer join the running writer's next batch.
 * A transaction costs about ten round trips whatever its size: with 16, a network-bound scan of 1,000 devices
 * wrote more, smaller transactions and spent 0.3 ms more main-thread CPU per poll; 48 starts the second writer
 * only when the writes fall behind (BENCHMARKS.md section 2c).
 */
export const PARALLEL_BATCH = 48;

const log = logger("poller");

/**
 * Group commit of poll results. Every poll's snapshots, payloads, latest-snapshot pointers and device
 * update are written in one transaction, stamped with the database clock (the due rule compares with
 * the database's `now()`, so application clocks never matter). While one transaction is being written,
 * the results of polls that finish meanwhile wait and then go together into the next one (up to
 * {@link MAX_BATCH}), with one multi-row statement per table: an idle service writes each poll at once,
 * a busy one writes a few transactions per second instead of one per poll. With `writers` above 1 (PostgreSQL),
 * a further transaction starts beside the running ones once {@link PARALLEL_BATCH} results wait: the next batch
 * is written while the previous one waits for its round trips and its commit (BENCHMARKS.md section 2c). Two
 * batches never hold the same device (a device is polled once at a time), and they take their other locks as
 * writers of different instances already do (devices and series in id order, payloads in hash order).
 *
 * Each poll still gets its own outcome: a poll whose write guard fails (the poll lock was lost) is
 * rejected with {@link LostLockError} and writes nothing while the others in the batch are written; a
 * device deleted while it was polled records nothing; when a batch fails as a whole, each poll is
 * retried in a transaction of its own so that one bad result cannot fail the others.
 */
export class PollStore {
  #pending: Job[] = [];
  /** Transactions being written now. */
  #writing = 0;
  /** A start of writers is queued for the end of this turn of the event loop. */
  #starting = false;
  /** The start a linger timer waits to run (`close()` runs it at once); the `close()` calls waiting. */
  #linger: (() => void) | null = null;
  #idle: Array<() => void> = [];
  readonly #writers: number;
  readonly #lingerMs: number;
  readonly #busyLingerMs: number;
  readonly #foreground: Foreground | null;
  readonly #lingerAfterBatch: boolean;
  readonly #binaryPayloads: boolean;
  readonly #idleMs: number | null;

  #hooks: readonly PollWriteHook[];
  /** Adapter release ids seen committed (a release never changes: migration 0017). */
  #releases = new Map<string, number>();

  /** A store writing to `db`; `opts.hooks` run inside each batch's write transaction. */
  constructor(private db: Kysely<Database>, opts: PollStoreOptions = {}) {
    this.#hooks = opts.hooks ?? [];
    this.#writers = Math.max(1, Math.floor(opts.writers ?? 1));
    this.#lingerMs = Math.max(0, opts.lingerMs ?? 0);
    this.#busyLingerMs = Math.max(this.#lingerMs, opts.busyLingerMs ?? 0);
    this.#foreground = opts.foreground ?? null;
    this.#lingerAfterBatch = opts.lingerAfterBatch ?? false;
    this.#binaryPayloads = opts.binaryPayloads ?? false;
    this.#idleMs = opts.idleInTransactionMs ?? null;
  }

  /** Transactions being written at this moment (for tests and diagnosis). */
  get writing(): number {
    return this.#writing;
  }

  /**
   * Queue one poll's results; resolves once they are committed. `background`: a scheduled poll's results,
   * which may wait for others while the API is busy (`busyLingerMs`); any other result ends such a wait.
   */
  write(
    row: DeviceRow,
    module: { name: string; version: string } | null,
    outcome: Outcome,
    guard?: WriteGuard,
    background = false,
  ): Promise<Stored> {
    return new Promise<Stored>((resolve, reject) => {
      this.#pending.push({ row, module, outcome, guard, background, resolve, reject });
      // Anything but a scheduled poll's result is written at once: it ends a lingering start.
      if (!background && this.#linger) this.#linger();
      else this.#start();
    });
  }

  /**
   * Starts writers for the waiting results: one when none runs, a further one (up to `writers`) when
   * {@link PARALLEL_BATCH} results wait. Queued as a microtask, so the polls that finish in this same turn of
   * the event loop join the batch; with `lingerMs`, an idle store waits that long for more.
   */
  #start(): void {
    // Nothing waits (a writer just finished the last batch): no start, so no linger timer runs idle.
    if (!this.#pending.length || this.#starting || this.#writing >= this.#writers) return;
    if (this.#writing > 0 && this.#pending.length < PARALLEL_BATCH) return;
    this.#starting = true;
    const linger = this.#givesWay() ? this.#busyLingerMs : this.#lingerMs;
    const start = (f: () => void) => {
      if (linger > 0 && this.#writing === 0) {
        const timer = setTimeout(f, linger);
        this.#linger = () => (clearTimeout(timer), f());
      } else queueMicrotask(f);
    };
    start(() => {
      this.#linger = null;
      this.#starting = false;
      while (
        this.#pending.length && this.#writing < this.#writers &&
        (this.#writing === 0 || this.#pending.length >= PARALLEL_BATCH)
      ) {
        this.#writing++;
        void this.#drain().finally(() => {
          this.#writing--;
          this.#start();
          this.#wakeIfIdle();
        });
      }
      this.#wakeIfIdle();
    });
  }

  /** Whether the waiting results are all scheduled polls' and the API is busy: they wait `busyLingerMs`. */
  #givesWay(): boolean {
    return this.#busyLingerMs > this.#lingerMs && this.#foreground?.busy === true &&
      this.#pending.every((j) => j.background);
  }

  /** Whether nothing waits, is queued or is being written; if so, wakes the `close()` calls waiting. */
  #wakeIfIdle(): boolean {
    const idle = this.#writing === 0 && !this.#starting && !this.#pending.length;
    if (idle) { for (const wake of this.#idle.splice(0)) wake(); }
    return idle;
  }

  /** Write what waits now (a lingering start at once); resolves once nothing is queued or written (shutdown). */
  async close(): Promise<void> {
    this.#linger?.();
    while (!this.#wakeIfIdle()) await new Promise<void>((r) => this.#idle.push(r));
  }

  /** Writes batches while results wait (one writer; the store runs up to `writers` of them). */
  async #drain(): Promise<void> {
    while (this.#pending.length) {
      const batch = this.#pending.splice(0, MAX_BATCH);
      try {
        const out = await this.#transaction(batch);
        batch.forEach((j, i) => {
          const r = out[i] ?? new Error("The batch write returned no result for this poll");
          if (r instanceof Error) j.reject(r);
          else j.resolve(r);
        });
      } catch (e) {
        if (batch.length === 1) {
          batch[0]!.reject(e);
          continue;
        }
        log.warn("Writing {n} poll results together failed ({error}); writing them one by one", {
          n: batch.length,
          error: String(e),
        });
        for (const j of batch) {
          try {
            const r = (await this.#transaction([j]))[0] ??
              new Error("The write returned no result for this poll");
            if (r instanceof Error) j.reject(r);
            else j.resolve(r);
          } catch (e1) {
            j.reject(e1);
          }
        }
      }
      // While the API is busy, scheduled polls' results that arrived during this batch wait (`busyLingerMs`)
      // rather than take the database at once: the reads this commit made stale go first.
      if (this.#lingerAfterBatch && this.#givesWay()) return;
    }
  }

  /** One transaction for the batch: per job, what it stored or the error it gets. */
  async #transaction(batch: Job[]): Promise<Array<Stored | Error>> {
    return await this.db.transaction().execute(async (tx) => {
      if (this.#idleMs !== null) {
        await sql`select set_config('idle_in_transaction_session_timeout', ${String(this.#idleMs)}, true)`
          .execute(tx);
      }
      const out: Array<Stored | Error | null> = await checkGuards(tx, batch);
      const { now } =
        (await sql<{ now: Date | string }>`select ${sql.raw(PREPARED)} now() as now`.execute(tx))
          .rows[0]!; // one row
      const at = new Date(now);
      const live = batch.map((j, i) => ({ j, i })).filter(({ i }) => out[i] === null);
      if (!live.length) return out as Array<Stored | Error>;
      const existing = await lockDevices(tx, live.map(({ j }) => j.row.id));
      const writes: Array<{ j: Job; i: number }> = [];
      for (const w of live) {
        if (existing.has(w.j.row.id)) writes.push(w);
        else out[w.i] = { at, newPayloads: 0 };
      }
      const withSnapshots = writes.filter(({ j }) => j.outcome.snapshots.length > 0);
      let newPayloads = new Map<number, number>();
      let byDevice = new Map<string, Array<{ id: string; endpoint_label: string }>>();
      let executionId: string | null = null;
      const announcements = new Map<string, Array<() => Promise<void>>>();
      const announce = (deviceId: string, publish: () => Promise<void>) => {
        let list = announcements.get(deviceId);
        if (!list) announcements.set(deviceId, list = []);
        list.push(publish);
      };
      if (withSnapshots.length) {
        // FOR SHARE: a run's finish (FOR UPDATE) waits for this commit, so its report lists these snapshots.
        const run = await tx.selectFrom("test_runs").modifyFront(sql.raw(PREPARED)).select("execution_id")
          .where("status", "=", "active").forShare().executeTakeFirst();
        executionId = run?.execution_id ?? null;
        const payloads = await writePayloads(
          tx,
          withSnapshots.map(({ j, i }) => ({ snapshots: j.outcome.snapshots, i })),
          this.#binaryPayloads,
        );
        newPayloads = payloads.added;
        const rows = await insertSnapshots(tx, withSnapshots, at, executionId, {
          payloadIds: payloads.ids,
          releases: this.#releases,
        });
        byDevice = groupByDevice(rows);
        const polls = withSnapshots.map(({ j }) => ({
          device: j.row,
          rows: byDevice.get(j.row.id) ?? [],
          snapshots: j.outcome.snapshots,
        }));
        for (const hook of this.#hooks) await hook({ tx, at, executionId, polls, announce });
      }
      await updateDevices(tx, writes.map(({ j }) => j), at);
      await statusChangeEvents(tx, writes.map(({ j }) => j));
      for (const { i, j } of writes) {
        out[i] = {
          at,
          newPayloads: newPayloads.get(i) ?? 0,
          snapshots: byDevice.get(j.row.id) ?? [],
          executionId,
          announcements: announcements.get(j.row.id) ?? [],
        };
      }
      return out as Array<Stored | Error>;
    });
  }
}

type Tx = Kysely<Database>;

/**
 * Each distinct guard (the worker's lock check) once, inside the transaction: per job, a
 * {@link LostLockError} when its guard failed, else null (still to be written).
 */
async function checkGuards(tx: Tx, batch: Job[]): Promise<Array<Stored | Error | null>> {
  const guards = new Map<WriteGuard, boolean>();
  // In device id order, the order every writer locks devices in (a guard locks its device's rows); a group's
  // guards in one statement, at its first guard's turn.
  const sorted = [...batch].sort((a, b) => a.row.id < b.row.id ? -1 : a.row.id > b.row.id ? 1 : 0);
  for (const j of sorted) {
    if (!j.guard || guards.has(j.guard)) continue;
    const group = j.guard.group;
    if (!group) {
      guards.set(j.guard, await j.guard(tx));
      continue;
    }
    const members = [
      ...new Set(sorted.map((k) => k.guard).filter((g) => g?.group === group)),
    ] as WriteGuard[];
    const ok = await group.check(tx, members);
    members.forEach((g, i) => guards.set(g, ok[i] === true));
  }
  return batch.map((j) =>
    j.guard && !guards.get(j.guard) ? new LostLockError("Poll lock lost; not writing poll results") : null
  );
}
