// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// Issue 50, NetBox as the lab's source of truth (docs/netbox.md).
//
// - `netbox_syncs`: the provenance of every import (`lab from-netbox`): NetBox's URL, the filters, NetBox's
//   version (`/api/status/`), the time, the SHA-256 over the fetched answers, and the counts. Append-only.
// - `netbox_journal`: the write-back of a finished run, one row per device of the run: posted (with NetBox's
//   journal entry id) or failed (with the reason and the attempts), so a refusal stays visible and is retried.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table netbox_syncs (
    id text primary key,
    lab text not null,
    netbox_url text not null,
    filters text not null,
    netbox_version text,
    fetched_at timestamptz not null,
    answers_sha256 text not null,
    pages integer not null,
    devices integer not null,
    mapped integer not null,
    unmapped integer not null
  )`.execute(db);
  await sql`create index netbox_syncs_fetched_at on netbox_syncs (fetched_at desc)`.execute(db);
  await sql`create table netbox_journal (
    execution_id text not null,
    hostname text not null,
    netbox_device_id integer,
    status text not null check (status in ('posted', 'failed')),
    attempts integer not null default 0,
    last_error text,
    journal_entry_id integer,
    updated_at timestamptz not null default now(),
    primary key (execution_id, hostname)
  )`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists netbox_journal`.execute(db);
  await sql`drop table if exists netbox_syncs`.execute(db);
}
