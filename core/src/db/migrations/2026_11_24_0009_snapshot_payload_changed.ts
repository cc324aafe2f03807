// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// The change history (docs/polling.md "Diffs and change history") lists the polls whose payload changed. Found by
// reading a device's snapshots newest first, its first page cost grew with the polls since the last change:
// a million snapshots of a device whose payload never changes were a million rows read to answer "no change".
// `payload_changed` records at write time whether a snapshot's payload hash differs from the one of the
// snapshot just before it (same device and label; false for the first), and a partial index holds only those
// rows, so a page reads the hash changes and nothing else. A trigger sets it, so every writer (the poller, a
// test, a bench seeding rows) gets it right without knowing about it.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table snapshots add column payload_changed boolean not null default false`.execute(db);
  // Snapshots are append-only (snapshots_no_update, migration 0001). The backfill writes only the derived
  // marker, never what was collected, so the guard is lifted for this one statement and put back in the same
  // transaction.
  await sql`alter table snapshots disable trigger snapshots_no_update`.execute(db);
  await sql`
    update snapshots s set payload_changed = true
    from (
      select id, payload_sha256,
        lag(payload_sha256) over (partition by device_id, endpoint_label order by id) as prev_sha
      from snapshots
    ) w
    where w.id = s.id and w.prev_sha is not null and w.prev_sha <> w.payload_sha256`.execute(db);
  await sql`alter table snapshots enable trigger snapshots_no_update`.execute(db);
  // The previous snapshot is found on snapshots_device_label_id (device_id, endpoint_label, id desc).
  await sql`
    create function snapshots_payload_changed() returns trigger language plpgsql as $$
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
    create trigger snapshots_payload_changed before insert on snapshots
    for each row execute function snapshots_payload_changed()`.execute(db);
  await sql`
    create index snapshots_device_changed on snapshots (device_id, id desc) where payload_changed`
    .execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index snapshots_device_changed`.execute(db);
  await sql`drop trigger snapshots_payload_changed on snapshots`.execute(db);
  await sql`drop function snapshots_payload_changed()`.execute(db);
  await sql`alter table snapshots drop column payload_changed`.execute(db);
}
