// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// Re-marking stable flags in the background (issue 34 point 6). When an adapter drops a volatile path of a
// label, the stored `stable_changed = false` flags of that vendor and label may hide what is now a change.
// Until now start-up forgot every such flag (set it to null) before it answered: 13 s for 5 * 10^5 rows. Now
// start-up only records, per vendor and label, that the rows below an id are not re-marked yet:
//
// - `remark_below`: every snapshot of this vendor and label with an id below it may carry a `false` computed
//   under older patterns (the change history compares those in full, as if the flag were unknown); null when
//   nothing is pending. A background job (core/src/snapshots/remark.ts) walks those rows newest first in
//   bounded batches, compares each with the row before it under the patterns in force, forgets (sets to null)
//   the flags that no longer hold, and lowers `remark_below` in the same transaction.
// - `remark_remaining`: how many `false` flags are left below it (counted by the job when it starts; null
//   until then), what the change history reports while re-marking.
//
// The job changes a flag only to null, which the append-only guard of migration 0017 already lets through: no
// guard change (a re-marked row that is a change under the new patterns reads exactly like a `true` one: both
// are read and compared in full by the change history).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table volatile_path_sets add column remark_below bigint null`.execute(db);
  await sql`alter table volatile_path_sets add column remark_remaining bigint null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table volatile_path_sets drop column remark_remaining`.execute(db);
  await sql`alter table volatile_path_sets drop column remark_below`.execute(db);
}
