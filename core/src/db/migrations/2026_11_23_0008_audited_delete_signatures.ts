// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// Migration 0006 (report signatures, append-only) came after 0005 (the audited delete of a finished run), so
// `dutlab_delete_finished_run` stopped at the signatures' foreign key. Now the audited delete also removes the
// run's signatures, and only it may: the append-only trigger lets a DELETE through for the one run that the
// audited function is deleting (the same transaction-local setting test_runs' trigger honours).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create or replace function report_signatures_append_only() returns trigger language plpgsql as $$
    begin
      if tg_op = 'DELETE' and tg_table_name = 'report_signatures' then
        if current_setting('dutlab.audited_run_delete', true) = old.execution_id::text then
          return old;
        end if;
      end if;
      raise exception 'report signatures are append-only: % refused', tg_op using errcode = 'P0001';
    end $$`.execute(db);
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
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    create or replace function report_signatures_append_only() returns trigger language plpgsql as $$
    begin
      raise exception 'report signatures are append-only: % refused', tg_op using errcode = 'P0001';
    end $$`.execute(db);
}
