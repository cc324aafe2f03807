// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// Issue 46 point 4: host names are DNS names and compare case-insensitively, so `FW-UPPER` and `fw-upper` are
// one device. A unique index on lower(hostname) would fail on a registry that already holds both, and
// neither row may be lost, so each device gets a `hostname_case_slot`: 0 for every device, and 1, 2, … for
// the later devices (by creation) of a group that already clashed. The index is unique on
// (lower(hostname), hostname_case_slot): a new device, or a renamed one, takes slot 0 and so clashes with the
// first of its group (409 naming it), while the rows of an old clash are all kept until an operator renames
// or deletes one. Renaming a device puts it back in slot 0 (a trigger, whoever writes). The clashes left
// are listed at every start (devices/hostname_clashes.ts).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table devices add column hostname_case_slot smallint not null default 0`.execute(db);
  await sql`update devices d set hostname_case_slot = c.slot
    from (select id, row_number() over (partition by lower(hostname) order by created_at, id) - 1 as slot
      from devices) c
    where d.id = c.id and c.slot > 0`.execute(db);
  // The update queued the devices' deferred triggers (the version bump, migration 0010); an index cannot be
  // built on a table with pending trigger events, so they run now.
  await sql`set constraints all immediate`.execute(db);
  await sql`create unique index devices_hostname_ci on devices (lower(hostname), hostname_case_slot)`
    .execute(db);
  await sql`create function devices_hostname_case_slot_reset() returns trigger language plpgsql as $$
    begin
      new.hostname_case_slot := 0;
      return new;
    end $$`.execute(db);
  await sql`create trigger devices_hostname_case_slot_reset before update of hostname on devices
    for each row when (old.hostname is distinct from new.hostname and old.hostname_case_slot <> 0)
    execute function devices_hostname_case_slot_reset()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists devices_hostname_case_slot_reset on devices`.execute(db);
  await sql`drop function if exists devices_hostname_case_slot_reset()`.execute(db);
  await sql`drop index if exists devices_hostname_ci`.execute(db);
  await sql`alter table devices drop column if exists hostname_case_slot`.execute(db);
}
