// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// Two row triggers that every poll write paid once per snapshot, for a rare case (issue 31's "no figure worse":
// on the embedded database a PL/pgSQL call costs tens of microseconds in WebAssembly, and the poll's CPU was
// 3-4 ms above the layout before 0017, BENCHMARKS.md section 10c):
//
// 1. `snapshot_rows_version` and `snapshots_legacy_version` (migration 0019) queued one deferred call of
//    `bump_devices_version()` per inserted or deleted row, each of which found the version already raised by
//    the first. They become statement triggers: one call per insert or delete statement, at its end, with the
//    same once-per-transaction guard inside the function (`devices_version` on `devices` stays as it is).
//    The counter is then raised at the statement's end instead of at commit: its row lock is held from there
//    to the commit, which in the poll store is two statements later, and the devices' own deferred trigger
//    takes that same lock at commit anyway.
// 2. `snapshot_latest_consistent` (migration 0021) ran its function on every update of `snapshot_latest`
//    (every poll moves the pointer) to clear the hash and time in the one case where the pointer moves without
//    a new time. The condition moves into the trigger's WHEN clause, evaluated without calling the function;
//    the function is the same.
export async function up(db: Kysely<any>): Promise<void> {
  for (const t of ["snapshot_rows", "snapshots_legacy"]) {
    await sql`drop trigger if exists ${sql.raw(`${t}_version`)} on ${sql.table(t)}`.execute(db);
    await sql`create trigger ${sql.raw(`${t}_version`)} after insert or delete on ${sql.table(t)}
      for each statement execute function bump_devices_version()`.execute(db);
  }
  await sql`drop trigger if exists snapshot_latest_consistent on snapshot_latest`.execute(db);
  await sql`create trigger snapshot_latest_consistent before update on snapshot_latest for each row
    when (new.snapshot_id is distinct from old.snapshot_id and new.collected_at is not distinct from old.collected_at)
    execute function snapshot_latest_keep_consistent()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists snapshot_latest_consistent on snapshot_latest`.execute(db);
  await sql`create trigger snapshot_latest_consistent before update on snapshot_latest
    for each row execute function snapshot_latest_keep_consistent()`.execute(db);
  for (const t of ["snapshot_rows", "snapshots_legacy"]) {
    await sql`drop trigger if exists ${sql.raw(`${t}_version`)} on ${sql.table(t)}`.execute(db);
    await sql`
      create constraint trigger ${sql.raw(`${t}_version`)} after insert or delete on ${sql.table(t)}
      deferrable initially deferred for each row execute function bump_devices_version()`.execute(db);
  }
}
