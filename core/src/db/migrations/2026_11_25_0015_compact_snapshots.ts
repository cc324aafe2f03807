// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// Compact snapshots, first steps (issue 31 point 2; breakdown in BENCHMARKS.md section 3). Measured on
// PostgreSQL with the storage scenario, an unchanged snapshot cost 459 B in the `snapshots` table: 257 B of
// heap (of which 65 B the stable hash, equal to the payload hash for every label without volatile paths) and
// 69 B for `snapshots_device_id`.
//
// 1. `stable_sha256` holds '' (an empty text, 1 B) where it equals the payload hash. The insert trigger stores
//    the marker and reads it back as the payload hash of the snapshot it compares with; null still means "not
//    computed". Every writer gets it without knowing about it. Rows written before keep their full hash, which
//    the trigger reads as before: nothing is rewritten, so the migration is O(1) in the table's size.
// 2. `snapshots_device_id (device_id, id desc)` is dropped. A device's listing without a label is answered
//    from `snapshots_device_label_id (device_id, endpoint_label, id desc)`: the device's labels by a skip scan
//    of that index, then per label its newest rows, merged (core/src/snapshots/store.ts). Deleting a device
//    and the other device-only reads use the same index's prefix. Dropping an index touches the catalog only
//    (a lock held for milliseconds), whatever the table's size.
// 3. The adapter's module name and version (36 B of text in every row) move to `adapter_releases`, one row
//    per module and version, referenced by `snapshots.adapter_release_id` (4 B). A second insert trigger
//    (snapshots_adapter_release, firing before snapshots_payload_changed) finds or adds the release and
//    clears the two text columns, so every writer still gives the module and version. Readers show
//    `coalesce(s.adapter_module, r.module)` (core/src/snapshots/store.ts): rows written before keep their text.
//    The column is added without a default and the foreign key and the check NOT VALID: no row is read or
//    rewritten (existing rows are null and carry the text), new rows are checked.
//
// Still append-only: snapshots_append_only (migrations 0001, 0011, 0014, with its `dutlab.snapshot_prune`
// clause) is not redefined here.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table adapter_releases (
      id integer primary key generated always as identity,
      module text not null,
      version text not null,
      unique (module, version)
    )`.execute(db);
  await sql`alter table snapshots add column adapter_release_id integer null`.execute(db);
  await sql`alter table snapshots add constraint snapshots_adapter_release_fkey
    foreign key (adapter_release_id) references adapter_releases (id) not valid`.execute(db);
  await sql`alter table snapshots alter column adapter_module drop not null,
    alter column adapter_version drop not null`.execute(db);
  await sql`alter table snapshots add constraint snapshots_adapter_known check (adapter_release_id is not null
    or (adapter_module is not null and adapter_version is not null)) not valid`.execute(db);
  await sql`
    create function snapshots_adapter_release() returns trigger language plpgsql as $$
    declare
      rel integer;
    begin
      if new.adapter_module is null or new.adapter_version is null then
        return new;
      end if;
      select r.id into rel from adapter_releases r
        where r.module = new.adapter_module and r.version = new.adapter_version;
      if rel is null then
        insert into adapter_releases (module, version) values (new.adapter_module, new.adapter_version)
          on conflict (module, version) do nothing returning id into rel;
        if rel is null then
          select r.id into rel from adapter_releases r
            where r.module = new.adapter_module and r.version = new.adapter_version;
        end if;
      end if;
      new.adapter_release_id := rel;
      new.adapter_module := null;
      new.adapter_version := null;
      return new;
    end $$`.execute(db);
  await sql`create trigger snapshots_adapter_release before insert on snapshots
    for each row execute function snapshots_adapter_release()`.execute(db);
  await sql`
    create or replace function snapshots_payload_changed() returns trigger language plpgsql as $$
    declare
      prev_sha text;
      prev_stable text;
    begin
      select p.payload_sha256, case when p.stable_sha256 = '' then p.payload_sha256 else p.stable_sha256 end
        into prev_sha, prev_stable from snapshots p
        where p.device_id = new.device_id and p.endpoint_label = new.endpoint_label and p.id < new.id
        order by p.id desc limit 1;
      if new.stable_sha256 = '' then
        new.stable_sha256 := new.payload_sha256;
      end if;
      new.payload_changed := prev_sha is not null and prev_sha <> new.payload_sha256;
      new.stable_changed := case
        when not new.payload_changed then false
        when prev_stable is null or new.stable_sha256 is null then null
        else prev_stable <> new.stable_sha256
      end;
      if new.stable_sha256 = new.payload_sha256 then
        new.stable_sha256 := '';
      end if;
      return new;
    end $$`.execute(db);
  await sql`drop index snapshots_device_id`.execute(db);
}

// The trigger exactly as 2026_11_24_0011 left it, and the index as 2026_11_21_0001 created it. Rows stored
// with the '' marker keep it: the old trigger reads it as a stable hash differing from every other, so the
// first change after a down migration reads as a real change (compared in full by the change history).
export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger snapshots_adapter_release on snapshots`.execute(db);
  await sql`drop function snapshots_adapter_release()`.execute(db);
  // The text back where a row has only the reference (a one-off rewrite: a down is not online), then the
  // columns as 0001 created them.
  await sql`alter table snapshots disable trigger snapshots_no_update`.execute(db);
  await sql`update snapshots s set adapter_module = r.module, adapter_version = r.version
    from adapter_releases r where r.id = s.adapter_release_id`.execute(db);
  await sql`alter table snapshots enable trigger snapshots_no_update`.execute(db);
  await sql`alter table snapshots drop constraint snapshots_adapter_known`.execute(db);
  await sql`alter table snapshots alter column adapter_module set not null,
    alter column adapter_version set not null`.execute(db);
  await sql`alter table snapshots drop column adapter_release_id`.execute(db);
  await sql`drop table adapter_releases`.execute(db);
  await sql`create index snapshots_device_id on snapshots (device_id, id desc)`.execute(db);
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
}
