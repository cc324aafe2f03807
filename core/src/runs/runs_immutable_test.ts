import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest } from "../../harness/db.ts";
import { testServices } from "../../harness/app.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";
import { verifyReport } from "../report/verify.ts";
import { fetchReport, finishRun, startRun } from "../../harness/runs_lab.ts";

const PLAN = "fixture-plan";

/** The database error of a statement that must be refused. */
async function refused(run: () => Promise<unknown>, pattern: RegExp) {
  await assert.rejects(run, (e: Error) => {
    assert.match(String(e.message), pattern);
    return true;
  });
}

dbTest("a finished run and its frozen report are refused UPDATE, DELETE and TRUNCATE in SQL", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const run = await startRun(app, auth, { planIdentifier: PLAN });
  const id = run.executionId;
  // While active, the run may change (that is how it finishes).
  await db.kysely.updateTable("test_runs").set({ notes: "while active" }).where("execution_id", "=", id)
    .execute();
  await finishRun(app, auth, id, { outcome: "passed", results: { latencySamplesMs: [5, 6, 7] } });
  const before = await fetchReport(app, auth, id);
  const viewBefore = await (await app.request(`/api/test-runs/${id}`, { headers: auth })).json();

  // The statement from the issue: the API would then have said `failed` while the report said `passed`.
  await refused(
    () => sql`update test_runs set outcome = 'failed' where execution_id = ${id}`.execute(db.kysely),
    /finished and immutable: UPDATE refused/,
  );
  await refused(
    () => sql`update test_runs set report_json = '{}' where execution_id = ${id}`.execute(db.kysely),
    /UPDATE refused/,
  );
  await refused(
    () => sql`delete from test_runs where execution_id = ${id}`.execute(db.kysely),
    /finished and immutable: DELETE refused/,
  );
  await refused(() => sql`truncate test_runs cascade`.execute(db.kysely), /TRUNCATE refused/);
  await refused(() => sql`truncate run_alerts`.execute(db.kysely), /TRUNCATE refused/);
  // No alert can be added to (or removed from) a finished run.
  await refused(
    () =>
      sql`insert into run_alerts (execution_id, name, at, device_id, device_hostname, from_state, to_state,
        snapshot_id) values (${id}, 'TLSDecryptModeChanged', now(), ${crypto.randomUUID()}, 'x', 'on', 'off', 1)`
        .execute(db.kysely),
    /alerts are immutable \(INSERT refused\)/,
  );

  const after = await fetchReport(app, auth, id);
  assert.equal(after.text, before.text, "the frozen report is unchanged");
  assert.deepEqual(await (await app.request(`/api/test-runs/${id}`, { headers: auth })).json(), viewBefore);
  assert.equal((await verifyReport(JSON.parse(after.text))).ok, true);
});

dbTest("a finished run is deleted only through the audited function, which leaves a trace", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const run = await startRun(app, auth, { planIdentifier: PLAN });
  const done = await finishRun(app, auth, run.executionId, {
    outcome: "passed",
    results: { latencySamplesMs: [5] },
  });
  await refused(
    () => sql`select dutlab_delete_finished_run(${crypto.randomUUID()}, 'typo', 'ops')`.execute(db.kysely),
    /no finished test run/,
  );
  await refused(
    () => sql`select dutlab_delete_finished_run(${run.executionId}, '  ', 'ops')`.execute(db.kysely),
    /check constraint/,
  );
  await sql`select dutlab_delete_finished_run(${run.executionId}, 'customer asked for erasure', 'ops@lab')`
    .execute(db.kysely);
  assert.equal((await app.request(`/api/test-runs/${run.executionId}`, { headers: auth })).status, 404);
  const trail = await db.kysely.selectFrom("run_deletions").selectAll().execute();
  assert.equal(trail.length, 1);
  assert.equal(trail[0]!.execution_id, run.executionId);
  assert.equal(trail[0]!.report_sha256, done.reportSha256);
  assert.equal(trail[0]!.reason, "customer asked for erasure");
  assert.equal(trail[0]!.actor, "ops@lab");
  // The permission does not outlive the call, and the trail itself cannot be edited.
  await refused(() => sql`update run_deletions set reason = 'x'`.execute(db.kysely), /audit trail/);
  await refused(() => sql`delete from run_deletions`.execute(db.kysely), /audit trail/);
});
