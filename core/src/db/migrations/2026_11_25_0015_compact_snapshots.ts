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
//
// Still append-only: snapshots_append_only (migrations 0001, 0011, 0014, with its `dutlab.snapshot_prune`
// clause) is not redefined here.
export async function up(db: Kysely<any>): Promise<void> {
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
