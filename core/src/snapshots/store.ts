import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { decodeCursor, encodeCursor } from "../util/paging.ts";

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

/**
 * The columns of a snapshot as the API shows it (snapshots `s` joined with its payload `p` and, left, its
 * adapter release `r`).
 */
const SNAPSHOT_COLUMNS = [
  sql<string>`s.id::text`.as("id"),
  "s.device_id",
  "s.endpoint_label",
  "p.payload",
  "s.payload_sha256",
  "s.collected_at",
  "s.test_run_execution_id",
  // Rows written since migration 0015 name their adapter release by reference (`adapter_releases r`).
  sql<string>`coalesce(s.adapter_module, r.module)`.as("adapter_module"),
  sql<string>`coalesce(s.adapter_version, r.version)`.as("adapter_version"),
] as const;

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
): Promise<{ rows: SnapshotRow[]; nextCursor: string | null } | { badCursor: true }> {
  const limit = f.limit ?? 100;
  let before: string | null = null;
  if (f.cursor) {
    before = decodeSnapshotCursor(f.cursor);
    if (!before) return { badCursor: true };
  }
  if (f.deviceId && !f.endpointLabel && !f.testRunExecutionId) {
    return pageOf(await listDeviceSnapshots(db, f.deviceId, before, limit + 1), limit);
  }
  let q = db.selectFrom("snapshots as s").innerJoin("snapshot_payloads as p", "p.sha256", "s.payload_sha256")
    .leftJoin("adapter_releases as r", "r.id", "s.adapter_release_id")
    .select(SNAPSHOT_COLUMNS);
  if (f.deviceId) q = q.where("s.device_id", "=", f.deviceId);
  if (f.endpointLabel) q = q.where("s.endpoint_label", "=", f.endpointLabel);
  if (f.testRunExecutionId) q = q.where("s.test_run_execution_id", "=", f.testRunExecutionId);
  if (before) q = q.where(sql`s.id`, "<", sql`${before}::bigint`);
  return pageOf(await q.orderBy("s.id", "desc").limit(limit + 1).execute(), limit);
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
 * A device's snapshots newest first, below `before`, at most `n`, without an index on (device, id): the
 * device's labels by a skip scan of `snapshots_device_label_id (device_id, endpoint_label, id desc)` (one
 * descent per label), then per label the ids of its newest `n` rows from the same index (index-only where
 * the visibility map allows), merged by id; only the page's `n` rows are then read with their payloads. A
 * device has a handful of labels, so this reads at most labels × n index entries (migration 2026_11_25_0015
 * dropped `snapshots_device_id`, 69 B per snapshot).
 */
async function listDeviceSnapshots(
  db: Kysely<Database>,
  deviceId: string,
  before: string | null,
  n: number,
): Promise<SnapshotRow[]> {
  const below = before === null ? sql`` : sql`and x.id < ${before}::bigint`;
  const r = await sql<SnapshotRow>`
    with recursive labels(label) as (
      (select x.endpoint_label from snapshots x where x.device_id = ${deviceId}
        order by x.endpoint_label limit 1)
      union all
      select (select x.endpoint_label from snapshots x
          where x.device_id = ${deviceId} and x.endpoint_label > l.label order by x.endpoint_label limit 1)
        from labels l where l.label is not null
    )
    select s.id::text as id, s.device_id, s.endpoint_label, p.payload, s.payload_sha256, s.collected_at,
      s.test_run_execution_id, coalesce(s.adapter_module, r.module) as adapter_module,
      coalesce(s.adapter_version, r.version) as adapter_version
    from (select x.id from labels l
      cross join lateral (select x.id from snapshots x
        where x.device_id = ${deviceId} and x.endpoint_label = l.label ${below}
        order by x.id desc limit ${n}) x
      where l.label is not null
      order by x.id desc limit ${n}) page
    join snapshots s on s.id = page.id
    join snapshot_payloads p on p.sha256 = s.payload_sha256
    left join adapter_releases r on r.id = s.adapter_release_id
    order by s.id desc limit ${n}`.execute(db);
  return r.rows;
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
    .leftJoin("adapter_releases as r", "r.id", "s.adapter_release_id")
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
    .leftJoin("adapter_releases as r", "r.id", "s.adapter_release_id")
    .select(SNAPSHOT_COLUMNS)
    .where("l.device_id", "in", deviceIds).execute();
}
