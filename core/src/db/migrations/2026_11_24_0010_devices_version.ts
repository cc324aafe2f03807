// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// A version number of the devices table that every committed change raises, so the device list can be
// answered from its JSON kept in memory after one primary-key read (docs/http-api.md "Reads, paging and filters", BENCHMARKS.md
// section 8). The counter is raised by a deferred constraint trigger: it runs at COMMIT, after every other lock
// of the transaction is held, so taking the counter's row lock last cannot deadlock with the poll store's
// `SELECT … FOR UPDATE` of device rows or with a PATCH. Once per transaction (a transaction-local setting
// remembers it), whatever the number of rows changed. Rows changed by any instance or tool count: the
// trigger, not the application, raises it.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table table_versions (name text primary key, version bigint not null default 0)`.execute(
    db,
  );
  await sql`insert into table_versions (name, version) values ('devices', 0)`.execute(db);
  await sql`
    create function bump_devices_version() returns trigger language plpgsql as $$
    begin
      if current_setting('dutlab.devices_version_raised', true) is distinct from txid_current()::text then
        update table_versions set version = version + 1 where name = 'devices';
        perform set_config('dutlab.devices_version_raised', txid_current()::text, true);
      end if;
      return null;
    end $$`.execute(db);
  await sql`
    create constraint trigger devices_version after insert or update or delete on devices
    deferrable initially deferred for each row execute function bump_devices_version()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists devices_version on devices`.execute(db);
  await sql`drop function if exists bump_devices_version()`.execute(db);
  await sql`drop table if exists table_versions`.execute(db);
}
