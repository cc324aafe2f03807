// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// Issue 53: the embedded database announces every committed change of `table_versions` (migration 0010) on
// the channel `dutlab_table_versions`, so that the service, the only process that can write to its PGlite data
// directory, knows the device list's version without reading it before every answer (core/src/db/versions.ts,
// core/src/http/list_cache.ts). Only where the session sets `dutlab.notify_versions` to `on`: PGlite's start
// parameters do; on PostgreSQL nothing is sent (several instances and tools write there, so the listing still
// reads the version; a NOTIFY would also take PostgreSQL's notification queue lock at every such commit).
//
// A row trigger on the counter itself, not in `bump_devices_version`, so that every write of a version counts:
// the deferred bump at a change's COMMIT and a backup restore's direct writes alike. A NOTIFY is delivered only
// when its transaction commits, in commit order; the payload is JSON (`{"name", "version"}`, version null for a
// deleted row).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function notify_table_versions() returns trigger language plpgsql as $$
    begin
      if current_setting('dutlab.notify_versions', true) = 'on' then
        if tg_op = 'DELETE' then
          perform pg_notify('dutlab_table_versions', json_build_object('name', old.name, 'version', null)::text);
        else
          perform pg_notify('dutlab_table_versions',
            json_build_object('name', new.name, 'version', new.version::text)::text);
        end if;
      end if;
      return null;
    end $$`.execute(db);
  await sql`
    create trigger table_versions_notify after insert or update or delete on table_versions
    for each row execute function notify_table_versions()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists table_versions_notify on table_versions`.execute(db);
  await sql`drop function if exists notify_table_versions()`.execute(db);
}
