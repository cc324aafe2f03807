// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// Signed PDFs and the test-result attestation (issue 30, docs/reports.md "Signatures" and "PDF").
//
// - `pdf_signing_certificates`: every X.509 certificate `serve` has signed PDFs with (the key is
//   configuration, never stored). Like `report_signing_keys`, the only UPDATE allowed is closing
//   `valid_until` once (rotation); DELETE and TRUNCATE are refused, so a PDF signed before a rotation names
//   a certificate that stays listed.
// - `run_attestations`: further DSSE envelopes about a finished run besides the report's own
//   (`report_signatures`), one per (run, predicate type, key): today the in-toto test-result Statement.
//   Append-only like `report_signatures`: only the audited delete of a finished run removes them, in its
//   transaction (the same transaction-local setting), so `dutlab_delete_finished_run` now deletes them too.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable("pdf_signing_certificates")
    .addColumn("fingerprint_sha256", "text", (c) => c.primaryKey())
    .addColumn("certificate_pem", "text", (c) => c.notNull())
    .addColumn("subject", "text", (c) => c.notNull())
    .addColumn("issuer", "text", (c) => c.notNull())
    .addColumn("serial_number", "text", (c) => c.notNull())
    .addColumn("algorithm", "text", (c) => c.notNull())
    .addColumn("not_before", "timestamptz", (c) => c.notNull())
    .addColumn("not_after", "timestamptz", (c) => c.notNull())
    .addColumn("valid_from", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("valid_until", "timestamptz")
    .execute();
  await sql`
    create function pdf_signing_certificates_guard() returns trigger language plpgsql as $$
    begin
      if tg_op = 'UPDATE' and old.valid_until is null and new.valid_until is not null
        and (new.fingerprint_sha256, new.certificate_pem, new.subject, new.issuer, new.serial_number,
             new.algorithm, new.not_before, new.not_after, new.valid_from)
          is not distinct from (old.fingerprint_sha256, old.certificate_pem, old.subject, old.issuer,
             old.serial_number, old.algorithm, old.not_before, old.not_after, old.valid_from)
      then
        return new;
      end if;
      raise exception 'PDF signing certificates are kept for verification: % refused', tg_op
        using errcode = 'P0001';
    end $$`.execute(db);
  await sql`create trigger pdf_signing_certificates_guard before update or delete on pdf_signing_certificates
    for each row execute function pdf_signing_certificates_guard()`.execute(db);
  await sql`create trigger pdf_signing_certificates_no_truncate before truncate on pdf_signing_certificates
    for each statement execute function pdf_signing_certificates_guard()`.execute(db);

  await db.schema.createTable("run_attestations")
    .addColumn("id", "bigint", (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn("execution_id", "uuid", (c) => c.notNull().references("test_runs.execution_id"))
    .addColumn("predicate_type", "text", (c) => c.notNull())
    .addColumn("key_id", "text", (c) => c.notNull().references("report_signing_keys.key_id"))
    .addColumn("envelope_json", "text", (c) => c.notNull())
    .addColumn("signed_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint("run_attestations_one_per_key", ["execution_id", "predicate_type", "key_id"])
    .execute();
  await sql`
    create function run_attestations_append_only() returns trigger language plpgsql as $$
    begin
      if tg_op = 'DELETE' and current_setting('dutlab.audited_run_delete', true) = old.execution_id::text then
        return old;
      end if;
      raise exception 'run attestations are append-only: % refused', tg_op using errcode = 'P0001';
    end $$`.execute(db);
  await sql`create trigger run_attestations_no_change before update or delete on run_attestations
    for each row execute function run_attestations_append_only()`.execute(db);
  await sql`create trigger run_attestations_no_truncate before truncate on run_attestations
    for each statement execute function run_attestations_append_only()`.execute(db);

  await sql`
    create or replace function dutlab_delete_finished_run(p_execution_id uuid, p_reason text, p_actor text)
    returns bigint language plpgsql as $$
    declare
      audit_id bigint;
      sha text;
    begin
      select report_sha256 into sha from test_runs where execution_id = p_execution_id and status = 'finished';
      if not found then
        raise exception 'no finished test run %', p_execution_id using errcode = 'P0002';
      end if;
      insert into run_deletions (execution_id, report_sha256, reason, actor)
        values (p_execution_id, sha, p_reason, p_actor) returning id into audit_id;
      perform set_config('dutlab.audited_run_delete', p_execution_id::text, true);
      delete from run_alerts where execution_id = p_execution_id;
      delete from report_signatures where execution_id = p_execution_id;
      delete from run_attestations where execution_id = p_execution_id;
      delete from test_runs where execution_id = p_execution_id;
      perform set_config('dutlab.audited_run_delete', '', true);
      return audit_id;
    end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    create or replace function dutlab_delete_finished_run(p_execution_id uuid, p_reason text, p_actor text)
    returns bigint language plpgsql as $$
    declare
      audit_id bigint;
      sha text;
    begin
      select report_sha256 into sha from test_runs where execution_id = p_execution_id and status = 'finished';
      if not found then
        raise exception 'no finished test run %', p_execution_id using errcode = 'P0002';
      end if;
      insert into run_deletions (execution_id, report_sha256, reason, actor)
        values (p_execution_id, sha, p_reason, p_actor) returning id into audit_id;
      perform set_config('dutlab.audited_run_delete', p_execution_id::text, true);
      delete from run_alerts where execution_id = p_execution_id;
      delete from report_signatures where execution_id = p_execution_id;
      delete from test_runs where execution_id = p_execution_id;
      perform set_config('dutlab.audited_run_delete', '', true);
      return audit_id;
    end $$`.execute(db);
  await db.schema.dropTable("run_attestations").ifExists().execute();
  await db.schema.dropTable("pdf_signing_certificates").ifExists().execute();
  await sql`drop function if exists run_attestations_append_only()`.execute(db);
  await sql`drop function if exists pdf_signing_certificates_guard()`.execute(db);
}
