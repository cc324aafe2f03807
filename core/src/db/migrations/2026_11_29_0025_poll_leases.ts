// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// Issue 48: several poll instances share the devices through per-device leases (docs/polling.md "Several
// poll instances"). One schedule row per device, made on first claim: the lease's owner (a poll instance id,
// null when released), its expiry, and an epoch that goes up each time the device is claimed, so that a
// writer whose lease moved on is refused (fencing). `slot_at` is the device's `last_poll_at` when it was
// claimed: the due slot the lease is for (the write is refused when the slot was already polled).
// `poll_instances` lists the instances seen recently (`deno task poll-instances`).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table device_leases (
    device_id uuid primary key references devices(id) on delete cascade,
    owner text,
    expires_at timestamptz,
    epoch bigint not null default 0,
    slot_at timestamptz,
    claimed_at timestamptz
  )`.execute(db);
  await sql`create index device_leases_owner on device_leases (owner) where owner is not null`.execute(db);
  await sql`create table poll_instances (
    id text primary key,
    host text not null,
    pid integer not null,
    started_at timestamptz not null default now(),
    seen_at timestamptz not null default now(),
    leases integer not null default 0,
    claims bigint not null default 0,
    takeovers bigint not null default 0,
    fenced bigint not null default 0
  )`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists poll_instances`.execute(db);
  await sql`drop table if exists device_leases`.execute(db);
}
