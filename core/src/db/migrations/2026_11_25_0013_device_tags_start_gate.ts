// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// Issue 29, points 3 and 4.
//
// - `devices.tags`: the operator's tags of a device (docs/devices.md), stored folded and sorted. The device
//   list filters with `tags @> array[...]` (every tag asked for), which the GIN index serves; pre-flight reads
//   the enabled devices' tags with the rows it reads anyway.
// - `test_runs.start_gate_json`: how a run's start was gated (null for runs started before this migration:
//   ungated, as every start was then). Written at the insert; the finished-run triggers keep it frozen.
// - `audit_log.detail`: a short structured note a route adds to its audit entry (today only a run started
//   over a failed pre-flight: the override and its reason). Null for every other entry and for older ones.
//   Adding a nullable column rewrites no row, so the table's append-only triggers are not involved.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table devices add column tags text[] not null default '{}'`.execute(db);
  await sql`create index devices_tags on devices using gin (tags)`.execute(db);
  await sql`alter table test_runs add column start_gate_json jsonb`.execute(db);
  await sql`alter table audit_log add column detail text`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table audit_log drop column if exists detail`.execute(db);
  await sql`alter table test_runs drop column if exists start_gate_json`.execute(db);
  await sql`drop index if exists devices_tags`.execute(db);
  await sql`alter table devices drop column if exists tags`.execute(db);
}
