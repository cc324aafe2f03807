// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import type { Kysely } from "kysely";

// snapshots_label_id (endpoint_label, id desc) cost about 70 B per stored snapshot: every key is unique
// (it ends with the id), so B-tree deduplication never applies. Its one use is a listing filtered by label
// alone, and only for a label few snapshots have (a label of a vendor with few devices, or one no device
// has): a label most devices have is listed by a backward scan of the primary key, filtered on the label.
// snapshots_label (endpoint_label) serves those rare labels (a bitmap of the label's rows, then a top-N
// sort) in about 8 B per snapshot, since its key repeats on every poll and deduplicates.
//
// snapshots_device_label_id stays: without it a device-and-label listing scans the device's index, and for
// a label rare across devices the planner expects few matches and reads the device's whole history; and
// an index leading with the label would be combined (bitmap AND) with the device's (measured with
// EXPLAIN ANALYZE on PostgreSQL at 1.3 million snapshots, issue 11).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex("snapshots_label").on("snapshots").column("endpoint_label").execute();
  await db.schema.dropIndex("snapshots_label_id").execute();
}

// snapshots_label_id exactly as 2026_11_21_0001_init created it.
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex("snapshots_label_id").on("snapshots").columns(["endpoint_label", "id desc"])
    .execute();
  await db.schema.dropIndex("snapshots_label").execute();
}
