import { type Kysely, type RawBuilder, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { decodeCursor, encodeCursor } from "../util/paging.ts";
import { PREPARED } from "../db/prepared.ts";

/** A snapshot as the API returns it (spec 2.3). */
export interface SnapshotView {
  id: string;
  deviceId: string;
  endpointLabel: string;
  payloadJson: unknown;
  payloadSha256: string;
  collectedAt: string;
  testRunExecutionId: string | null;
  adapterModule: string;
  adapterVersion: string;
}

export interface SnapshotFilter {
  deviceId?: string;
  endpointLabel?: string;
  testRunExecutionId?: string;
  limit?: number;
  cursor?: string;
}

const MAX_ID = 2n ** 63n - 1n;
/** The snapshot id a cursor names, or null when it is not a cursor this API made. */
function decodeSnapshotCursor(c: string): string | null {
  const id = decodeCursor("s", c);
  return id !== null && /^\d{1,19}$/.test(id) && BigInt(id) <= MAX_ID ? id : null;
}

/** The columns of a snapshot as the API shows it (the `snapshots` view `s` joined with its payload `p`). */
const SNAPSHOT_COLUMNS = [
  sql<string>`s.id::text`.as("id"),
  "s.device_id",
  "s.endpoint_label",
  "p.payload",
  "s.payload_sha256",
  "s.collected_at",
  "s.test_run_execution_id",
  sql<string>`s.adapter_module`.as("adapter_module"),
  sql<string>`s.adapter_version`.as("adapter_version"),
] as const;

/** Root databases (not transactions) on which `snapshots_legacy` was seen empty. */
const legacyGone = new WeakSet<object>();

/**
 * Whether `snapshots_legacy` may have rows: the snapshots stored before migration 0017 that its compaction
 * (compact.ts) has not moved yet. Nothing adds a row to that table after 0017, so once a read outside a
 * transaction finds it empty, it stays empty: that is remembered per database, and the listings then read
 * `snapshot_rows` alone (on PGlite the statement with the legacy branch costs about twice as much, parsed and
 * planned in WebAssembly). Inside a transaction, whose snapshot may predate the compaction's last batch, it
 * is asked every time.
 */
export async function legacyLeft(db: Kysely<Database>): Promise<boolean> {
  if (legacyGone.has(db)) return false;
  const r = await sql<{ left: boolean }>`select ${sql.raw(PREPARED)}
    exists (select 1 from snapshots_legacy) as left`.execute(db);
  const left = r.rows[0]?.left ?? true;
  if (!left && !db.isTransaction) legacyGone.add(db);
  return left;
}

/** Snapshots newest first (by storage order), filtered, paged with an opaque cursor. */
export async function listSnapshots(
  db: Kysely<Database>,
  f: SnapshotFilter,
): Promise<{ snapshots: SnapshotView[]; nextCursor: string | null } | { badCursor: true }> {
  const r = await listSnapshotRows(db, f);
  return "badCursor" in r ? r : { snapshots: r.rows.map(toSnapshotView), nextCursor: r.nextCursor };
}

/**
 * The rows of `listSnapshots`, payloads as their stored JSON text: the HTTP route writes that text into
 * the page as it is (view_json.ts) instead of decoding and re-encoding every payload.
 */
export async function listSnapshotRows(
  db: Kysely<Database>,
  f: SnapshotFilter,
  withPayloads = true,
): Promise<{ rows: SnapshotRow[]; nextCursor: string | null } | { badCursor: true }> {
  const limit = f.limit ?? 100;
  let before: string | null = null;
  if (f.cursor) {
    before = decodeSnapshotCursor(f.cursor);
    if (!before) return { badCursor: true };
  }
  if (!await legacyLeft(db)) return pageOf(await narrowPage(db, f, before, limit + 1, withPayloads), limit);
  // The page's ids (a query of its own, below) and its rows in one statement: `any(array(…))` runs the ids'
  // query once, as an init plan, and reads each id by its primary key (one round trip where two cost twice).
  const ids = f.deviceId && !f.testRunExecutionId
    ? f.endpointLabel
      ? seriesIds(f.deviceId, f.endpointLabel, before, limit + 1)
      : deviceIds(f.deviceId, before, limit + 1)
    : filteredIds(f, before, limit + 1);
  return pageOf(await snapshotsByIds(db, sql`array(${ids})`, withPayloads), limit);
}

/**
 * A page once every snapshot is in `snapshot_rows` (no legacy row left): the rows found and their columns in
 * one statement over the tables, not through the `snapshots` view and a second look-up by id (on PGlite,
 * where parsing and planning run in WebAssembly, 0.75 against 1.2 ms for a device's page of 20, measured).
 * With a device or a label and no run, per matching series its newest `n` rows by `snapshot_rows_series_id`,
 * merged by id; otherwise the primary key (or `snapshot_rows_run`) walked backwards with the rest as a filter.
 */
async function narrowPage(
  db: Kysely<Database>,
  f: SnapshotFilter,
  before: string | null,
  n: number,
  withPayloads: boolean,
): Promise<SnapshotRow[]> {
  const below = before === null ? sql`` : sql`and r.id < ${before}::bigint`;
  const cols = sql`x.id::text as id, se.device_id, se.endpoint_label,
    ${withPayloads ? sql`p.payload` : sql`''`} as payload, p.sha256 as payload_sha256, x.collected_at,
    x.test_run_execution_id, a.module as adapter_module, a.version as adapter_version`;
  const joins =
    sql`join snapshot_payloads p on p.id = x.payload_id join adapter_releases a on a.id = x.release_id`;
  const row = sql`r.id, r.collected_at, r.test_run_execution_id, r.payload_id, r.release_id, r.series_id`;
  if ((f.deviceId || f.endpointLabel) && !f.testRunExecutionId) {
    const which = [
      ...(f.deviceId ? [sql`se.device_id = ${f.deviceId}`] : []),
      ...(f.endpointLabel ? [sql`se.endpoint_label = ${f.endpointLabel}`] : []),
    ];
    return (await sql<SnapshotRow>`select ${sql.raw(PREPARED)} ${cols}
      from snapshot_series se cross join lateral (select ${row} from snapshot_rows r
        where r.series_id = se.id ${below} order by r.id desc limit ${n}) x ${joins}
      where ${sql.join(which, sql` and `)} order by x.id desc limit ${n}`.execute(db)).rows;
  }
  const r = [sql`true`];
  if (f.testRunExecutionId) r.push(sql`r.test_run_execution_id = ${f.testRunExecutionId}`);
  if (f.deviceId) {
    r.push(sql`r.series_id in (select se.id from snapshot_series se where se.device_id = ${f.deviceId}
      ${f.endpointLabel ? sql`and se.endpoint_label = ${f.endpointLabel}` : sql``})`);
  } else if (f.endpointLabel) {
    r.push(
      sql`r.series_id in (select se.id from snapshot_series se where se.endpoint_label = ${f.endpointLabel})`,
    );
  }
  return (await sql<SnapshotRow>`select ${sql.raw(PREPARED)} ${cols}
    from (select ${row} from snapshot_rows r where ${sql.join(r, sql` and `)} ${below}
      order by r.id desc limit ${n}) x
    join snapshot_series se on se.id = x.series_id ${joins}
    order by x.id desc`.execute(db)).rows;
}

/**
 * The ids of the newest `n` snapshots below `before` matching a filter without a device (or with a run): in
 * `snapshot_rows` a backward walk of the primary key (or of `snapshot_rows_run` for a run), the label and
 * device as a filter on the series id; in `snapshots_legacy` the same on its own indexes; merged. Only the
 * page's rows are then read with their payloads (a join through the view before the limit would read every
 * row).
 */
function filteredIds(f: SnapshotFilter, before: string | null, n: number): RawBuilder<unknown> {
  const r = [sql`true`];
  const l = [sql`true`];
  if (before !== null) {
    r.push(sql`r.id < ${before}::bigint`);
    l.push(sql`l.id < ${before}::bigint`);
  }
  if (f.testRunExecutionId) {
    r.push(sql`r.test_run_execution_id = ${f.testRunExecutionId}`);
    l.push(sql`l.test_run_execution_id = ${f.testRunExecutionId}`);
  }
  if (f.deviceId || f.endpointLabel) {
    const se = [sql`true`];
    if (f.deviceId) {
      se.push(sql`se.device_id = ${f.deviceId}`);
      l.push(sql`l.device_id = ${f.deviceId}`);
    }
    if (f.endpointLabel) {
      se.push(sql`se.endpoint_label = ${f.endpointLabel}`);
      l.push(sql`l.endpoint_label = ${f.endpointLabel}`);
    }
    r.push(sql`r.series_id in (select se.id from snapshot_series se where ${sql.join(se, sql` and `)})`);
  }
  // A label without a run: per series of the label its newest rows (a rare label must not walk the whole
  // primary key to find a page); otherwise the primary key or the run's index, with the rest as a filter.
  const narrow = f.endpointLabel && !f.testRunExecutionId
    ? seriesWalk(sql`se.endpoint_label = ${f.endpointLabel}`, before, n)
    : sql`select r.id from snapshot_rows r where ${sql.join(r, sql` and `)} order by r.id desc limit ${n}`;
  return sql`
    select u.id from (
      (${narrow})
      union all
      (select l.id from snapshots_legacy l where ${sql.join(l, sql` and `)} order by l.id desc limit ${n})
    ) u order by u.id desc limit ${n}`;
}

/** A snapshot row as the queries below read it; `payload` is the stored canonical JSON text. */
export type SnapshotRow = Parameters<typeof toSnapshotView>[0];

/** A page of at most `limit` rows out of `limit + 1` read, with the cursor of the next page. */
function pageOf(rows: SnapshotRow[], limit: number) {
  const page = rows.slice(0, limit);
  const last = page.at(-1); // absent only when the limit is 0, then there is no next page
  return {
    rows: page,
    nextCursor: rows.length > limit && last ? encodeCursor("s", last.id) : null,
  };
}

/**
 * The snapshots with these ids, newest first, with their payloads (without: `payload` is '' and no payload
 * text is read, for `payload=omit`).
 */
async function snapshotsByIds(
  db: Kysely<Database>,
  ids: RawBuilder<unknown>,
  withPayloads = true,
): Promise<SnapshotRow[]> {
  const q = db.selectFrom("snapshots as s").modifyFront(sql.raw(PREPARED))
    .where(sql`s.id`, "=", sql`any(${ids})`).orderBy(
      "s.id",
      "desc",
    );
  if (!withPayloads) {
    return await q.select([
      ...SNAPSHOT_COLUMNS.filter((c) => c !== "p.payload"),
      sql<string>`''`.as("payload"),
    ]).execute();
  }
  return await q.innerJoin("snapshot_payloads as p", "p.sha256", "s.payload_sha256").select(SNAPSHOT_COLUMNS)
    .execute();
}

/**
 * The ids of a device and label's snapshots newest first, below `before`, at most `n`: the series' rows by
 * `snapshot_rows_series_id (series_id, id)` walked backwards, and rows not yet compacted by
 * `snapshots_device_label_id` of `snapshots_legacy` (migration 2026_11_25_0017), merged.
 */
function seriesIds(
  deviceId: string,
  label: string,
  before: string | null,
  n: number,
): RawBuilder<unknown> {
  const belowR = before === null ? sql`` : sql`and r.id < ${before}::bigint`;
  const belowL = before === null ? sql`` : sql`and l.id < ${before}::bigint`;
  const narrow = sql`select r.id from snapshot_rows r
        where r.series_id = (select se.id from snapshot_series se
          where se.device_id = ${deviceId} and se.endpoint_label = ${label}) ${belowR}
        order by r.id desc limit ${n}`;
  return sql`
    select u.id from (
      (${narrow})
      union all
      (select l.id from snapshots_legacy l
        where l.device_id = ${deviceId} and l.endpoint_label = ${label} ${belowL}
        order by l.id desc limit ${n})
    ) u order by u.id desc limit ${n}`;
}

/**
 * The ids of a device's snapshots newest first, below `before`, at most `n`, without an index on (device,
 * id): per series of the device (`snapshot_series`, a handful) its newest `n` rows, and in the rows not yet
 * compacted the device's labels by a skip scan of `snapshots_device_label_id` (one descent per label) and per
 * label its newest `n`, merged by id. This reads at most labels × n index entries.
 */
function deviceIds(deviceId: string, before: string | null, n: number): RawBuilder<unknown> {
  const narrow = seriesWalk(sql`se.device_id = ${deviceId}`, before, n);
  const belowL = before === null ? sql`` : sql`and x.id < ${before}::bigint`;
  return sql`
    with recursive labels(label) as (
      (select x.endpoint_label from snapshots_legacy x where x.device_id = ${deviceId}
        order by x.endpoint_label limit 1)
      union all
      select (select x.endpoint_label from snapshots_legacy x
          where x.device_id = ${deviceId} and x.endpoint_label > l.label order by x.endpoint_label limit 1)
        from labels l where l.label is not null
    )
    select u.id from (
      (${narrow})
      union all
      (select x.id from labels l
        cross join lateral (select x.id from snapshots_legacy x
          where x.device_id = ${deviceId} and x.endpoint_label = l.label ${belowL}
          order by x.id desc limit ${n}) x
        where l.label is not null
        order by x.id desc limit ${n})
    ) u order by u.id desc limit ${n}`;
}

/**
 * The ids of the newest `n` narrow rows below `before` of the series matching `which` (a condition on
 * `snapshot_series se`): per series its newest `n` by `snapshot_rows_series_id`, merged by id. A handful of
 * series per device or label: at most series × n index entries, however old the history.
 */
function seriesWalk(which: RawBuilder<unknown>, before: string | null, n: number): RawBuilder<unknown> {
  return sql`select x.id from snapshot_series se
    cross join lateral (select r.id from snapshot_rows r where r.series_id = se.id
      ${before === null ? sql`` : sql`and r.id < ${before}::bigint`} order by r.id desc limit ${n}) x
    where ${which} order by x.id desc limit ${n}`;
}

/** One snapshot by its id (digits), or undefined. */
export async function getSnapshot(db: Kysely<Database>, id: string): Promise<SnapshotView | undefined> {
  const row = await getSnapshotRow(db, id);
  return row ? toSnapshotView(row) : undefined;
}

/** The row of `getSnapshot` (payload as its stored JSON text), or undefined. */
export async function getSnapshotRow(db: Kysely<Database>, id: string): Promise<SnapshotRow | undefined> {
  if (!/^\d{1,19}$/.test(id) || BigInt(id) > MAX_ID) return undefined;
  const row = await db.selectFrom("snapshots as s")
    .innerJoin("snapshot_payloads as p", "p.sha256", "s.payload_sha256")
    .select(SNAPSHOT_COLUMNS).where(sql`s.id`, "=", sql`${id}::bigint`).executeTakeFirst();
  return row;
}

export function toSnapshotView(r: {
  id: string;
  device_id: string;
  endpoint_label: string;
  payload: string;
  payload_sha256: string;
  collected_at: Date | string;
  test_run_execution_id: string | null;
  adapter_module: string;
  adapter_version: string;
}): SnapshotView {
  return {
    id: r.id,
    deviceId: r.device_id,
    endpointLabel: r.endpoint_label,
    payloadJson: JSON.parse(r.payload),
    payloadSha256: r.payload_sha256,
    collectedAt: new Date(r.collected_at).toISOString(),
    testRunExecutionId: r.test_run_execution_id,
    adapterModule: r.adapter_module,
    adapterVersion: r.adapter_version,
  };
}

/** The latest snapshot per (device, label) for the given devices: one query via `snapshot_latest`. */
export async function latestSnapshots(db: Kysely<Database>, deviceIds: string[]) {
  if (!deviceIds.length) return [];
  return await db.selectFrom("snapshot_latest as l")
    .innerJoin("snapshots as s", (j) => j.on(sql`s.id`, "=", sql.ref("l.snapshot_id")))
    .innerJoin("snapshot_payloads as p", "p.sha256", "s.payload_sha256")
    .select(SNAPSHOT_COLUMNS)
    .where("l.device_id", "in", deviceIds).execute();
}
