// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// Issue 31: an operator's prune of old snapshots (core/src/snapshots/prune.ts). Snapshots stay append-only;
// the guard of migration 0001 (updated by 0011) now also lets a DELETE through when the transaction names, in
// the transaction-local setting `dutlab.snapshot_prune`, a prune recorded in `snapshot_prunes` as running (the
// audited-delete pattern of migration 0008). `snapshot_prunes` is the audit trail and the resumable state of
// every prune: who, the policy, the cut-off, how far it got (`cursor_id`) and what it deleted. A row is never
// deleted; a finished row is never changed; at most one prune runs at a time.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table snapshot_prunes (
      id bigint primary key generated always as identity,
      actor text not null check (length(trim(actor)) > 0),
      policy jsonb not null,
      cutoff timestamptz not null,
      end_id bigint not null,
      cursor_id bigint not null default 0,
      status text not null check (status in ('running', 'finished')),
      started_at timestamptz not null default now(),
      heartbeat_at timestamptz not null default now(),
      finished_at timestamptz,
      batches integer not null default 0,
      deleted_snapshots bigint not null default 0,
      snapshot_bytes bigint not null default 0,
      freed_payloads bigint not null default 0,
      freed_payload_bytes bigint not null default 0,
      counts jsonb not null default '{}'::jsonb
    )`.execute(db);
  await sql`create unique index snapshot_prunes_one_running on snapshot_prunes ((true)) where status = 'running'`
    .execute(db);
  await sql`
    create function snapshot_prunes_audit() returns trigger language plpgsql as $$
    begin
      if tg_op = 'UPDATE' and old.status = 'running'
        and (new.id, new.actor, new.policy, new.cutoff, new.end_id, new.started_at)
          is not distinct from (old.id, old.actor, old.policy, old.cutoff, old.end_id, old.started_at)
        and new.cursor_id >= old.cursor_id then
        return new;
      end if;
      raise exception 'snapshot prunes are an audit trail: % refused', tg_op using errcode = 'P0001';
    end $$`.execute(db);
  await sql`create trigger snapshot_prunes_guard before update or delete on snapshot_prunes
    for each row execute function snapshot_prunes_audit()`.execute(db);
  await sql`create trigger snapshot_prunes_no_truncate before truncate on snapshot_prunes
    for each statement execute function snapshot_prunes_audit()`.execute(db);

  await sql`
    create or replace function snapshots_append_only() returns trigger language plpgsql as $$
    declare
      prune text;
    begin
      if tg_op = 'UPDATE' then
        if new.stable_changed is null and old.stable_changed is not null
          and to_jsonb(new) - 'stable_changed' = to_jsonb(old) - 'stable_changed' then
          return new;
        end if;
        raise exception 'snapshots are append-only: UPDATE refused' using errcode = 'P0001';
      end if;
      if pg_trigger_depth() >= 2 then
        return old;
      end if;
      prune := current_setting('dutlab.snapshot_prune', true);
      if prune ~ '^[0-9]{1,18}$'
        and exists (select 1 from snapshot_prunes where id = prune::bigint and status = 'running') then
        return old;
      end if;
      raise exception 'snapshots are append-only: delete the device to delete its snapshots, or prune (POST /api/admin/dut/snapshots/prune)' using errcode = 'P0001';
    end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    create or replace function snapshots_append_only() returns trigger language plpgsql as $$
    begin
      if tg_op = 'UPDATE' then
        if new.stable_changed is null and old.stable_changed is not null
          and to_jsonb(new) - 'stable_changed' = to_jsonb(old) - 'stable_changed' then
          return new;
        end if;
        raise exception 'snapshots are append-only: UPDATE refused' using errcode = 'P0001';
      end if;
      if pg_trigger_depth() < 2 then
        raise exception 'snapshots are append-only: delete the device to delete its snapshots' using errcode = 'P0001';
      end if;
      return old;
    end $$`.execute(db);
  await sql`drop table if exists snapshot_prunes`.execute(db);
  await sql`drop function if exists snapshot_prunes_audit()`.execute(db);
}
