// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// `snapshot_latest_consistent` (migration 0021) ran its PL/pgSQL function on every update of `snapshot_latest`
// (every poll moves the pointer of each label it stored) to clear the hash and time in the one case where the
// pointer moves without a new time. The condition moves into the trigger's WHEN clause, evaluated without
// calling the function; the function is the same. (The snapshot version triggers of migration 0019 stay
// deferred row triggers: raised at commit, the version's row lock cannot close a cycle with the payload locks
// a prune and a poll take, which raising it at a statement's end could.)
export async function up(db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists snapshot_latest_consistent on snapshot_latest`.execute(db);
  await sql`create trigger snapshot_latest_consistent before update on snapshot_latest for each row
    when (new.snapshot_id is distinct from old.snapshot_id and new.collected_at is not distinct from old.collected_at)
    execute function snapshot_latest_keep_consistent()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists snapshot_latest_consistent on snapshot_latest`.execute(db);
  await sql`create trigger snapshot_latest_consistent before update on snapshot_latest
    for each row execute function snapshot_latest_keep_consistent()`.execute(db);
}
