// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// The change history reads only the polls whose payload hash changed (`payload_changed`, migration 0009). A
// label whose volatile members move on every poll (an uptime in `system_info`) changes its hash on every poll,
// so a device with such a label still had every poll read and compared to find a real change. The writer now
// also records a hash of the payload without the adapter's volatile paths (`stable_sha256`, computed by the
// poll cycle, which knows the adapter; the pattern set is part of what is hashed, so hashes made under two
// different sets never compare equal), and the insert trigger compares it with the one of the snapshot before:
// `stable_changed` is true for a real change, false when only volatile paths moved (or nothing), null when
// either hash is unknown (a writer that did not compute it, rows written before this migration). The change
// history reads only rows that are not known to be volatile-only. Existing rows stay null: they are read and
// compared as before, so nothing is backfilled.
//
// A `false` is only as good as the pattern set it was computed with. `volatile_path_sets` records, per vendor
// and label, the set the stored flags were computed with; at start-up a changed set forgets the `false` flags
// of that vendor and label (core/src/snapshots/stable.ts). Snapshots stay append-only: the guard now lets
// through exactly one kind of UPDATE, the one that sets `stable_changed` to null and changes nothing else.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table snapshots add column stable_sha256 text null`.execute(db);
  await sql`alter table snapshots add column stable_changed boolean null`.execute(db);
  await sql`
    create table volatile_path_sets (
      vendor text not null,
      endpoint_label text not null,
      patterns text not null,
      primary key (vendor, endpoint_label)
    )`.execute(db);
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
  await sql`
    create or replace function snapshots_payload_changed() returns trigger language plpgsql as $$
    declare
      prev_sha text;
      prev_stable text;
    begin
      select p.payload_sha256, p.stable_sha256 into prev_sha, prev_stable from snapshots p
        where p.device_id = new.device_id and p.endpoint_label = new.endpoint_label and p.id < new.id
        order by p.id desc limit 1;
      new.payload_changed := prev_sha is not null and prev_sha <> new.payload_sha256;
      new.stable_changed := case
        when not new.payload_changed then false
        when prev_stable is null or new.stable_sha256 is null then null
        else prev_stable <> new.stable_sha256
      end;
      return new;
    end $$`.execute(db);
  await sql`
    create index snapshots_device_stable_changed on snapshots (device_id, id desc)
    where payload_changed and stable_changed is not false`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index snapshots_device_stable_changed`.execute(db);
  await sql`
    create or replace function snapshots_payload_changed() returns trigger language plpgsql as $$
    declare
      prev_sha text;
    begin
      select p.payload_sha256 into prev_sha from snapshots p
        where p.device_id = new.device_id and p.endpoint_label = new.endpoint_label and p.id < new.id
        order by p.id desc limit 1;
      new.payload_changed := prev_sha is not null and prev_sha <> new.payload_sha256;
      return new;
    end $$`.execute(db);
  await sql`
    create or replace function snapshots_append_only() returns trigger language plpgsql as $$
    begin
      if tg_op = 'UPDATE' then
        raise exception 'snapshots are append-only: UPDATE refused' using errcode = 'P0001';
      end if;
      if pg_trigger_depth() < 2 then
        raise exception 'snapshots are append-only: delete the device to delete its snapshots' using errcode = 'P0001';
      end if;
      return old;
    end $$`.execute(db);
  await sql`drop table volatile_path_sets`.execute(db);
  await sql`alter table snapshots drop column stable_changed`.execute(db);
  await sql`alter table snapshots drop column stable_sha256`.execute(db);
}
