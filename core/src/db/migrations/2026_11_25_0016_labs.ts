// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// Issue 35, the lab as code (docs/lab-as-code.md).
//
// - `labs`: one row per lab file applied (its `metadata.name`) and its generation, raised by every apply that
//   changes something. An apply locks the row (`select … for update`) and refuses a plan made on another
//   generation (412), so of two applies from the same generation exactly one commits.
// - `devices.managed_by`: the lab that owns the device (null: registered through the API, owned by no lab).
//   A prune only ever touches rows whose `managed_by` is the pruning lab.
// - `devices.password_fp`: a keyed fingerprint of the password (`<key id>.<HMAC-SHA256>`, the HMAC key derived
//   with HKDF from the credential key named by the id, message = device id and password), so a plan can say
//   whether a credential changed without decrypting or comparing a plaintext. Null for devices registered
//   before this migration: their credential shows as `changed` until the next password write.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table labs (
    name text primary key,
    generation bigint not null default 0,
    updated_at timestamptz not null default now()
  )`.execute(db);
  await sql`alter table devices add column managed_by text`.execute(db);
  await sql`alter table devices add column password_fp text`.execute(db);
  await sql`create index devices_managed_by on devices (managed_by) where managed_by is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists devices_managed_by`.execute(db);
  await sql`alter table devices drop column if exists password_fp`.execute(db);
  await sql`alter table devices drop column if exists managed_by`.execute(db);
  await sql`drop table if exists labs`.execute(db);
}
