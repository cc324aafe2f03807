/**
 * A device's payloads and the payloads no snapshot references, on the narrow layout (migration
 * 2026_11_25_0017), for deleting a device: read from `snapshot_rows` (by series, by `snapshot_rows_payload`)
 * and `snapshots_legacy` (by `snapshots_device_label_id`, `snapshots_payload`), not through the `snapshots`
 * view, which joins every row before it filters (measured: 444 ms for the unreferenced check at 2 * 10^5 rows,
 * PostgreSQL).
 *
 * @module
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "./schema.ts";

/** The payload hashes a device's snapshots reference (read before the device and its snapshots go). */
export async function devicePayloadHashes(db: Kysely<Database>, deviceId: string): Promise<string[]> {
  const r = await sql<{ sha256: string }>`
    select p.sha256 from snapshot_payloads p
      where p.id in (select r.payload_id from snapshot_rows r
        where r.series_id in (select se.id from snapshot_series se where se.device_id = ${deviceId}::uuid))
    union
    select l.payload_sha256 from snapshots_legacy l where l.device_id = ${deviceId}::uuid`.execute(db);
  return r.rows.map((x) => x.sha256);
}

/** Delete those of `hashes` that no snapshot references any more. */
export async function deleteUnreferencedPayloads(db: Kysely<Database>, hashes: string[]): Promise<void> {
  if (!hashes.length) return;
  await sql`delete from snapshot_payloads p where p.sha256 = any(${hashes}::text[])
    and not exists (select 1 from snapshot_rows r where r.payload_id = p.id)
    and not exists (select 1 from snapshots_legacy l where l.payload_sha256 = p.sha256)`.execute(db);
}
