/**
 * The online compaction of old snapshots (issue 31 point 2; migration 2026_11_25_0017 and its header). That
 * migration renamed the old table `snapshots_legacy` and writes every new snapshot to `snapshot_rows`; this
 * moves the old rows over, in bounded batches, while the service polls and serves:
 *
 * each batch is one short transaction that
 * 1. takes the single-runner lock `pg_try_advisory_xact_lock(COMPACT_LOCK_CLASS, hashtext(current_schema()))`
 *    (another runner holding it: this one stops with `busy`; two runners never move rows at once);
 * 2. locks the NEWEST `batchSize` legacy rows (`order by id desc ... for update`: a prune or a device's delete
 *    of the same rows waits, or is waited for, and a row deleted meanwhile is not copied back);
 * 3. adds the series of their (device, label) that do not exist yet with `snapshot_series_of`, which seeds the
 *    series' state (what the next insert compares with) from the newest legacy row of that (device, label).
 *    That is right exactly while the series has no row in `snapshot_rows`; it has none, because every row
 *    there references its series (a foreign key), so a series that does not exist has no compact row, and
 *    no row is ever added to `snapshots_legacy` after migration 0017, so its newest legacy row is the newest
 *    row of the series. A series that exists already keeps its state: moving older rows changes nothing of
 *    what the next insert compares with (rows move with their ids, newest first, so the newest legacy row of
 *    a series is moved first and `last_id` names it in either table);
 * 4. gives the batch's payloads written before 0017 their id (a set-based update of `id` from null to the
 *    sequence's next value only, which the payloads' immutability guard lets through);
 * 5. adds the adapter releases named by text only (rows written before migration 0015);
 * 6. inserts the rows into `snapshot_rows` with their own ids, time, run id and both flags as they are
 *    (`stable_changed` kept; the rows keep no stable hash, so the '' marker of 0015 plays no part), and
 * 7. deletes them from `snapshots_legacy` (its guard lets a legacy row go once its copy, with the same id, is
 *    in `snapshot_rows`); the insert and the delete must count the same rows or the batch is rolled back.
 *
 * Resumable by construction: what is left to move is what is in `snapshots_legacy`; a kill loses at most the
 * batch in flight (rolled back). A batch waits at most `lock_timeout` (500 ms) for a row or series lock a
 * writer holds, then gives up and is retried after a pause; so in a deadlock with a writer the batch is the
 * one that ends, unless the writer had been waiting for the batch more than 500 ms before (its own deadlock
 * check fires after 1 s): batches stay short for that reason (2000 rows: under 0.5 s at 10⁶ rows, 1.1 s at
 * 10⁷ under a load average of 22; BENCHMARKS.md 3b). A writer of a series does wait for the batch in flight that copies rows of the same
 * series: the view's insert trigger locks the series FOR UPDATE, which conflicts with the foreign-key check's
 * FOR KEY SHARE (BENCHMARKS.md 3b proposes FOR NO KEY UPDATE there).
 *
 * @module
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { logger } from "../util/log.ts";

const log = logger("snapshots", "compact");

/** Advisory lock class id of the compaction (the object id is `hashtext(current_schema())`). */
export const COMPACT_LOCK_CLASS = 20261125;

/**
 * Wait for (and hold until the transaction ends) the lock that a compaction batch and a batch of the stable
 * flags' re-mark (remark.ts) both take, so that neither changes rows under the other.
 */
export async function excludeRemark(tx: Kysely<Database>): Promise<void> {
  await sql`select pg_advisory_xact_lock(${COMPACT_LOCK_CLASS + 1}, hashtext(current_schema()))`.execute(tx);
}

/** How long a batch waits for a lock another transaction holds before it is given up (and retried). */
const LOCK_TIMEOUT = "500ms";

/** One progress report (after every batch). */
export interface CompactProgress {
  batches: number;
  /** Rows moved by this call so far. */
  moved: number;
  /** Rows still in `snapshots_legacy` (counted at start, minus those moved: a close estimate). */
  left: number;
  /** Rows moved per second since the start of this call. */
  rowsPerSecond: number;
}

export interface CompactOptions {
  /** Legacy rows per transaction (default 2000). */
  batchSize?: number;
  onProgress?: (p: CompactProgress) => void;
  /** Stop between batches once aborted (the batch in flight commits first). */
  signal?: AbortSignal;
  /** Stop after this many batches (tests of resumption). */
  maxBatches?: number;
  /** Log a progress line at most this often (default 10 s); 0: never. */
  logEveryMs?: number;
}

/** Why `compactSnapshots` returned. */
export type CompactEnd = "done" | "busy" | "stopped" | "maxBatches";

export interface CompactResult {
  end: CompactEnd;
  moved: number;
  batches: number;
  /** Rows left in `snapshots_legacy` when it returned (exact; 0 when done, -1 when busy at once: not read). */
  left: number;
  /** The longest batch transaction (the longest any lock of the compaction was held), milliseconds. */
  longestBatchMs: number;
  ms: number;
  /** Batches given up on a lock timeout or deadlock and retried. */
  retries: number;
}

const code = (e: unknown) => (e as { code?: string })?.code;
/** A lock wait given up (lock_timeout), a deadlock, or a serialization failure: retry the batch. */
const isRetryable = (e: unknown) => ["55P03", "40P01", "40001"].includes(code(e) ?? "");

/**
 * Give the emptied `snapshots_legacy`'s space back: TRUNCATE, which its guard allows once it is empty
 * (migration 0017); VACUUM would leave the file and its indexes' dead entries, which listings still walk. Skipped
 * when the table holds no page; a busy table (lock wait over 2 s) is left for the next run.
 */
async function releaseLegacySpace(db: Kysely<Database>): Promise<void> {
  try {
    await db.transaction().execute(async (tx) => {
      const { rows } = await sql<{ n: string }>`select pg_relation_size('snapshots_legacy')::text as n`
        .execute(tx);
      if (rows[0]?.n === "0") return;
      await sql`set local lock_timeout = '2s'`.execute(tx);
      await sql`truncate snapshots_legacy`.execute(tx);
      log.info("Snapshot compaction: the emptied snapshots_legacy gave back {bytes} byte(s)", {
        bytes: rows[0]?.n,
      });
    });
  } catch (e) {
    log.warn(
      "Snapshot compaction: the emptied snapshots_legacy was not truncated ({error}); the next run tries again",
      {
        error: String(e),
      },
    );
  }
}

/** Rows left in `snapshots_legacy`. */
export async function legacyRowsLeft(db: Kysely<Database>): Promise<number> {
  const r = await sql<{ n: string }>`select count(*)::text as n from snapshots_legacy`.execute(db);
  return Number(r.rows[0]!.n);
}

/**
 * Move one batch of the legacy rows below `below` (null: all): the number of rows moved (0: nothing left) and
 * the lowest id of the batch (the next batch's `below`), or null when another runner holds the lock. Rows are
 * never added to `snapshots_legacy` and go newest first, so nothing is left at or above a batch's lowest id:
 * the bound only spares each batch a walk over the index entries of the rows moved before (dead until
 * VACUUM), which made the batches slower and slower without it.
 */
async function moveBatch(
  db: Kysely<Database>,
  batchSize: number,
  below: string | null,
): Promise<{ n: number; lo: string | null } | null> {
  return await db.transaction().execute(async (tx) => {
    await sql`select set_config('lock_timeout', ${LOCK_TIMEOUT}, true)`.execute(tx);
    const lock = await sql<{ ok: boolean }>`
      select pg_try_advisory_xact_lock(${COMPACT_LOCK_CLASS}, hashtext(current_schema())) as ok`.execute(tx);
    if (!lock.rows[0]!.ok) return null;
    // One batch of the re-mark of stable flags (remark.ts) at a time with a batch here: a re-mark that nulled a
    // legacy row's flag while this batch copied it would leave the copy's stale flag behind.
    await excludeRemark(tx);
    // The batch: the newest legacy rows (below the previous batch), locked. Rows are never added to
    // snapshots_legacy, so "id >= lo" (and below the previous batch) names exactly the locked rows (less any a
    // concurrent delete took first).
    const hi = below ?? "9223372036854775807";
    const b = await sql<{ lo: string | null; n: string }>`
      select min(x.id)::text as lo, count(*)::text as n from (
        select l.id from snapshots_legacy l where l.id < ${hi}::bigint
        order by l.id desc limit ${batchSize} for update
      ) x`.execute(tx);
    const lo = b.rows[0]!.lo;
    if (lo === null) return { n: 0, lo: null };
    const range = sql`l.id >= ${lo}::bigint and l.id < ${hi}::bigint`;
    // Series first (seeded from the newest legacy row: see the module's documentation), in a fixed order.
    await sql`
      select (snapshot_series_of(x.device_id, x.endpoint_label)).id from (
        select distinct l.device_id, l.endpoint_label from snapshots_legacy l
        where ${range}
          and not exists (select 1 from snapshot_series s
            where s.device_id = l.device_id and s.endpoint_label = l.endpoint_label)
      ) x order by x.device_id, x.endpoint_label`.execute(tx);
    await sql`
      update snapshot_payloads p set id = nextval('snapshot_payloads_id_seq')
      where p.id is null and p.sha256 in (
        select distinct l.payload_sha256 from snapshots_legacy l where ${range}
      )`.execute(tx);
    await sql`
      insert into adapter_releases (module, version)
      select distinct l.adapter_module, l.adapter_version from snapshots_legacy l
      where ${range} and l.adapter_release_id is null
      order by 1, 2
      on conflict (module, version) do nothing`.execute(tx);
    const ins = await sql`
      insert into snapshot_rows (id, collected_at, payload_id, series_id, release_id, payload_changed,
        stable_changed, test_run_execution_id)
      select l.id, l.collected_at, p.id, s.id, coalesce(l.adapter_release_id, a.id), l.payload_changed,
        l.stable_changed, l.test_run_execution_id
      from snapshots_legacy l
        join snapshot_series s on s.device_id = l.device_id and s.endpoint_label = l.endpoint_label
        join snapshot_payloads p on p.sha256 = l.payload_sha256
        left join adapter_releases a on l.adapter_release_id is null
          and a.module = l.adapter_module and a.version = l.adapter_version
      where ${range}`.execute(tx);
    const del = await sql`delete from snapshots_legacy l where ${range}`.execute(tx);
    const inserted = Number(ins.numAffectedRows ?? 0n);
    const deleted = Number(del.numAffectedRows ?? 0n);
    if (inserted !== deleted) {
      throw new Error(
        `snapshot compaction: copied ${inserted} row(s) but ${deleted} left snapshots_legacy above id ${lo}`,
      );
    }
    return { n: deleted, lo };
  });
}

/**
 * Move every row of `snapshots_legacy` into `snapshot_rows`, newest first, one bounded transaction per
 * batch (see the module's documentation). Returns when nothing is left (`done`), when another runner holds
 * the lock (`busy`), when `signal` is aborted (`stopped`) or after `maxBatches`.
 *
 * @example
 * ```ts
 * import type { Kysely } from "kysely";
 * import type { Database } from "../db/schema.ts";
 * // The values a caller has; the example type-checks (deno check --doc) and is not run.
 * async function example(db: Kysely<Database>) {
 *   const r = await compactSnapshots(db, { batchSize: 5000 });
 *   console.log(r.end, r.moved, r.left);
 * }
 * ```
 */
export async function compactSnapshots(
  db: Kysely<Database>,
  opts: CompactOptions = {},
): Promise<CompactResult> {
  const batchSize = opts.batchSize ?? 2000;
  const logEvery = opts.logEveryMs ?? 10_000;
  const t0 = performance.now();
  // Counted after the first batch (a runner that finds the lock taken returns without reading the table).
  let atStart: number | null = null;
  let below: string | null = null;
  let moved = 0, batches = 0, longest = 0, retries = 0, lastLog = t0;
  let end: CompactEnd = "done";
  const rate = () => Math.round(moved / Math.max((performance.now() - t0) / 1000, 0.001));
  for (;;) {
    if (opts.signal?.aborted) {
      end = "stopped";
      break;
    }
    if (opts.maxBatches !== undefined && batches >= opts.maxBatches) {
      end = "maxBatches";
      break;
    }
    const s = performance.now();
    let b: { n: number; lo: string | null } | null;
    try {
      b = await moveBatch(db, batchSize, below);
    } catch (e) {
      if (!isRetryable(e) || retries >= 1000) throw e;
      retries++;
      log.debug("Compaction batch gave way to a writer ({error}); retrying", { error: String(e) });
      await new Promise((r) => setTimeout(r, 50 + Math.random() * 200));
      continue;
    }
    if (b === null) {
      end = "busy";
      break;
    }
    if (b.lo === null) break;
    const n = b.n;
    below = b.lo;
    longest = Math.max(longest, performance.now() - s);
    moved += n;
    batches++;
    atStart ??= n + await legacyRowsLeft(db);
    const progress = { batches, moved, left: Math.max(atStart - moved, 0), rowsPerSecond: rate() };
    opts.onProgress?.(progress);
    if (logEvery > 0 && performance.now() - lastLog >= logEvery) {
      lastLog = performance.now();
      log.info(
        "Snapshot compaction: {moved} row(s) moved, about {left} left, {rowsPerSecond} rows/s",
        progress,
      );
    }
  }
  if (end === "done") await releaseLegacySpace(db);
  const left = end === "done" ? 0 : end === "busy" && moved === 0 ? -1 : await legacyRowsLeft(db);
  const ms = Math.round(performance.now() - t0);
  if (moved > 0 || end === "busy") {
    log.info(
      "Snapshot compaction {end}: {moved} row(s) moved in {batches} batch(es), {left} left, {rowsPerSecond} rows/s, longest batch {longestBatchMs} ms",
      { end, moved, batches, left, rowsPerSecond: rate(), longestBatchMs: Math.round(longest) },
    );
  }
  return { end, moved, batches, left, longestBatchMs: Math.round(longest), ms, retries };
}
