// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// Issue 52, testbeds and reservations (docs/reservations.md).
//
// - `testbeds`: a named set of devices, kept as its selector (ids, hostnames, tags, roles); resolved to
//   devices when it is reserved. `managed_by`: the lab file that declares it (null: made through the API).
// - `reservations`: one row per request, whatever became of it: `queued` (waiting until `wait_until`),
//   `held` (its lease ends at `expires_at` unless renewed), then `released`, `expired` or `timed_out`, with
//   `end_reason` saying why. Rows are kept (the calendar and the audit read them).
// - `reservation_holds`: one row per device a held reservation holds. Its primary key is the device: two
//   holders of one device cannot both commit, whatever instance decided it (the grant is one transaction).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table testbeds (
    name text primary key,
    selector jsonb not null,
    description text,
    managed_by text,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`.execute(db);
  await sql`create table reservations (
    id uuid primary key,
    holder text not null,
    purpose text,
    testbed text,
    device_ids uuid[] not null,
    priority integer not null default 0,
    state text not null check (state in ('queued','held','released','expired','timed_out')),
    lease_seconds integer not null,
    requested_at timestamptz not null,
    wait_until timestamptz,
    granted_at timestamptz,
    expires_at timestamptz,
    ended_at timestamptz,
    end_reason text,
    execution_id uuid,
    created_by text
  )`.execute(db);
  await sql`create index reservations_open on reservations (state, priority desc, requested_at)
    where state in ('queued','held')`.execute(db);
  await sql`create table reservation_holds (
    device_id uuid primary key references devices(id) on delete cascade,
    reservation_id uuid not null references reservations(id)
  )`.execute(db);
  await sql`create index reservation_holds_reservation on reservation_holds (reservation_id)`.execute(db);
  // The device list shows each device's reservation (holder, until): a change of a hold or of a lease raises
  // the devices' version, so the cached list is rebuilt (http/list_cache.ts).
  await sql`create constraint trigger reservation_holds_version after insert or delete on reservation_holds
    deferrable initially deferred for each row execute function bump_devices_version()`.execute(db);
  await sql`create constraint trigger reservations_version after update of expires_at, holder
    on reservations deferrable initially deferred for each row execute function bump_devices_version()`
    .execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists reservations_version on reservations`.execute(db);
  await sql`drop table if exists reservation_holds`.execute(db);
  await sql`drop table if exists reservations`.execute(db);
  await sql`drop table if exists testbeds`.execute(db);
}
