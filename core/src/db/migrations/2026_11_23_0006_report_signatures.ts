// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// Report signing (docs/reports.md "Signatures"). `report_signing_keys` lists every public key the service has signed
// with (the private key is configuration, never stored here); a rotation adds a row and closes the validity
// of the previous one, so the only UPDATE allowed is setting `valid_until` once. `report_signatures` holds
// one DSSE envelope per (report, key), append-only: UPDATE, DELETE and TRUNCATE are refused.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable("report_signing_keys")
    .addColumn("key_id", "text", (c) => c.primaryKey())
    .addColumn("algorithm", "text", (c) => c.notNull().check(sql`algorithm = 'Ed25519'`))
    .addColumn("public_key_pem", "text", (c) => c.notNull())
    .addColumn("public_key_x", "text", (c) => c.notNull())
    .addColumn("valid_from", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("valid_until", "timestamptz")
    .execute();
  await sql`
    create function report_signing_keys_guard() returns trigger language plpgsql as $$
    begin
      if tg_op = 'UPDATE' and old.valid_until is null and new.valid_until is not null
        and (new.key_id, new.algorithm, new.public_key_pem, new.public_key_x, new.valid_from)
          is not distinct from (old.key_id, old.algorithm, old.public_key_pem, old.public_key_x, old.valid_from)
      then
        return new;
      end if;
      raise exception 'report signing keys are kept for verification: % refused', tg_op using errcode = 'P0001';
    end $$`.execute(db);
  await sql`create trigger report_signing_keys_guard before update or delete on report_signing_keys
    for each row execute function report_signing_keys_guard()`.execute(db);

  await db.schema.createTable("report_signatures")
    .addColumn("id", "bigint", (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn("execution_id", "uuid", (c) => c.notNull().references("test_runs.execution_id"))
    .addColumn("key_id", "text", (c) => c.notNull().references("report_signing_keys.key_id"))
    .addColumn("envelope_json", "text", (c) => c.notNull())
    .addColumn("signed_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint("report_signatures_one_per_key", ["execution_id", "key_id"])
    .execute();
  await sql`
    create function report_signatures_append_only() returns trigger language plpgsql as $$
    begin
      raise exception 'report signatures are append-only: % refused', tg_op using errcode = 'P0001';
    end $$`.execute(db);
  await sql`create trigger report_signatures_no_change before update or delete on report_signatures
    for each row execute function report_signatures_append_only()`.execute(db);
  await sql`create trigger report_signatures_no_truncate before truncate on report_signatures
    for each statement execute function report_signatures_append_only()`.execute(db);
  await sql`create trigger report_signing_keys_no_truncate before truncate on report_signing_keys
    for each statement execute function report_signatures_append_only()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("report_signatures").ifExists().execute();
  await db.schema.dropTable("report_signing_keys").ifExists().execute();
  await sql`drop function if exists report_signatures_append_only()`.execute(db);
  await sql`drop function if exists report_signing_keys_guard()`.execute(db);
}
