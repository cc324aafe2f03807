// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// `snapshot_latest` also keeps the latest snapshot's payload hash and collection time (issue 31's "no figure
// worse", BENCHMARKS.md sections 4 and 4d): the lab read of a pre-flight then answers its 3,000 (device, label)
// pairs from this table alone, without one `snapshot_rows` and one `snapshot_payloads` look-up per pair (the
// narrow layout of migration 0017 no longer carries the hash in the row). The poll store writes the three
// columns together (core/src/poller/store.ts `writeLatest`). Both columns stay NULL for rows written before
// this migration, and readers fall back to the snapshot row then; no backfill is needed (the next poll of each
// pair fills them). A write that moves `snapshot_id` without a new collection time (a hand-made update, a
// writer that does not know these columns) clears them, so they can never describe another snapshot than
// the one named: every poll stamps a new time.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table snapshot_latest add column payload_sha256 text, add column collected_at timestamptz`
    .execute(db);
  await sql`
    create function snapshot_latest_keep_consistent() returns trigger language plpgsql as $$
    begin
      if new.snapshot_id is distinct from old.snapshot_id and new.collected_at is not distinct from old.collected_at
      then
        new.payload_sha256 := null;
        new.collected_at := null;
      end if;
      return new;
    end $$`.execute(db);
  await sql`create trigger snapshot_latest_consistent before update on snapshot_latest
    for each row execute function snapshot_latest_keep_consistent()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists snapshot_latest_consistent on snapshot_latest`.execute(db);
  await sql`drop function if exists snapshot_latest_keep_consistent()`.execute(db);
  await sql`alter table snapshot_latest drop column if exists payload_sha256, drop column if exists collected_at`
    .execute(db);
}
