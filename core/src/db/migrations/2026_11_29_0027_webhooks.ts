// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// Issue 51: webhook subscriptions, the outbox of events (written in the transaction of the change they
// describe), one delivery row per (event, matching subscription), and every attempt of a delivery.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table webhook_subscriptions (
    id text primary key,
    name text not null,
    url text not null,
    format text not null default 'cloudevents',
    event_types text not null,
    filters text not null default '{}',
    allow_http boolean not null default false,
    enabled boolean not null default true,
    secret text not null,
    previous_secret text,
    previous_secret_until timestamptz,
    consecutive_failures integer not null default 0,
    failing boolean not null default false,
    last_success_at timestamptz,
    last_failure_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`.execute(db);
  await sql`create table webhook_events (
    seq bigint generated always as identity primary key,
    id text not null unique,
    type text not null,
    subject text,
    time timestamptz not null,
    data text not null
  )`.execute(db);
  await sql`create table webhook_deliveries (
    id bigint generated always as identity primary key,
    subscription_id text not null references webhook_subscriptions(id) on delete cascade,
    event_id text not null references webhook_events(id),
    state text not null default 'pending',
    attempts integer not null default 0,
    next_at timestamptz not null default now(),
    lease_until timestamptz,
    created_at timestamptz not null default now(),
    finished_at timestamptz,
    last_status integer,
    last_duration_ms integer,
    last_error text,
    last_response text
  )`.execute(db);
  await sql`create index webhook_deliveries_pending on webhook_deliveries (subscription_id, id)
    where state = 'pending'`.execute(db);
  await sql`create index webhook_deliveries_sub on webhook_deliveries (subscription_id, id desc)`.execute(db);
  await sql`create table webhook_attempts (
    id bigint generated always as identity primary key,
    delivery_id bigint not null references webhook_deliveries(id) on delete cascade,
    attempt integer not null,
    at timestamptz not null default now(),
    status integer,
    duration_ms integer not null,
    error text,
    response text
  )`.execute(db);
  await sql`create index webhook_attempts_delivery on webhook_attempts (delivery_id, attempt)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists webhook_attempts`.execute(db);
  await sql`drop table if exists webhook_deliveries`.execute(db);
  await sql`drop table if exists webhook_events`.execute(db);
  await sql`drop table if exists webhook_subscriptions`.execute(db);
}
