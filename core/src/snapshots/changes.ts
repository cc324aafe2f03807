/**
 * The change history (docs/polling.md "Diffs and change history"): the polls of a device whose payload changed,
 * without the adapter's volatile paths unless asked, each with its diff against the poll before it.
 *
 * @module
 */
import { type Kysely, type RawBuilder, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import type { Registry } from "../registry.ts";
import { canonicalJson } from "../util/hash.ts";
import { decodeCursor, encodeCursor } from "../util/paging.ts";
import { diffPayloads, type PayloadDiff, type VolatileMode } from "./diff.ts";
import { stripVolatile, volatileFor } from "./volatile.ts";
import { payloadsBySha, previousLateral } from "./series.ts";
import { legacyLeft } from "./store.ts";
import type { Remarking } from "./remark.ts";
import { PREPARED } from "../db/prepared.ts";

/** One poll whose payload changed, with its diff against the poll before it. */
export interface ChangeView extends PayloadDiff {
  snapshotId: string;
  /** The poll before it (same device and label): its non-volatile payload is the previous change's. */
  previousId: string;
  endpointLabel: string;
  collectedAt: string;
  payloadSha256: string;
  previousPayloadSha256: string;
}

export interface ChangeQuery {
  label?: string;
  since?: Date;
  until?: Date;
  cursor?: string;
  limit?: number;
  volatile?: VolatileMode;
}

export interface ChangePage {
  changes: ChangeView[];
  nextCursor: string | null;
  /**
   * Labels whose stable flags are still being re-marked after their volatile paths changed (absent when
   * none): their older polls are compared in full, so the answer is the same, only slower.
   */
  remarking?: Remarking[];
}

/** Rows read per round trip while looking for changes. */
const CHUNK = 500;
/**
 * While a re-mark is pending (`remarking`), a page reads at most this many chunks and may then hold fewer than
 * `limit` changes, with a `nextCursor` (the history reads every hash change below the re-mark's cut in full).
 */
const REMARK_CHUNKS = 2;

interface Candidate {
  id: string;
  endpoint_label: string;
  payload_sha256: string;
  collected_at: Date | string;
  prev_id: string | null;
  prev_sha: string | null;
}

/**
 * The polls of a device whose payload changed (without volatile paths, unless `include`), newest first.
 * The first snapshot of a label has nothing before it and is not a change. Only polls whose payload hash
 * differs from the poll before are read: `payload_changed`, set at insert, marks them, and the partial
 * indexes `snapshot_rows_changed (series_id, id)` (and `snapshots_device_changed` for rows not yet compacted)
 * hold only them, so polls that repeat the payload cost nothing however many there are. Without volatile paths
 * (the default), polls known to have moved only volatile paths are not read either: `stable_changed` is false
 * for them, and `snapshot_rows_stable_changed` / `snapshots_device_stable_changed` hold only the rows where it
 * is true or unknown. Each series of the device is walked backwards on its index and the walks are merged by
 * id (no read through the `snapshots` view, which would sort every row). Every row read is still compared
 * here with the patterns in force, so an unknown flag or a stale `true` gives the same answer as a full
 * comparison. A `false` written under older patterns (an adapter that dropped a volatile path) is not trusted
 * below the label's `remark_below` while the background re-mark (remark.ts) works: those rows are read from
 * the `payload_changed` indexes and compared in full, and the page says so in `remarking`.
 */
export async function listChanges(
  db: Kysely<Database>,
  registry: Registry,
  deviceId: string,
  q: ChangeQuery,
): Promise<ChangePage | { badCursor: true } | { noDevice: true }> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(deviceId)) {
    return { noDevice: true };
  }
  const device = await historyStart(db, deviceId, q.label);
  if (!device) return { noDevice: true };
  const limit = q.limit ?? 20;
  let below: string | null = null;
  if (q.cursor) {
    below = decodeCursor("c", q.cursor);
    if (!below || !/^\d{1,19}$/.test(below) || BigInt(below) > 2n ** 63n - 1n) return { badCursor: true };
  }
  const mode = q.volatile ?? "exclude";
  const patternsOf = (label: string) => mode === "include" ? [] : volatileFor(registry, device.vendor, label);
  const canon = new Map<string, string>();
  const stripped = (label: string, sha: string, payload: unknown) => {
    const key = `${label}\n${sha}`;
    let c = canon.get(key);
    if (c === undefined) {
      c = canonicalJson(stripVolatile(payload, patternsOf(label)));
      canon.set(key, c);
    }
    return c;
  };
  const remarks = device.remarks.filter((r) => q.label === undefined || r.endpointLabel === q.label);
  const plan = {
    deviceId,
    q,
    mode,
    series: device.series,
    cuts: mode === "exclude" ? remarks : [],
    legacyLeft: device.legacyLeft,
  };
  const found: ChangeView[] = [];
  let chunks = 0;
  let partial: string | null = null;
  for (;;) {
    const next = candidates(plan, below);
    if (!next) break; // no series and no rows left to compact: no snapshot at all
    const rows = await sql<Candidate>`${next}`.execute(db);
    const diffable = rows.rows.filter((r) => r.prev_sha !== null && r.prev_sha !== r.payload_sha256);
    const p = await payloadsBySha(db, diffable.flatMap((r) => [r.payload_sha256, r.prev_sha!]));
    for (const r of diffable) {
      const label = r.endpoint_label;
      const a = p.get(r.prev_sha!);
      const b = p.get(r.payload_sha256);
      if (stripped(label, r.prev_sha!, a) === stripped(label, r.payload_sha256, b)) continue;
      const patterns = patternsOf(label);
      found.push({
        snapshotId: r.id,
        previousId: r.prev_id!,
        endpointLabel: label,
        collectedAt: new Date(r.collected_at).toISOString(),
        payloadSha256: r.payload_sha256,
        previousPayloadSha256: r.prev_sha!,
        ...diffPayloads(stripVolatile(a, patterns), stripVolatile(b, patterns)),
      });
      if (found.length > limit) break;
    }
    const oldest = rows.rows.at(-1);
    if (found.length > limit || rows.rows.length < CHUNK || !oldest) break;
    below = oldest.id;
    // While a re-mark is pending, rows below its cut are compared in full: a page stops after a bounded read
    // (REMARK_CHUNKS chunks) with what it found, and its cursor continues below the last row read.
    if (plan.cuts.length && ++chunks >= REMARK_CHUNKS) {
      partial = oldest.id;
      break;
    }
  }
  const page = found.slice(0, limit);
  const last = page.at(-1); // absent only when the limit is 0, then there is no next page
  return {
    changes: page,
    nextCursor: found.length > limit && last
      ? encodeCursor("c", last.snapshotId)
      : partial !== null && limit > 0
      ? encodeCursor("c", partial)
      : null,
    ...(plan.cuts.length ? { remarking: plan.cuts } : {}),
  };
}

/**
 * What a history needs before its first chunk, in one statement (three cost three round trips, which were
 * most of a short page's time): the device's vendor, its vendor's labels with a re-mark pending
 * (`volatile_path_sets` rows with `remark_below` set) and the device's series (of `label` only, when given), as plain joined rows
 * (a row per series and pending label); and whether rows not yet compacted are left ({@link legacyLeft}: no
 * statement once they are gone). Measured on PGlite, where parsing and planning run in WebAssembly: subqueries
 * aggregating the three cost more, and so did two statements (BENCHMARKS.md section 10c). Undefined when the
 * device does not exist.
 */
async function historyStart(db: Kysely<Database>, deviceId: string, label: string | undefined): Promise<
  {
    vendor: string;
    remarks: Remarking[];
    series: { id: number; endpoint_label: string }[];
    legacyLeft: boolean;
  } | undefined
> {
  const r = await sql<{
    vendor: string;
    sid: number | null;
    slabel: string | null;
    rlabel: string | null;
    below: string | null;
    remaining: string | null;
  }>`
    select ${
    sql.raw(PREPARED)
  } d.vendor, se.id as sid, se.endpoint_label as slabel, v.endpoint_label as rlabel,
      v.remark_below::text as below, v.remark_remaining::text as remaining
    from devices d
      left join snapshot_series se on se.device_id = d.id
        ${label === undefined ? sql`` : sql`and se.endpoint_label = ${label}`}
      left join volatile_path_sets v on v.vendor = d.vendor and v.remark_below is not null
    where d.id = ${deviceId}::uuid`.execute(db);
  const first = r.rows[0];
  if (!first) return undefined;
  const series = new Map<number, string>();
  const remarks = new Map<string, Remarking>();
  for (const x of r.rows) {
    if (x.sid !== null) series.set(x.sid, x.slabel!);
    if (x.rlabel !== null) {
      remarks.set(x.rlabel, {
        endpointLabel: x.rlabel,
        belowId: x.below!,
        remaining: x.remaining === null ? null : Number(x.remaining),
      });
    }
  }
  return {
    vendor: first.vendor,
    remarks: [...remarks.values()].sort((a, b) => a.endpointLabel < b.endpointLabel ? -1 : 1),
    series: [...series].sort((a, b) => a[0] - b[0]).map(([id, l]) => ({ id, endpoint_label: l })),
    legacyLeft: await legacyLeft(db),
  };
}

interface Plan {
  deviceId: string;
  q: ChangeQuery;
  mode: VolatileMode;
  series: { id: number; endpoint_label: string }[];
  cuts: Remarking[];
  /** Whether `snapshots_legacy` had rows (migration 0017's compaction not done): else it is not read. */
  legacyLeft: boolean;
}

/**
 * The next `CHUNK` candidate rows below `below`, newest first, each with the poll before it: per series a
 * backward walk of its partial index (two ranges when the label is being re-marked: flags trusted at and above
 * `remark_below`, every hash change below it), the rows not yet compacted by the device's partial indexes of
 * `snapshots_legacy` (only while that table has rows: on PGlite the statement with them costs twice as much,
 * parsed and planned in WebAssembly), merged by id; the page's payload hashes and previous rows are looked up
 * afterwards. Null when there is nothing to read (no series, no legacy rows).
 */
function candidates(plan: Plan, below: string | null): RawBuilder<unknown> | null {
  const { deviceId, q, mode } = plan;
  const common = (t: string) => {
    const c: RawBuilder<unknown>[] = [sql`${sql.ref(t + ".payload_changed")}`];
    if (below !== null) c.push(sql`${sql.ref(t + ".id")} < ${below}::bigint`);
    if (q.since) c.push(sql`${sql.ref(t + ".collected_at")} >= ${q.since.toISOString()}::timestamptz`);
    if (q.until) c.push(sql`${sql.ref(t + ".collected_at")} < ${q.until.toISOString()}::timestamptz`);
    return c;
  };
  const parts: RawBuilder<unknown>[] = [];
  const part = (from: RawBuilder<unknown>, where: RawBuilder<unknown>[]) =>
    parts.push(sql`(${from} where ${sql.join(where, sql` and `)} order by 1 desc limit ${CHUNK})`);
  const cutOf = new Map(plan.cuts.map((c) => [c.endpointLabel, c.belowId]));
  for (const s of plan.series) {
    const from = sql`select r.id, r.collected_at, r.payload_id as pid, null::text as psha,
      ${s.id}::int as sid, ${s.endpoint_label}::text as label from snapshot_rows r`;
    const w = [sql`r.series_id = ${s.id}::int`, ...common("r")];
    const cut = cutOf.get(s.endpoint_label);
    if (mode === "include") part(from, w);
    else if (cut === undefined) part(from, [...w, sql`r.stable_changed is not false`]);
    else {
      part(from, [...w, sql`r.stable_changed is not false`, sql`r.id >= ${cut}::bigint`]);
      part(from, [...w, sql`r.id < ${cut}::bigint`]);
    }
  }
  if (plan.legacyLeft) legacyParts(plan, common, part);
  if (!parts.length) return null;
  return sql`
    select ${sql.raw(PREPARED)} u.id::text as id, u.label as endpoint_label,
      coalesce(u.psha, (select p.sha256 from snapshot_payloads p where p.id = u.pid)) as payload_sha256,
      u.collected_at, prev.id::text as prev_id, prev.sha as prev_sha
    from (select * from (${sql.join(parts, sql` union all `)}) m order by 1 desc limit ${CHUNK}) u
    left join lateral ${
    previousLateral(sql`u.sid`, sql`${deviceId}::uuid`, sql`u.label`, sql`u.id`, plan.legacyLeft)
  } prev on true
    order by u.id desc`;
}

/** The candidates' parts from the rows not yet compacted (`snapshots_legacy`), by the device's indexes. */
function legacyParts(
  plan: Plan,
  common: (t: string) => RawBuilder<unknown>[],
  part: (from: RawBuilder<unknown>, where: RawBuilder<unknown>[]) => void,
) {
  const { deviceId, q, mode } = plan;
  const legacyFrom = sql`select l.id, l.collected_at, null::bigint as pid, l.payload_sha256 as psha,
    (select se.id from snapshot_series se where se.device_id = l.device_id
      and se.endpoint_label = l.endpoint_label) as sid, l.endpoint_label as label from snapshots_legacy l`;
  const lw = [sql`l.device_id = ${deviceId}::uuid`, ...common("l")];
  if (q.label !== undefined) lw.push(sql`l.endpoint_label = ${q.label}`);
  const inCut = plan.cuts.map((c) =>
    sql`(l.endpoint_label = ${c.endpointLabel} and l.id < ${c.belowId}::bigint)`
  );
  if (mode === "include") part(legacyFrom, lw);
  else {
    const trusted = [...lw, sql`l.stable_changed is not false`];
    if (inCut.length) trusted.push(sql`not (${sql.join(inCut, sql` or `)})`);
    part(legacyFrom, trusted);
    if (inCut.length) part(legacyFrom, [...lw, sql`(${sql.join(inCut, sql` or `)})`]);
  }
}
