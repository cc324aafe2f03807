/**
 * Walking one device and label's snapshots on the narrow layout (migration 2026_11_25_0017) without the
 * `snapshots` view: a query through the view that filters by device and label and orders by id joins and
 * sorts every row. Compacted rows are read from `snapshot_rows` by `snapshot_rows_series_id (series_id, id)`,
 * rows not yet compacted from `snapshots_legacy` by `snapshots_device_label_id`; the newer of the two wins.
 *
 * @module
 */
import { type Kysely, type RawBuilder, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { PREPARED } from "../db/prepared.ts";

/**
 * A lateral subquery (`prev(id, sha)`) for the snapshot before `id` of a series: `sid` the series id (may be
 * null when the series has no compacted rows), `device` and `label` for the legacy rows; without them when
 * `legacyLeft` is false (`snapshots_legacy` is empty: the compaction of migration 0017 is done).
 */
export function previousLateral(
  sid: RawBuilder<unknown>,
  device: RawBuilder<unknown>,
  label: RawBuilder<unknown>,
  id: RawBuilder<unknown>,
  legacyLeft = true,
): RawBuilder<unknown> {
  if (!legacyLeft) {
    return sql`(select r.id, (select p.sha256 from snapshot_payloads p where p.id = r.payload_id) as sha
      from snapshot_rows r where r.series_id = ${sid} and r.id < ${id} order by r.id desc limit 1)`;
  }
  return sql`(
    select z.id, z.sha from (
      (select r.id, (select p.sha256 from snapshot_payloads p where p.id = r.payload_id) as sha
        from snapshot_rows r where r.series_id = ${sid} and r.id < ${id} order by r.id desc limit 1)
      union all
      (select l.id, l.payload_sha256 from snapshots_legacy l
        where l.device_id = ${device} and l.endpoint_label = ${label} and l.id < ${id}
        order by l.id desc limit 1)
    ) z order by z.id desc limit 1)`;
}

/** The id of the snapshot before `id` of the same device and label, or undefined for the first one. */
export async function previousSnapshotId(
  db: Kysely<Database>,
  deviceId: string,
  label: string,
  id: string,
): Promise<string | undefined> {
  const r = await sql<{ id: string | null }>`
    select prev.id::text as id from (select 1) one
    left join lateral ${
    previousLateral(
      sql`(select se.id from snapshot_series se where se.device_id = ${deviceId} and se.endpoint_label = ${label})`,
      sql`${deviceId}::uuid`,
      sql`${label}::text`,
      sql`${id}::bigint`,
    )
  } prev on true`.execute(db);
  return r.rows[0]?.id ?? undefined;
}

/** Parsed payloads by hash. */
export async function payloadsBySha(db: Kysely<Database>, hashes: string[]): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>();
  const want = [...new Set(hashes)];
  if (!want.length) return out;
  // One statement text for any number of hashes (an `in (…)` list has one per count), prepared.
  const rows = await db.selectFrom("snapshot_payloads").modifyFront(sql.raw(PREPARED)).select([
    "sha256",
    "payload",
  ])
    .where("sha256", "=", sql<string>`any(${want}::text[])`).execute();
  for (const r of rows) out.set(r.sha256, JSON.parse(r.payload));
  return out;
}

/** A snapshot found by a series walk: id (text), device, label, payload hash and collection time. */
export interface SeriesSnap {
  id: string;
  device_id: string;
  endpoint_label: string;
  payload_sha256: string;
  collected_at: Date | string;
}

/**
 * The newest snapshot (highest id) of a device and label collected at or before `at`: a backward walk of the
 * series on `snapshot_rows_series_id` and of `snapshots_legacy` on `snapshots_device_label_id`, each stopping
 * at its first row collected at or before `at`; the newer of the two.
 */
export async function lastSnapshotAt(
  db: Kysely<Database>,
  deviceId: string,
  label: string,
  at: Date,
): Promise<SeriesSnap | undefined> {
  // One pair: its row, if any, is the only one (keyed by the database's spelling of the uuid).
  return [...(await lastSnapshotsAt(db, [{ deviceId, label }], at)).values()][0];
}

/**
 * {@link lastSnapshotAt} of many (device, label) pairs at one moment, in one statement (a report's drift reads
 * two per pair of the lab: one statement each cost more in parsing and planning than in reading). Keyed
 * `device\nlabel`; a pair with no snapshot then is absent.
 */
export async function lastSnapshotsAt(
  db: Kysely<Database>,
  pairs: ReadonlyArray<{ deviceId: string; label: string }>,
  at: Date,
): Promise<Map<string, SeriesSnap>> {
  if (!pairs.length) return new Map();
  const r = await sql<SeriesSnap>`
    select g.d::text as device_id, g.l as endpoint_label, z.id::text as id, z.payload_sha256, z.collected_at
    from unnest(${pairs.map((p) => p.deviceId)}::uuid[], ${pairs.map((p) => p.label)}::text[]) g(d, l)
    cross join lateral (
      select z.id, z.payload_sha256, z.collected_at from (
        (select r.id, (select p.sha256 from snapshot_payloads p where p.id = r.payload_id) as payload_sha256,
            r.collected_at
          from snapshot_rows r
          where r.series_id = (select se.id from snapshot_series se
              where se.device_id = g.d and se.endpoint_label = g.l)
            and r.collected_at <= ${at}
          order by r.id desc limit 1)
        union all
        (select l.id, l.payload_sha256, l.collected_at from snapshots_legacy l
          where l.device_id = g.d and l.endpoint_label = g.l and l.collected_at <= ${at}
          order by l.id desc limit 1)
      ) z order by z.id desc limit 1) z`.execute(db);
  return new Map(r.rows.map((x) => [`${x.device_id}\n${x.endpoint_label}`, x]));
}
