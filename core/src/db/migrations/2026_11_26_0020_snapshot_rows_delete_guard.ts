// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// The delete guard of `snapshot_rows` once per statement (issue 31: the prune, BENCHMARKS.md section 10a).
// Migration 0017 guarded deletes from `snapshot_rows` with `snapshots_append_only()` FOR EACH ROW: per deleted
// row two conditions with a subquery in the PL/pgSQL function (whether the row is a legacy row with its copy in
// place, whether the named prune is running), each a full executor start and end even where its subquery is not
// reached: 12-18 µs a row, 35-44 % of a prune batch's time in the
// database (the guard before 0017, one query a row: 6 µs).
// The rule is the same for every row of a statement (a device's cascade, one trigger level down; or a running
// prune named by `dutlab.snapshot_prune`; the legacy-copy rule is for `snapshots_legacy` only), so it is now
// checked once, before the statement; refused outside those, as before (also a delete that matches nothing).
// UPDATE and TRUNCATE keep their guards, `snapshots_legacy` its row guard.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function snapshot_rows_delete_guard() returns trigger language plpgsql as $$
    declare
      prune text;
    begin
      if pg_trigger_depth() >= 2 then
        return null;
      end if;
      prune := current_setting('dutlab.snapshot_prune', true);
      if prune ~ '^[0-9]{1,18}$'
        and exists (select 1 from snapshot_prunes where id = prune::bigint and status = 'running') then
        return null;
      end if;
      raise exception 'snapshots are append-only: delete the device to delete its snapshots, or prune (POST /api/admin/dut/snapshots/prune)' using errcode = 'P0001';
    end $$`.execute(db);
  await sql`drop trigger snapshot_rows_no_delete on snapshot_rows`.execute(db);
  await sql`create trigger snapshot_rows_no_delete before delete on snapshot_rows
    for each statement execute function snapshot_rows_delete_guard()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger snapshot_rows_no_delete on snapshot_rows`.execute(db);
  await sql`create trigger snapshot_rows_no_delete before delete on snapshot_rows
    for each row execute function snapshots_append_only()`.execute(db);
  await sql`drop function snapshot_rows_delete_guard()`.execute(db);
}
