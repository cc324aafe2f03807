// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// The append-only guard on the narrow layout (migration 2026_11_25_0017). `snapshots_append_only` lets a row
// go when it fires at trigger depth 2 or more (a device's cascade). Since 0017 two other paths reach
// `snapshot_rows` at that depth, so they deleted snapshots that nothing may delete:
// - `delete from snapshots` (the view): its INSTEAD OF trigger deletes from `snapshot_rows` at depth 2. It now
//   checks the guard's own condition first (a running prune named by `dutlab.snapshot_prune`); the prune
//   itself deletes from `snapshot_rows` directly (core/src/snapshots/prune.ts).
// - `delete from snapshot_series`: its cascade reaches `snapshot_rows` at depth 2. A series now goes only by
//   its device's cascade (its own trigger then fires at depth 2).
const REFUSED =
  "snapshots are append-only: delete the device to delete its snapshots, or prune (POST /api/admin/dut/snapshots/prune)";

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create or replace function snapshots_view_delete() returns trigger language plpgsql as $$
    declare
      prune text;
    begin
      prune := current_setting('dutlab.snapshot_prune', true);
      if not (prune ~ '^[0-9]{1,18}$'
        and exists (select 1 from snapshot_prunes where id = prune::bigint and status = 'running')) then
        raise exception '${sql.raw(REFUSED)}' using errcode = 'P0001';
      end if;
      delete from snapshot_rows where id = old.id;
      if not found then
        delete from snapshots_legacy where id = old.id;
        if not found then
          return null;
        end if;
      end if;
      return old;
    end $$`.execute(db);
  await sql`
    create function snapshot_series_no_delete() returns trigger language plpgsql as $$
    begin
      if pg_trigger_depth() >= 2 then
        return old;
      end if;
      raise exception '${sql.raw(REFUSED)}' using errcode = 'P0001';
    end $$`.execute(db);
  await sql`create trigger snapshot_series_no_delete before delete on snapshot_series
    for each row execute function snapshot_series_no_delete()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger snapshot_series_no_delete on snapshot_series`.execute(db);
  await sql`drop function snapshot_series_no_delete()`.execute(db);
  await sql`
    create or replace function snapshots_view_delete() returns trigger language plpgsql as $$
    begin
      delete from snapshot_rows where id = old.id;
      if not found then
        delete from snapshots_legacy where id = old.id;
        if not found then
          return null;
        end if;
      end if;
      return old;
    end $$`.execute(db);
}
