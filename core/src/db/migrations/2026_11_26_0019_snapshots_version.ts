// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// The version number of migration 0010 (`table_versions`, name 'devices') now also counts every committed
// insert or delete of a snapshot, so the snapshot listings can be answered from their JSON kept in memory after
// one primary-key read, as the device list is (core/src/http/list_cache.ts; issue 34 point 3, BENCHMARKS.md
// section 8c). What a listed snapshot shows never changes while its row exists: `snapshot_rows` and
// `snapshots_legacy` refuse every UPDATE but forgetting a stable flag (not shown), payloads and adapter releases
// are immutable and a series keeps its device and label (migration 0017). So rows inserted (a poll, by any
// instance; the compaction's copies) and rows deleted (a prune, a device's cascade, the compaction's deletes of
// moved legacy rows) are every change of a listing.
//
// One counter for both, not a second row: a poll inserts snapshots and updates its devices in one transaction,
// so it raises the counter once as before (no second row update per poll), and a transaction takes at most this
// one row lock at COMMIT (two counters taken in different orders by a poll and a device's delete could
// deadlock). The cost: a prune or a compaction batch makes the device list rebuild once.
export async function up(db: Kysely<any>): Promise<void> {
  for (const t of ["snapshot_rows", "snapshots_legacy"]) {
    await sql`
      create constraint trigger ${sql.raw(`${t}_version`)} after insert or delete on ${sql.table(t)}
      deferrable initially deferred for each row execute function bump_devices_version()`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ["snapshot_rows", "snapshots_legacy"]) {
    await sql`drop trigger if exists ${sql.raw(`${t}_version`)} on ${sql.table(t)}`.execute(db);
  }
}
