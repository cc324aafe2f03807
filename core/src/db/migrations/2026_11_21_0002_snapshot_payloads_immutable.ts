// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// A snapshot's content lives in snapshot_payloads (content-addressed by its SHA-256): an UPDATE of a
// payload would change every snapshot that refers to it, so it is refused like an UPDATE of a snapshot.
// TRUNCATE skips row triggers, so it is refused on snapshots too (the only deletion stays the cascade
// from deleting a device; unreferenced payloads may still be deleted).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function snapshot_payloads_immutable() returns trigger language plpgsql as $$
    begin
      raise exception 'snapshot payloads are immutable: UPDATE refused' using errcode = 'P0001';
    end $$`.execute(db);
  await sql`create trigger snapshot_payloads_no_update before update on snapshot_payloads
    for each row execute function snapshot_payloads_immutable()`.execute(db);
  await sql`
    create function snapshots_no_truncate() returns trigger language plpgsql as $$
    begin
      raise exception 'snapshots are append-only: TRUNCATE refused' using errcode = 'P0001';
    end $$`.execute(db);
  await sql`create trigger snapshots_no_truncate before truncate on snapshots
    for each statement execute function snapshots_no_truncate()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists snapshots_no_truncate on snapshots`.execute(db);
  await sql`drop function if exists snapshots_no_truncate()`.execute(db);
  await sql`drop trigger if exists snapshot_payloads_no_update on snapshot_payloads`.execute(db);
  await sql`drop function if exists snapshot_payloads_immutable()`.execute(db);
}
