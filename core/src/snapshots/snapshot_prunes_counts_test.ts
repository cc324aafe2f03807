/**
 * A prune's `counts` is a list everywhere (issue 46 point 1): a prune that deleted nothing reads back
 * `counts: []` through `GET /api/admin/dut/snapshot-prunes`, as its own answer says, and the records stored
 * with the old default `{}` read as `[]` after migration 2026_11_28_0023.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest, testMigrator } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";

/** The last migration before the counts default became a list. */
const BEFORE = "2026_11_27_0022_cheaper_write_triggers";

async function ok(p: Promise<{ error?: unknown }>) {
  const { error } = await p;
  if (error) throw error;
}

dbTest(
  "a prune that deletes nothing reads back counts [] through GET, as its POST answer says",
  async (db) => {
    const { app, auth } = await testServices(db, fixtureModules());
    const res = await app.request(
      "/api/admin/dut/snapshots/prune",
      jsonReq("POST", { olderThanDays: 30, keepOnePer: "hour" }, auth),
    );
    const posted = await res.json();
    assert.equal(res.status, 200, JSON.stringify(posted));
    assert.equal(posted.snapshots, 0);
    assert.deepEqual(posted.counts, []);
    const listed = await app.request("/api/admin/dut/snapshot-prunes", { headers: auth });
    assert.equal(listed.status, 200);
    const { prunes } = await listed.json();
    assert.equal(prunes.length, 1);
    assert.equal(prunes[0].pruneId, posted.pruneId);
    assert.equal(prunes[0].status, "finished");
    assert.deepEqual(prunes[0].counts, []);
  },
);

dbTest("a prune record stored with counts {} before migration 0023 reads as [] after it", async (db) => {
  const k = db.kysely;
  const m = await testMigrator(k);
  await ok(m.migrateTo(BEFORE));
  // What a prune that deleted nothing left behind: the column's old default, on a finished record.
  await sql`insert into snapshot_prunes (actor, policy, cutoff, end_id, status, finished_at)
    values ('token:ops', '{"olderThanDays":30,"keepOnePer":"hour"}', now(), 0, 'finished', now())`.execute(k);
  const before = await sql<{ counts: unknown }>`select counts from snapshot_prunes`.execute(k);
  assert.deepEqual(before.rows.map((r) => typeof r.counts === "string" ? JSON.parse(r.counts) : r.counts), [
    {},
  ]);
  await ok(m.migrateToLatest());

  const { app, auth } = await testServices(db, fixtureModules());
  const listed = await app.request("/api/admin/dut/snapshot-prunes", { headers: auth });
  assert.equal(listed.status, 200);
  const { prunes } = await listed.json();
  assert.equal(prunes.length, 1);
  assert.equal(prunes[0].actor, "token:ops");
  assert.deepEqual(prunes[0].counts, []);
  // The record is still an audit trail, the default is a list, and an object is refused.
  await assert.rejects(sql`update snapshot_prunes set counts = '{}'::jsonb`.execute(k), /audit trail/);
  const dflt = await sql<{ d: string }>`select column_default as d from information_schema.columns
    where table_schema = current_schema() and table_name = 'snapshot_prunes' and column_name = 'counts'`
    .execute(k);
  assert.match(dflt.rows[0]!.d, /^'\[\]'::jsonb$/);
  await assert.rejects(
    sql`insert into snapshot_prunes (actor, policy, cutoff, end_id, status, counts)
      values ('token:ops', '{}', now(), 0, 'finished', '{}'::jsonb)`.execute(k),
    /snapshot_prunes_counts_array/,
  );
});
