// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// A finished run and its frozen report are evidence: once `status` is `finished`, the row is immutable.
// UPDATE of a finished row is refused (the one allowed UPDATE is the finish itself, active -> finished);
// DELETE of a finished row is refused except through `dutlab_delete_finished_run(execution_id, reason,
// actor)`, which first writes an audit row into `run_deletions` (append-only) and lets only that run go;
// TRUNCATE is refused. A run's alerts follow its run: UPDATE is refused, INSERT and DELETE are refused once
// the run is finished (except the audited delete). New columns for the report: the lab's name and the
// customer (licensee) recorded at start.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("test_runs").addColumn("lab_name", "text").execute();
  await db.schema.alterTable("test_runs").addColumn("customer", "text").execute();

  await db.schema.createTable("run_deletions")
    .addColumn("id", "bigint", (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn("execution_id", "uuid", (c) => c.notNull())
    .addColumn("report_sha256", "text")
    .addColumn("reason", "text", (c) => c.notNull().check(sql`length(trim(reason)) > 0`))
    .addColumn("actor", "text", (c) => c.notNull().check(sql`length(trim(actor)) > 0`))
    .addColumn("deleted_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await sql`
    create function test_runs_finished_immutable() returns trigger language plpgsql as $$
    begin
      if tg_op = 'TRUNCATE' then
        raise exception 'test runs are evidence: TRUNCATE refused' using errcode = 'P0001';
      end if;
      if old.status = 'finished' then
        if tg_op = 'DELETE'
           and current_setting('dutlab.audited_run_delete', true) = old.execution_id::text then
          return old;
        end if;
        raise exception 'test run % is finished and immutable: % refused', old.execution_id, tg_op
          using errcode = 'P0001';
      end if;
      if tg_op = 'DELETE' then return old; end if;
      return new;
    end $$`.execute(db);
  await sql`create trigger test_runs_finished_no_update before update on test_runs
    for each row execute function test_runs_finished_immutable()`.execute(db);
  await sql`create trigger test_runs_finished_no_delete before delete on test_runs
    for each row execute function test_runs_finished_immutable()`.execute(db);
  await sql`create trigger test_runs_no_truncate before truncate on test_runs
    for each statement execute function test_runs_finished_immutable()`.execute(db);

  await sql`
    create function run_alerts_frozen() returns trigger language plpgsql as $$
    declare
      the_run uuid;
      run_status text;
    begin
      if tg_op = 'TRUNCATE' then
        raise exception 'run alerts are evidence: TRUNCATE refused' using errcode = 'P0001';
      end if;
      if tg_op = 'UPDATE' then
        raise exception 'run alerts are append-only: UPDATE refused' using errcode = 'P0001';
      end if;
      the_run := case when tg_op = 'INSERT' then new.execution_id else old.execution_id end;
      select status into run_status from test_runs where execution_id = the_run;
      if run_status = 'finished' then
        if tg_op = 'DELETE' and current_setting('dutlab.audited_run_delete', true) = the_run::text then
          return old;
        end if;
        raise exception 'test run % is finished: its alerts are immutable (% refused)', the_run, tg_op
          using errcode = 'P0001';
      end if;
      if tg_op = 'DELETE' then return old; end if;
      return new;
    end $$`.execute(db);
  await sql`create trigger run_alerts_frozen_row before insert or update or delete on run_alerts
    for each row execute function run_alerts_frozen()`.execute(db);
  await sql`create trigger run_alerts_no_truncate before truncate on run_alerts
    for each statement execute function run_alerts_frozen()`.execute(db);

  await sql`
    create function run_deletions_append_only() returns trigger language plpgsql as $$
    begin
      raise exception 'run deletions are an audit trail: % refused', tg_op using errcode = 'P0001';
    end $$`.execute(db);
  await sql`create trigger run_deletions_no_change before update or delete on run_deletions
    for each row execute function run_deletions_append_only()`.execute(db);
  await sql`create trigger run_deletions_no_truncate before truncate on run_deletions
    for each statement execute function run_deletions_append_only()`.execute(db);

  // The one documented way to delete a finished run: the audit row and the deletion in one statement.
  await sql`
    create function dutlab_delete_finished_run(p_execution_id uuid, p_reason text, p_actor text)
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
      delete from test_runs where execution_id = p_execution_id;
      perform set_config('dutlab.audited_run_delete', '', true);
      return audit_id;
    end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function if exists dutlab_delete_finished_run(uuid, text, text)`.execute(db);
  await sql`drop trigger if exists run_alerts_no_truncate on run_alerts`.execute(db);
  await sql`drop trigger if exists run_alerts_frozen_row on run_alerts`.execute(db);
  await sql`drop function if exists run_alerts_frozen()`.execute(db);
  for (const t of ["test_runs_no_truncate", "test_runs_finished_no_delete", "test_runs_finished_no_update"]) {
    await sql`drop trigger if exists ${sql.raw(t)} on test_runs`.execute(db);
  }
  await sql`drop function if exists test_runs_finished_immutable()`.execute(db);
  await db.schema.dropTable("run_deletions").ifExists().execute();
  await sql`drop function if exists run_deletions_append_only()`.execute(db);
  await db.schema.alterTable("test_runs").dropColumn("customer").execute();
  await db.schema.alterTable("test_runs").dropColumn("lab_name").execute();
}
