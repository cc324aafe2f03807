/**
 * Re-marking stable flags in the background (issue 34 point 6, migration 2026_11_25_0018). When an adapter
 * drops a volatile path, `reconcilePatternSets` (stable.ts) records at start-up, without reading a snapshot,
 * that the vendor and label's rows below an id are not re-marked (`volatile_path_sets.remark_below`). Until
 * they are, the change history does not trust their `false` flags (it compares them in full, as it would an
 * unknown flag). This job walks those rows newest first in bounded batches: each `false` row is compared with
 * the row before it without the patterns in force, the flags that no longer hold are forgotten (set to null,
 * what the append-only guard allows; the history then reads and compares them), and `remark_below` is lowered
 * in the same transaction, under the set's row lock (so instances that run it at once take turns).
 *
 * @module
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import type { Registry } from "../registry.ts";
import { canonicalJson } from "../util/hash.ts";
import { patternSetKey, stripVolatile, volatileFor } from "./volatile.ts";
import { previousLateral } from "./series.ts";
import { excludeRemark } from "./compact.ts";

/**
 * A label whose older flags are not re-marked yet, as the change history reports it (read with the device in
 * changes.ts `historyStart`, from `volatile_path_sets.remark_below` and `remark_remaining`).
 */
export interface Remarking {
  endpointLabel: string;
  /** Polls of this label with a smaller snapshot id are not re-marked yet (they are compared in full). */
  belowId: string;
  /** `false` flags left to re-mark (null until the job has counted them). */
  remaining: number | null;
}

/** The `false` rows of a vendor and label below `cut`: compacted (per series) and not yet compacted (per device). */
function falseRows(vendor: string, label: string, cut: string, n: number | null) {
  const lim = n === null ? sql`` : sql`order by 1 desc limit ${n}`;
  return sql`
    (select x.* from snapshot_series se join devices d on d.id = se.device_id
      cross join lateral (select r.id, r.payload_id as pid, null::text as psha, se.id as sid,
          se.device_id as dev from snapshot_rows r
        where r.series_id = se.id and r.payload_changed and r.stable_changed is false
          and r.id < ${cut}::bigint ${lim}) x
      where d.vendor = ${vendor} and se.endpoint_label = ${label} ${lim})
    union all
    (select x.* from devices d
      cross join lateral (select l.id, null::bigint as pid, l.payload_sha256 as psha,
          (select se.id from snapshot_series se where se.device_id = d.id and se.endpoint_label = ${label}) as sid,
          l.device_id as dev from snapshots_legacy l
        where l.device_id = d.id and l.payload_changed and l.stable_changed is false
          and l.endpoint_label = ${label} and l.id < ${cut}::bigint ${lim}) x
      where d.vendor = ${vendor} ${lim})`;
}

/** What one batch did. */
export interface RemarkStep {
  vendor: string;
  label: string;
  /** Rows compared in this step. */
  compared: number;
  /** Of those, the flags forgotten (a change under the patterns in force). */
  forgotten: number;
  /** True when the label has nothing left to re-mark. */
  done: boolean;
}

/**
 * One bounded step of the re-mark of a vendor and label: at most `batch` rows, in one transaction. Null when
 * nothing is pending, or when the recorded set is not this registry's (another release of the adapter runs
 * somewhere: the instance with those patterns re-marks).
 */
export async function remarkStep(
  db: Kysely<Database>,
  registry: Registry,
  vendor: string,
  label: string,
  batch = 2_000,
): Promise<RemarkStep | null> {
  const patterns = volatileFor(registry, vendor, label);
  return await db.transaction().execute(async (tx) => {
    // Not while a compaction batch moves rows (compact.ts): its copies would keep flags this batch nulls.
    await excludeRemark(tx);
    const set = await tx.selectFrom("volatile_path_sets")
      .select(["patterns", sql<string | null>`remark_below::text`.as("below"), "remark_remaining"])
      .where("vendor", "=", vendor).where("endpoint_label", "=", label).forUpdate().executeTakeFirst();
    if (!set || set.below === null || set.patterns !== patternSetKey(patterns)) return null;
    let remaining = set.remark_remaining === null ? null : Number(set.remark_remaining);
    if (remaining === null) {
      const c = await sql<{ n: string }>`select count(*)::text as n from (${
        falseRows(vendor, label, set.below, null)
      }) u`.execute(tx);
      remaining = Number(c.rows[0]?.n ?? 0);
    }
    // Each row with its payload and the previous row's, as text, in one round trip.
    const rows = (await sql<{ id: string; payload: string; prev: string | null }>`
      select u.id::text as id, pa.payload, pb.payload as prev
      from (${falseRows(vendor, label, set.below, batch)} order by 1 desc limit ${batch}) u
      left join lateral ${
      previousLateral(sql`u.sid`, sql`u.dev`, sql`${label}::text`, sql`u.id`)
    } prev on true
      join snapshot_payloads pa on pa.sha256 = coalesce(u.psha,
        (select p.sha256 from snapshot_payloads p where p.id = u.pid))
      left join snapshot_payloads pb on pb.sha256 = prev.sha
      order by u.id desc`.execute(tx)).rows;
    const canon = new Map<string, string>();
    const stripped = (text: string) => {
      let c = canon.get(text);
      if (c === undefined) canon.set(text, c = canonicalJson(stripVolatile(JSON.parse(text), patterns)));
      return c;
    };
    const forget = rows.filter((r) => r.prev === null || stripped(r.payload) !== stripped(r.prev))
      .map((r) => r.id);
    if (forget.length) {
      await sql`update snapshot_rows set stable_changed = null where id = any(${forget}::bigint[])`.execute(
        tx,
      );
      await sql`update snapshots_legacy set stable_changed = null where id = any(${forget}::bigint[])`
        .execute(tx);
    }
    const done = rows.length < batch;
    remaining = done ? 0 : Math.max(0, remaining - rows.length);
    await tx.updateTable("volatile_path_sets")
      .set({
        remark_below: done ? null : rows.at(-1)!.id, // not done: the batch is full
        remark_remaining: done ? null : String(remaining),
      })
      .where("vendor", "=", vendor).where("endpoint_label", "=", label).execute();
    return { vendor, label, compared: rows.length, forgotten: forget.length, done };
  });
}

/** Re-mark every pending vendor and label of this registry to the end; resolves with the totals per label. */
export async function remarkAll(
  db: Kysely<Database>,
  registry: Registry,
  opts: { batch?: number; signal?: AbortSignal; pauseMs?: number } = {},
): Promise<RemarkStep[]> {
  const pending = await db.selectFrom("volatile_path_sets").select(["vendor", "endpoint_label"])
    .where("remark_below", "is not", null).orderBy("vendor").orderBy("endpoint_label").execute();
  const out: RemarkStep[] = [];
  for (const { vendor, endpoint_label: label } of pending) {
    const total: RemarkStep = { vendor, label, compared: 0, forgotten: 0, done: false };
    while (!opts.signal?.aborted) {
      const s = await remarkStep(db, registry, vendor, label, opts.batch);
      if (!s) break;
      total.compared += s.compared;
      total.forgotten += s.forgotten;
      if ((total.done = s.done)) break;
      // Between batches, let polls and requests run.
      if (opts.pauseMs) await new Promise((r) => setTimeout(r, opts.pauseMs));
    }
    out.push(total);
  }
  return out;
}
