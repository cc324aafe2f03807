// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// Issue 21: named API tokens with roles (only the SHA-256 of a token is stored), the append-only audit log
// of state-changing requests, and the bounded window of live events that SSE clients resume from.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable("api_tokens")
    .addColumn("id", "uuid", (c) => c.primaryKey())
    .addColumn("name", "text", (c) => c.notNull().unique())
    .addColumn("role", "text", (c) => c.notNull().check(sql`role in ('admin', 'operator', 'viewer')`))
    .addColumn("token_sha256", "text", (c) => c.notNull().unique())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("revoked_at", "timestamptz")
    .execute();

  await db.schema.createTable("audit_log")
    .addColumn("id", "bigint", (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn("at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("token_name", "text")
    .addColumn("role", "text")
    .addColumn("method", "text", (c) => c.notNull())
    .addColumn("route", "text", (c) => c.notNull())
    .addColumn("target_id", "text")
    .addColumn("status", "integer", (c) => c.notNull())
    .addColumn("outcome", "text", (c) => c.notNull())
    .addColumn("request_id", "text", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("audit_log_token_id").on("audit_log").columns(["token_name", "id desc"])
    .execute();
  await sql`
    create function audit_log_append_only() returns trigger language plpgsql as $$
    begin
      raise exception 'the audit log is append-only: % refused', tg_op using errcode = 'P0001';
    end $$`.execute(db);
  await sql`create trigger audit_log_no_change before update or delete on audit_log
    for each row execute function audit_log_append_only()`.execute(db);
  await sql`create trigger audit_log_no_truncate before truncate on audit_log
    for each statement execute function audit_log_append_only()`.execute(db);

  await db.schema.createTable("events")
    .addColumn("id", "bigint", (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn("at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("data", "text", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("events_at").on("events").column("at").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("events").execute();
  await db.schema.dropTable("audit_log").execute();
  await sql`drop function if exists audit_log_append_only()`.execute(db);
  await db.schema.dropTable("api_tokens").execute();
}
