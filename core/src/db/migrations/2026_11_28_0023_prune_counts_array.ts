// Frozen migration: never edit after it has shipped; add a new dated file instead.
// deno-lint-ignore-file no-explicit-any
import { type Kysely, sql } from "kysely";

// Issue 46 point 1: `snapshot_prunes.counts` is a list of per-device, per-label counts, but its default in
// migration 0014 was `'{}'::jsonb`, so a prune that deleted nothing (no batch ever wrote the list) read back
// `counts: {}` from `GET /api/admin/dut/snapshot-prunes`, where the document and the prune's own answer say
// `[]`. The default becomes `'[]'`, the rows stored with `{}` are rewritten as `[]`, and a check keeps the
// column a JSON array from now on.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table snapshot_prunes alter column counts set default '[]'::jsonb`.execute(db);
  // Prune records are an audit trail (snapshot_prunes_guard, migration 0014) and a finished one is never
  // changed. The rewrite changes no fact of the record (an empty object and an empty list both say "nothing
  // deleted"), so the guard is lifted for this one statement and put back in the same transaction.
  await sql`alter table snapshot_prunes disable trigger snapshot_prunes_guard`.execute(db);
  await sql`update snapshot_prunes set counts = '[]'::jsonb where counts = '{}'::jsonb`.execute(db);
  await sql`alter table snapshot_prunes enable trigger snapshot_prunes_guard`.execute(db);
  await sql`alter table snapshot_prunes add constraint snapshot_prunes_counts_array
    check (jsonb_typeof(counts) = 'array')`.execute(db);
}

// The rows stay `[]` (what the code reads either way); only the default and the check go back.
export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table snapshot_prunes drop constraint if exists snapshot_prunes_counts_array`.execute(db);
  await sql`alter table snapshot_prunes alter column counts set default '{}'::jsonb`.execute(db);
}
