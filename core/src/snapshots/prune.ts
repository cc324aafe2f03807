/**
 * Pruning of old snapshots by an operator (spec 8, issue 31; docs/data.md "Pruning snapshots"). Never automatic.
 *
 * Of the snapshots collected before the cut-off (`olderThanDays` days ago, rounded down to the hour or day of
 * `keepOnePer`, in UTC) a prune keeps:
 * - every snapshot cited anywhere: linked to a run (`test_run_execution_id`), named by a run's alert, or named
 *   (`snapshotId`, `startSnapshotId`, …) in a run's start state, pre-flight result or report annexes (the
 *   inventory, the pre-flight evidence, the linked snapshots, the drift diffs);
 * - every snapshot a run's evidence bundle reads by time: of each device of its lab and each label, the last
 *   one at or before its pre-flight, its start and its end (the inferred and the drift's reads; an active
 *   run: of every device, at its start), so that each finished run's bundle still replays;
 * - every real change (`payload_changed` and `stable_changed` not false: a change, or one not known to be
 *   volatile-only) and the snapshot just before it;
 * - the newest snapshot of each device and label;
 * - the first snapshot of each device, label and hour (or day);
 * and deletes the rest, then the payloads that no snapshot refers to any more (and that no run cites).
 *
 * Every decision reads only the snapshot, the one after it and the one before it in its device and label, in
 * a way that deleting others never changes (the one before a deleted snapshot is in the same hour or day), so
 * the work goes in bounded batches of ids, each its own short transaction, and a dry run reading the same
 * batches counts exactly what the prune deletes. Progress lives in `snapshot_prunes` (the audit record):
 * a prune killed halfway is resumed from its last committed batch by the next prune request.
 *
 * The narrow layout (migration 2026_11_25_0017): the prune walks `snapshot_rows` by id range, finds each
 * row's neighbours in that one walk (the range's edges by `snapshot_rows_series_id (series_id, id)`), and
 * deletes from `snapshot_rows` directly.
 * Rows still in `snapshots_legacy` (not yet moved by the compaction) are never deleted: a later prune, once
 * they are compacted, decides them. A row whose neighbour, after or before it in its device and label, is such
 * a legacy row (a legacy row lies between the row's neighbours in `snapshot_rows`, both included: the row or
 * a neighbour may be one being moved, in both tables for a moment) is kept too, since its decision would
 * need that row. So every deleted row's neighbours are rows of
 * `snapshot_rows`, which the argument above covers, and the dry run still counts what the prune deletes
 * (if the compaction moves rows in between, they may both change, as with polls). A payload is freed when no
 * row of `snapshot_rows` (`snapshot_rows_payload`) nor of `snapshots_legacy` refers to it and no run cites it.
 * `snapshotBytes` is `pg_column_size` of the deleted `snapshot_rows` row (heap tuple data, 32 B a row).
 *
 * @module
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { jsonValue } from "../db/json.ts";
import { ConflictError } from "../errors.ts";
import { citedSnapshots } from "./cited.ts";
import { type RowOf, SeriesNames, Tally } from "./prune_tally.ts";

export { type Citations, citedSnapshots } from "./cited.ts";
export { listPrunes, type PruneRecord } from "./prune_records.ts";
export type { PruneCount, PrunePolicy } from "./prune_types.ts";
import type { PruneCount, PrunePolicy } from "./prune_types.ts";

/** The answer of a prune or dry run (also the audit record's content). */
export interface PruneResult {
  /** The `snapshot_prunes` row; null for a dry run. */
  pruneId: string | null;
  dryRun: boolean;
  /** True when this request finished a prune that an earlier, interrupted request had started. */
  resumed: boolean;
  actor: string;
  policy: PrunePolicy;
  /** Snapshots collected before this instant were considered. */
  cutoff: string;
  snapshots: number;
  snapshotBytes: number;
  payloads: number;
  payloadBytes: number;
  /** `snapshotBytes + payloadBytes`. */
  bytes: number;
  /** Per device and label, sorted by device id then label; only those with something deleted. */
  counts: PruneCount[];
  batches: number;
  /** The longest batch transaction (the longest any row lock of the prune was held), milliseconds. */
  longestBatchMs: number;
}

/** One line of progress (every batch). */
export interface PruneProgress {
  batches: number;
  cursorId: string;
  endId: string;
  snapshots: number;
}

export interface PruneOptions extends PrunePolicy {
  dryRun: boolean;
  /** Who asked (a token's name, or `cli:<user>`); recorded. */
  actor: string;
  /** Snapshot ids per batch (default 2000). */
  batchSize?: number;
  /** A running prune whose heartbeat is older than this is taken over and finished (default 120 s). */
  staleAfterMs?: number;
  onProgress?: (p: PruneProgress) => void;
  /**
   * Prune as if it were this instant: the cut-off is `olderThanDays` before it (default: the database's
   * `now()`). For tests of what a prune keeps of a lab that cannot be back-dated (a finished run's signed
   * report fixes its times), and for planning; the routes and the command always use `now()`.
   */
  asOf?: Date;
  /** Stop after this many batches, leaving the prune running (tests of resumption). */
  stopAfterBatches?: number;
}

/**
 * A row's columns that a decision reads, and its size (`pg_column_size`); `real`: a real change (or one not
 * known to be volatile-only).
 */
const COLUMNS = (t: string) =>
  sql.raw(`${t}.id, ${t}.series_id, ${t}.payload_id, ${t}.collected_at, ${t}.test_run_execution_id,
    (${t}.payload_changed and ${t}.stable_changed is not false) as real, pg_column_size(${t}.*) as bytes`);

/**
 * The rows of `snapshot_rows` with ids in (lo, hi] that the policy deletes (see the module's documentation),
 * as `from … where …` over `r` (the row with its neighbours' `p_id`, `p_at`, `n_id`, `n_real`, and `bytes`;
 * its series' device and label are read once per series, by {@link SeriesNames}: `snapshot_series` takes an
 * update per insert and a per-row join of it is slow). The neighbours come from one walk of the range: its rows,
 * and of each series in it the row just before and just after the range (by `snapshot_rows_series_id`),
 * ordered by series and id, `lag` and `lead` giving each row the one before and after it in its series (two
 * index look-ups per row cost twice as much). `legacy`: whether `snapshots_legacy` may still hold rows, whose
 * neighbours are then kept.
 */
function candidates(
  lo: string,
  hi: string,
  cutoff: Date,
  unit: "hour" | "day",
  keep: string[],
  legacy: boolean,
) {
  const legacyNeighbour = legacy
    ? sql`and not exists (select 1 from snapshot_series se join snapshots_legacy l
          on l.device_id = se.device_id and l.endpoint_label = se.endpoint_label
        where se.id = r.series_id
          and l.id >= r.p_id and l.id <= r.n_id)`
    : sql``;
  return sql`
    from (
      select w.*, lag(w.id) over s as p_id, lag(w.collected_at) over s as p_at,
        lead(w.id) over s as n_id, lead(w.real) over s as n_real
      from (
        with b as (select ${COLUMNS("x")} from snapshot_rows x
          where x.id > ${lo}::bigint and x.id <= ${hi}::bigint)
        select * from b
        union all
        select e.* from (select distinct b.series_id from b) q cross join lateral (
          (select ${COLUMNS("p")} from snapshot_rows p
            where p.series_id = q.series_id and p.id <= ${lo}::bigint order by p.id desc limit 1)
          union all
          (select ${COLUMNS("n")} from snapshot_rows n
            where n.series_id = q.series_id and n.id > ${hi}::bigint order by n.id limit 1)
        ) e
      ) w
      window s as (partition by w.series_id order by w.id)
    ) r
    where r.id > ${lo}::bigint and r.id <= ${hi}::bigint
      and r.collected_at < ${cutoff}
      and r.test_run_execution_id is null
      and not (r.id = any(${keep}::bigint[]))
      and not r.real
      and not r.n_real
      and date_trunc(${unit}, r.p_at, 'UTC') = date_trunc(${unit}, r.collected_at, 'UTC')
      ${legacyNeighbour}`;
}

const isForeignKeyViolation = (e: unknown) => (e as { code?: string })?.code === "23503";

/**
 * Run a prune (or a dry run) to its end. A running prune left by a dead process (heartbeat older than
 * `staleAfterMs`) is resumed first, with its own policy, and its result returned with `resumed: true`; a live
 * one is a {@link ConflictError}.
 *
 * @example
 * ```ts
 * import type { Kysely } from "kysely";
 * import type { Database } from "../db/schema.ts";
 * // The values a caller has; the example type-checks (deno check --doc) and is not run.
 * async function example(db: Kysely<Database>) {
 *   const plan = await pruneSnapshots(db, { olderThanDays: 30, keepOnePer: "hour", dryRun: true, actor: "ops" });
 *   console.log(plan.snapshots, plan.bytes);
 * }
 * ```
 */
export async function pruneSnapshots(db: Kysely<Database>, opts: PruneOptions): Promise<PruneResult> {
  const batchSize = opts.batchSize ?? 2000;
  const t0 = await sql<{ cutoff: Date | string; end_id: string; legacy: boolean }>`
    select date_trunc(
        ${opts.keepOnePer},
        coalesce(${
    opts.asOf ?? null
  }::timestamptz, now()) - make_interval(days => ${opts.olderThanDays}::int),
        'UTC'
      )
      as cutoff,
      greatest(coalesce((select max(id) from snapshot_rows), 0), coalesce((select max(id) from snapshots_legacy), 0))
        ::text as end_id,
      exists (select 1 from snapshots_legacy) as legacy`.execute(db);
  // Legacy rows are only ever moved out (migration 0017): none at the start, none during the prune.
  const legacy = t0.rows[0]!.legacy;
  const start = await startPrune(db, opts, {
    cutoff: new Date(t0.rows[0]!.cutoff),
    endId: t0.rows[0]!.end_id,
    policy: { olderThanDays: opts.olderThanDays, keepOnePer: opts.keepOnePer },
    actor: opts.actor,
    cursor: "0",
    resumed: false,
    pruneId: null,
    tally: new Tally(),
    batches: 0,
  });
  const { cutoff, endId, policy, actor, resumed, pruneId } = start;
  let { cursor, tally, batches } = start;

  const cited = await citedSnapshots(db);
  const keepIds = [...cited.ids].map(BigInt).sort((a, b) => a < b ? -1 : a > b ? 1 : 0);
  const keepIn = (lo: bigint, hi: bigint) => keepIds.filter((id) => id > lo && id <= hi).map(String);
  const citedHashes = [...cited.hashes];
  /** Dry run: per payload id of a deleted row, how many of its rows would go. */
  const wouldGo = new Map<string, number>();
  const names = new SeriesNames();
  await names.load(db);
  let longest = 0;

  while (BigInt(cursor) < BigInt(endId)) {
    if (opts.stopAfterBatches !== undefined && batches >= opts.stopAfterBatches) break;
    const lo = cursor;
    const hi = String(
      BigInt(lo) + BigInt(batchSize) < BigInt(endId) ? BigInt(lo) + BigInt(batchSize) : BigInt(endId),
    );
    const keep = keepIn(BigInt(lo), BigInt(hi));
    const where = candidates(lo, hi, cutoff, policy.keepOnePer, keep, legacy);
    const started = performance.now();
    if (opts.dryRun) {
      const rows = (await sql<RowOf>`
        select r.series_id::text as series_id, r.payload_id::text as payload_id, r.bytes
        ${where}`.execute(db)).rows;
      tally.add(await names.of(db, rows));
      for (const r of rows) wouldGo.set(r.payload_id, (wouldGo.get(r.payload_id) ?? 0) + 1);
    } else {
      tally = await deleteBatch(db, { where, pruneId: pruneId!, hi, batches, citedHashes, names }, tally);
    }
    longest = Math.max(longest, performance.now() - started);
    cursor = hi;
    batches++;
    opts.onProgress?.({ batches, cursorId: cursor, endId, snapshots: tally.snapshots });
    // Let queries waiting for the connection go first (PGlite has one session: without this pause the next
    // batch takes it again at once, and polls and API calls wait for the whole prune).
    await new Promise((r) => setTimeout(r, 1));
  }

  if (opts.dryRun && wouldGo.size) await countFreedPayloads(db, wouldGo, cited.hashes, tally);
  const finished = BigInt(cursor) >= BigInt(endId);
  if (!opts.dryRun && finished) {
    await db.updateTable("snapshot_prunes").set({
      status: "finished",
      finished_at: sql<Date>`now()`,
      heartbeat_at: sql<Date>`now()`,
      batches,
      cursor_id: cursor,
    }).where("id", "=", pruneId!).execute();
  }
  return {
    pruneId,
    dryRun: opts.dryRun,
    resumed,
    actor,
    policy,
    cutoff: cutoff.toISOString(),
    snapshots: tally.snapshots,
    snapshotBytes: tally.snapshotBytes,
    payloads: tally.payloads,
    payloadBytes: tally.payloadBytes,
    bytes: tally.snapshotBytes + tally.payloadBytes,
    counts: tally.counts(),
    batches,
    longestBatchMs: Math.round(longest),
  };
}

/** Where a prune stands: the policy and bounds it works under, its cursor and what it deleted so far. */
interface PruneState {
  cutoff: Date;
  endId: string;
  policy: PrunePolicy;
  actor: string;
  cursor: string;
  resumed: boolean;
  pruneId: string | null;
  tally: Tally;
  batches: number;
}

/**
 * A prune's start: a dry run starts `fresh`; a real one records itself as running, or resumes the running
 * prune whose heartbeat is older than `staleAfterMs` (a live one is a 409).
 */
async function startPrune(db: Kysely<Database>, opts: PruneOptions, fresh: PruneState): Promise<PruneState> {
  if (opts.dryRun) return fresh;
  const running = await db.selectFrom("snapshot_prunes").selectAll()
    .select(sql<number>`extract(epoch from now() - heartbeat_at) * 1000`.as("idle_ms"))
    .where("status", "=", "running").executeTakeFirst();
  if (running) {
    if (Number(running.idle_ms) < (opts.staleAfterMs ?? 120_000)) {
      throw new ConflictError(
        `Prune ${running.id} (by "${running.actor}") is running; try again when it ends`,
        {
          extra: { pruneId: String(running.id) },
        },
      );
    }
    const tally = new Tally(jsonValue<PruneCount[]>(running.counts));
    tally.snapshots = Number(running.deleted_snapshots);
    tally.snapshotBytes = Number(running.snapshot_bytes);
    tally.payloads = Number(running.freed_payloads);
    tally.payloadBytes = Number(running.freed_payload_bytes);
    return {
      resumed: true,
      pruneId: String(running.id),
      policy: jsonValue<PrunePolicy>(running.policy),
      actor: running.actor,
      cutoff: new Date(running.cutoff),
      endId: String(running.end_id),
      cursor: String(running.cursor_id),
      batches: running.batches,
      tally,
    };
  }
  try {
    const row = await db.insertInto("snapshot_prunes").values({
      actor: fresh.actor,
      policy: JSON.stringify(fresh.policy),
      cutoff: fresh.cutoff,
      end_id: fresh.endId,
      status: "running",
      // Written, not left to the column's default: a prune that deletes nothing keeps this list.
      counts: JSON.stringify(fresh.tally.counts()),
    }).returning(sql<string>`id::text`.as("id")).executeTakeFirstOrThrow();
    return { ...fresh, pruneId: row.id };
  } catch (e) {
    if ((e as { code?: string })?.code === "23505") {
      throw new ConflictError("Another prune started meanwhile; try again when it ends", { cause: e });
    }
    throw e;
  }
}

/** One batch of a real prune. */
interface Batch {
  /** The candidates' `from … where …` (see {@link candidates}). */
  where: ReturnType<typeof candidates>;
  pruneId: string;
  /** The batch's upper id bound, the cursor once it is done. */
  hi: string;
  /** Batches done before this one. */
  batches: number;
  citedHashes: string[];
  names: SeriesNames;
}

/**
 * Delete one batch's snapshots and the payloads it leaves unused, and record the progress, in one
 * transaction; returns the tally after it.
 */
async function deleteBatch(db: Kysely<Database>, b: Batch, tally: Tally): Promise<Tally> {
  const { where, pruneId, hi, batches, citedHashes, names } = b;
  for (let attempt = 1;; attempt++) {
    try {
      return await db.transaction().execute(async (tx) => {
        await sql`select set_config('dutlab.snapshot_prune', ${pruneId}, true)`.execute(tx);
        const rows = await names.of(
          tx,
          (await sql<RowOf>`
            delete from snapshot_rows x where x.id in (select r.id ${where})
            returning x.series_id::text as series_id, x.payload_id::text as payload_id,
              pg_column_size(x.*) as bytes`.execute(tx)).rows,
        );
        const ids = [...new Set(rows.map((r) => r.payload_id))];
        const freed = ids.length
          ? (await sql<{ size_bytes: number }>`
            delete from snapshot_payloads p
            where p.id = any(${ids}::bigint[]) and not (p.sha256 = any(${citedHashes}::text[]))
              and not exists (select 1 from snapshot_rows r where r.payload_id = p.id)
              and not exists (select 1 from snapshots_legacy l where l.payload_sha256 = p.sha256)
            returning p.size_bytes`.execute(tx)).rows
          : [];
        const next = new Tally(tally.counts());
        next.snapshots = tally.snapshots;
        next.snapshotBytes = tally.snapshotBytes;
        next.payloads = tally.payloads + freed.length;
        next.payloadBytes = tally.payloadBytes + freed.reduce((n, f) => n + Number(f.size_bytes), 0);
        next.add(rows);
        await tx.updateTable("snapshot_prunes").set({
          cursor_id: hi,
          batches: batches + 1,
          heartbeat_at: sql<Date>`now()`,
          deleted_snapshots: String(next.snapshots),
          snapshot_bytes: String(next.snapshotBytes),
          freed_payloads: String(next.payloads),
          freed_payload_bytes: String(next.payloadBytes),
          counts: JSON.stringify(next.counts()),
        }).where("id", "=", pruneId).execute();
        return next;
      });
    } catch (e) {
      // A poll re-used a payload this batch freed: the batch rolled back; run it again.
      if (isForeignKeyViolation(e) && attempt < 5) continue;
      throw e;
    }
  }
}

/**
 * Dry run: the payloads a prune would free (not cited, no legacy row naming them, and every row of
 * `snapshot_rows` naming them would go), added to `tally`. `wouldGo`: per payload id of a deleted row, how many
 * of its rows would go.
 */
async function countFreedPayloads(
  db: Kysely<Database>,
  wouldGo: ReadonlyMap<string, number>,
  citedHashes: ReadonlySet<string>,
  tally: Tally,
): Promise<void> {
  const ids = [...wouldGo.keys()];
  for (let i = 0; i < ids.length; i += 1000) {
    const part = ids.slice(i, i + 1000);
    const refs = await sql<{ id: string; sha256: string; n: string; legacy: boolean; size_bytes: number }>`
      select p.id::text as id, p.sha256, (select count(*) from snapshot_rows r where r.payload_id = p.id)::text as n,
        exists (select 1 from snapshots_legacy l where l.payload_sha256 = p.sha256) as legacy, p.size_bytes
      from snapshot_payloads p where p.id = any(${part}::bigint[])`.execute(db);
    for (const r of refs.rows) {
      if (!r.legacy && !citedHashes.has(r.sha256) && Number(r.n) === wouldGo.get(r.id)) {
        tally.payloads++;
        tally.payloadBytes += Number(r.size_bytes);
      }
    }
  }
}
