// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// A version number of the snapshots that every committed insert or delete of a snapshot raises, so the
// snapshot listings can be answered from their JSON kept in memory after one primary-key read, as the device
// list is (migration 0010, core/src/http/list_cache.ts; issue 34 point 3, BENCHMARKS.md section 8c). What a
// listed snapshot shows never changes while its row exists: `snapshot_rows` and `snapshots_legacy` refuse
// every UPDATE but forgetting a stable flag (not shown), payloads and adapter releases are immutable and a
// series keeps its device and label (migration 0017). So rows inserted (a poll, by any instance; the
// compaction's copies) and rows deleted (a prune, a device's cascade, the compaction's deletes of moved legacy
// rows) are every change of a listing. As for the devices: a deferred constraint trigger, run at COMMIT after
// every other lock of the transaction is held, raises the counter once per transaction (a transaction-local
// setting remembers it).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`insert into table_versions (name, version) values ('snapshots', 0) on conflict (name) do nothing`
    .execute(db);
  await sql`
    create function bump_snapshots_version() returns trigger language plpgsql as $$
    begin
      if current_setting('dutlab.snapshots_version_raised', true) is distinct from txid_current()::text then
        update table_versions set version = version + 1 where name = 'snapshots';
        perform set_config('dutlab.snapshots_version_raised', txid_current()::text, true);
      end if;
      return null;
    end $$`.execute(db);
  for (const t of ["snapshot_rows", "snapshots_legacy"]) {
    await sql`
      create constraint trigger ${sql.raw(`${t}_version`)} after insert or delete on ${sql.table(t)}
      deferrable initially deferred for each row execute function bump_snapshots_version()`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ["snapshot_rows", "snapshots_legacy"]) {
    await sql`drop trigger if exists ${sql.raw(`${t}_version`)} on ${sql.table(t)}`.execute(db);
  }
  await sql`drop function if exists bump_snapshots_version()`.execute(db);
  await sql`delete from table_versions where name = 'snapshots'`.execute(db);
}
