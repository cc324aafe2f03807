import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import { fixtureModules, fixturePlugin, startFixtureDevice } from "../../testing/fixture_modules.ts";
import { jcsSha256 } from "@dutlab/core";
import { verifyReport } from "../report/verify.ts";
import type { ReportData } from "../report/types.ts";
import type { LoadedModules } from "../registry.ts";
import {
  type App,
  type Auth,
  fetchReport,
  finishRun,
  k6SummaryExport,
  register,
  shuffledRange,
  snapshot,
  startRun,
} from "../../harness/runs_lab.ts";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const PLAN = "fixture-plan";
const NIL = "00000000-0000-4000-8000-000000000000";

async function fixtureLab(app: App, auth: Auth) {
  const dev = await startFixtureDevice();
  const deviceId = await register(app, auth, "fixture-fw", "fw-fixture-1", {
    sim: dev.sim,
    credentials: { username: "admin", password: dev.state.password },
  });
  return { ...dev, deviceId, [Symbol.asyncDispose]: () => dev.sim.close() };
}

const post = (app: App, path: string, body: unknown, auth: Auth) =>
  app.request(path, jsonReq("POST", body, auth));

dbTest(
  "starting a run answers 201 with a UUID executionId, the lab state and the pre-flight at start",
  async (db) => {
    const { app, auth } = await testServices(db, fixtureModules());
    await using lab = await fixtureLab(app, auth);
    await snapshot(app, auth, lab.deviceId);
    const run = await startRun(app, auth, { planIdentifier: PLAN, notes: "first run" });
    assert.match(run.executionId, UUID_V4);
    assert.equal(run.status, "active");
    assert.equal(run.planIdentifier, PLAN);
    assert.equal(run.planCatalogVersion, 1);
    assert.equal(run.planSnapshotSha256, await jcsSha256(fixturePlugin.planCatalog.plans[0]));
    assert.equal(run.licenseId, "LAB-INTERNAL", "the configured default licence");
    assert.equal(run.notes, "first run");
    assert.equal(run.endedAt, null);
    assert.equal(run.reportSha256, null);
    assert.deepEqual(run.preflightAtStart, {
      pass: true,
      summary: "1/1 checks passed — ready for fixture-plan",
      checksRun: 1,
      checksPassed: 1,
      checksFailed: 0,
      checksSkipped: 0,
    });
    const lab0 = run.labAtStart as {
      devices: unknown[];
      decrypt: Record<string, { state: string }>;
      tlsDecrypt: string;
    };
    assert.deepEqual(lab0.devices, [{
      id: lab.deviceId,
      hostname: "fw-fixture-1",
      vendor: "fixture-fw",
      deviceRole: "ngfw",
    }]);
    assert.equal(lab0.decrypt[lab.deviceId]!.state, "on");
    assert.equal(lab0.tlsDecrypt, "on");

    const one = await app.request(`/api/test-runs/${run.executionId}`, { headers: auth });
    assert.equal(one.status, 200);
    assert.deepEqual(await one.json(), run);

    // Stored as JSON objects on both databases (not as a JSON string holding JSON text).
    const kinds = await db.kysely.selectFrom("test_runs").select([
      sql<string>`jsonb_typeof(plan_json)`.as("plan"),
      sql<string>`jsonb_typeof(start_state_json)`.as("lab"),
      sql<string>`jsonb_typeof(preflight_json)`.as("preflight"),
    ]).executeTakeFirstOrThrow();
    assert.deepEqual(kinds, { plan: "object", lab: "object", preflight: "object" });
  },
);

dbTest("a failing pre-flight does not block the start and is kept as evidence", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  await using lab = await fixtureLab(app, auth);
  lab.state.ntp = [];
  lab.state.decryptRules = 0;
  await snapshot(app, auth, lab.deviceId);
  const run = await startRun(app, auth, { planIdentifier: PLAN });
  assert.equal((run.preflightAtStart as { pass: boolean }).pass, false);
  assert.equal((run.labAtStart as { tlsDecrypt: string }).tlsDecrypt, "off");
  await finishRun(app, auth, run.executionId, { outcome: "failed", results: { latencySamplesMs: [5] } });
  const report = JSON.parse((await fetchReport(app, auth, run.executionId)).text) as ReportData;
  const pf = JSON.parse(report.annexes.find((a) => a.id === "preflight-at-start")!.body);
  assert.equal(pf.pass, false);
  assert.equal(pf.checks[0].checkId, "fixture-ntp");
  assert.equal(pf.checks[0].evidence.snapshotId.length > 0, true);
  assert.equal(report.tlsDecrypt.activeAtStart, "off");
});

dbTest("only one run is active at a time, unknown plans are 404 and bad bodies 400", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const first = await startRun(app, auth, { planIdentifier: PLAN });
  const again = await post(app, "/api/test-runs", { planIdentifier: PLAN }, auth);
  assert.equal(again.status, 409);
  assert.equal(again.headers.get("content-type"), "application/problem+json");
  assert.equal((await again.json()).activeExecutionId, first.executionId);

  const unknown = await post(app, "/api/test-runs", { planIdentifier: "no-such-plan" }, auth);
  assert.equal(unknown.status, 404);
  assert.match((await unknown.json()).detail, /"no-such-plan"/);

  for (
    const [body, field] of [
      [{}, "planIdentifier"],
      [{ planIdentifier: "" }, "planIdentifier"],
      [{ planIdentifier: 5 }, "planIdentifier"],
      [{ planIdentifier: PLAN, licenseId: "has space" }, "licenseId"],
      [{ planIdentifier: PLAN, extra: true }, ""],
    ] as Array<[unknown, string]>
  ) {
    const res = await post(app, "/api/test-runs", body, auth);
    assert.equal(res.status, 400, JSON.stringify(body));
    const problem = await res.json();
    assert.ok(
      problem.errors.some((e: { field: string }) => e.field.includes(field)),
      JSON.stringify(problem),
    );
  }

  const finish = (id: string, body: unknown) => post(app, `/api/test-runs/${id}/finish`, body, auth);
  const ok = { outcome: "passed", results: { latencySamplesMs: [1, 2] } };
  for (
    const body of [
      { outcome: "passed" },
      { outcome: "great", results: { latencySamplesMs: [1] } },
      { outcome: "passed", results: { latencySamplesMs: [] } },
      { outcome: "passed", results: { latencySamplesMs: [1, -2] } },
      { outcome: "passed", results: { latencySamplesMs: ["1"] } },
      { outcome: "passed", results: { samples: [1] } },
      { outcome: "passed", results: { k6Summary: { metrics: {} } } },
    ]
  ) {
    const res = await finish(first.executionId, body);
    assert.equal(res.status, 400, JSON.stringify(body));
    await res.body?.cancel();
  }
  const { metrics } = k6SummaryExport();
  const noP99 = { ...(metrics.http_req_duration as Record<string, number>) };
  delete noP99["p(99)"];
  const lacking = await finish(first.executionId, {
    outcome: "passed",
    results: { k6Summary: { metrics: { ...metrics, http_req_duration: noP99 } } },
  });
  assert.equal(lacking.status, 400);
  assert.match(JSON.stringify(await lacking.json()), /--summary-trend-stats/);

  assert.equal((await finish(NIL, ok)).status, 404);
  assert.equal((await finish("not-a-uuid", ok)).status, 404);
  assert.equal((await finish(first.executionId, ok)).status, 200);
  const twice = await finish(first.executionId, ok);
  assert.equal(twice.status, 409);
  assert.equal((await twice.json()).type, "urn:dutlab:problem:conflict");

  await startRun(app, auth, { planIdentifier: PLAN }); // the finished run no longer blocks a start
});

dbTest("snapshots stored while a run is active carry its executionId, the others none", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  await using lab = await fixtureLab(app, auth);
  await snapshot(app, auth, lab.deviceId);
  const run = await startRun(app, auth, { planIdentifier: PLAN });
  await snapshot(app, auth, lab.deviceId);
  await snapshot(app, auth, lab.deviceId);
  await finishRun(app, auth, run.executionId, { outcome: "passed", results: { latencySamplesMs: [1] } });
  await snapshot(app, auth, lab.deviceId);

  const list = async (q = "") =>
    (await (await app.request(`/api/admin/dut/snapshots${q}`, { headers: auth })).json()).snapshots as Array<
      { id: string; testRunExecutionId: string | null; endpointLabel: string; payloadSha256: string }
    >;
  const all = await list();
  assert.equal(all.length, 12);
  const linked = all.filter((s) => s.testRunExecutionId === run.executionId);
  assert.equal(linked.length, 6, "the two polls during the run");
  assert.equal(all.filter((s) => s.testRunExecutionId === null).length, 6, "the polls before and after");
  const filtered = await list(`?testRunExecutionId=${run.executionId}`);
  assert.deepEqual(filtered.map((s) => s.id), linked.map((s) => s.id));

  const report = JSON.parse((await fetchReport(app, auth, run.executionId)).text) as ReportData;
  const annex = JSON.parse(report.annexes.find((a) => a.id === "snapshots")!.body) as Array<
    { snapshotId: string; deviceHostname: string; endpointLabel: string; payloadSha256: string }
  >;
  assert.deepEqual(
    annex.map((a) => [a.snapshotId, a.endpointLabel, a.payloadSha256, a.deviceHostname]).sort(),
    linked.map((s) => [s.id, s.endpointLabel, s.payloadSha256, "fw-fixture-1"]).sort(),
  );
});

dbTest("the plan is frozen at start: a changed catalog alters neither the run nor its report", async (db) => {
  const original = fixturePlugin.planCatalog.plans[0];
  const a = await testServices(db, fixtureModules());
  const run = await startRun(a.app, a.auth, { planIdentifier: PLAN });

  // The catalog as a later release would ship it: same identifier, other parameters, new version.
  const changed = {
    ...fixturePlugin,
    planCatalog: {
      catalogVersion: 2,
      plans: [{
        ...original,
        displayName: "Fixture plan, revised",
        sloTargetP99Ms: 5,
        tlsDecrypt: "off" as const,
        phases: [{ name: "burst", durationS: 5, load: { rps: 1000 } }],
        parameters: { revised: true },
      }],
    },
  };
  const mods: LoadedModules = {
    ...fixtureModules(),
    plugins: [{ name: "@dutlab/plugin-fixture-plans", version: "0.0.2", module: changed }],
  };
  const b = await testServices(db, mods);
  assert.equal(
    (await (await b.app.request("/api/test-runs/plans", { headers: b.auth })).json()).plans[0].sloTargetP99Ms,
    5,
    "the new catalog is live",
  );
  const seen = await (await b.app.request(`/api/test-runs/${run.executionId}`, { headers: b.auth })).json();
  assert.equal(seen.planSnapshotSha256, run.planSnapshotSha256);
  assert.equal(seen.planDisplayName, "Fixture plan");

  await finishRun(b.app, b.auth, run.executionId, {
    outcome: "passed",
    results: { latencySamplesMs: [10, 20] },
  });
  const report = JSON.parse((await fetchReport(b.app, b.auth, run.executionId)).text) as ReportData;
  assert.deepEqual(report.plan, original);
  assert.equal(report.meta.planCatalogVersion, 1);
  assert.equal(report.meta.planDisplayName, "Fixture plan");
  assert.equal(report.meta.planSnapshotSha256, await jcsSha256(original));
  assert.equal(report.slo.targetP99Ms, 100);
  assert.equal(report.slo.pass, true, "judged against the frozen 100 ms, not the new 5 ms");
  assert.equal(report.tlsDecrypt.required, "on");
});

dbTest("finishing with latency samples computes exact aggregates and freezes the report", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  await using lab = await fixtureLab(app, auth);
  await snapshot(app, auth, lab.deviceId);
  const run = await startRun(app, auth, { planIdentifier: PLAN, licenseId: "ACME-EVAL-2", notes: "rack B" });
  assert.equal((await fetchReport(app, auth, run.executionId)).status, 404, "no report while active");
  await snapshot(app, auth, lab.deviceId);

  const samples = shuffledRange(200); // 1..200 ms; the plan's p99 target is 100 ms
  const done = await finishRun(app, auth, run.executionId, {
    outcome: "passed",
    results: { latencySamplesMs: samples },
  });
  assert.equal(done.status, "finished");
  assert.equal(done.outcome, "passed");
  assert.match(String(done.reportSha256), /^[0-9a-f]{64}$/);

  const first = await fetchReport(app, auth, run.executionId);
  assert.equal(first.status, 200);
  assert.equal(first.headers.get("content-type"), "application/json; charset=utf-8");
  const report = JSON.parse(first.text) as ReportData;
  assert.equal(first.headers.get("x-report-sha256"), report.reportSha256);
  assert.equal(first.headers.get("x-license"), "ACME-EVAL-2");
  assert.equal(report.license.id, "ACME-EVAL-2");
  assert.equal(report.reportSha256, done.reportSha256);

  assert.equal(report.results.source, "latencySamplesMs");
  assert.deepEqual({ source: report.results.source, aggregate: report.results.aggregate }, {
    source: "latencySamplesMs",
    aggregate: {
      count: 200,
      min_ms: 1,
      max_ms: 200,
      mean_ms: 100.5,
      p50_ms: 100.5,
      p95_ms: 190.05,
      p99_ms: 198.01,
    },
  });
  // 100 of 200 samples are slower than 100 ms: 50 % against the 1 % budget = 5000 %.
  assert.deepEqual(report.slo, {
    targetP99Ms: 100,
    observedP99Ms: 198.01,
    pass: false,
    errorBudgetBurnedPct: 5000,
    verdictNote: null,
    errorBudgetExactness: "exact",
  });

  // Spec 2.5: every meta member, version 1, generatedAt = freeze time.
  assert.equal(report.version, 1);
  assert.deepEqual(Object.keys(report.meta).sort(), [
    "durationS",
    "endedAt",
    "executionId",
    "notes",
    "outcome",
    "planCatalogVersion",
    "planDisplayName",
    "planIdentifier",
    "planSnapshotSha256",
    "runId",
    "startedAt",
  ]);
  assert.equal(report.meta.runId, run.runId);
  assert.equal(report.meta.executionId, run.executionId);
  assert.equal(report.meta.startedAt, run.startedAt);
  assert.equal(report.meta.endedAt, done.endedAt);
  assert.equal(report.generatedAt, report.meta.endedAt);
  assert.ok(Number.isInteger(report.meta.durationS) && report.meta.durationS >= 0);
  assert.equal(report.meta.outcome, "passed");
  assert.equal(report.meta.notes, "rack B");
  assert.deepEqual(report.plan, fixturePlugin.planCatalog.plans[0]);
  assert.deepEqual(report.topology.deploymentMode, "inline");
  assert.equal(report.topology.ucsCount, 0);
  assert.deepEqual(Object.keys(report.license.restrictions).sort(), ["en", "es", "pt-BR"]);
  assert.deepEqual(report.annexes.map((a) => a.id), [
    "preflight-at-start",
    "lab-at-start",
    "snapshots",
    "decrypt-alerts",
    "lab-at-end",
    "results-input",
    "configuration-drift",
  ]);
  const input = JSON.parse(report.annexes.find((a) => a.id === "results-input")!.body);
  assert.equal(input.latencySamplesMsSha256, await jcsSha256(samples));
  const stored = await db.kysely.selectFrom("test_runs").select(
    sql<string>`jsonb_typeof(results_json)`.as("t"),
  )
    .where("execution_id", "=", run.executionId).executeTakeFirstOrThrow();
  assert.equal(stored.t, "object", "the submitted results are kept as a JSON object");
  assert.equal((await verifyReport(report)).ok, true);

  // Frozen: the same bytes and headers on every fetch, whatever happens in the lab afterwards.
  lab.state.decryptRules = 0;
  await snapshot(app, auth, lab.deviceId);
  const again = await fetchReport(app, auth, run.executionId);
  assert.equal(again.text, first.text);
  assert.equal(again.headers.get("x-report-sha256"), first.headers.get("x-report-sha256"));
  assert.equal(again.headers.get("x-license"), first.headers.get("x-license"));

  assert.equal((await fetchReport(app, auth, NIL)).status, 404);
  assert.equal((await fetchReport(app, auth, "not-a-uuid")).status, 404);
});

dbTest("finishing with a k6 summary export takes p50 from med and count from http_reqs", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const run = await startRun(app, auth, { planIdentifier: PLAN });
  const k6 = k6SummaryExport();
  await finishRun(app, auth, run.executionId, { outcome: "passed", results: { k6Summary: k6 } });
  const report = JSON.parse((await fetchReport(app, auth, run.executionId)).text) as ReportData;
  assert.equal(report.results.k6Format, "summary-export");
  assert.deepEqual({ source: report.results.source, aggregate: report.results.aggregate }, {
    source: "k6-summary",
    aggregate: {
      count: 12000,
      min_ms: 3.119,
      max_ms: 412.553,
      mean_ms: 18.403,
      p50_ms: 14.902,
      p95_ms: 44.802,
      p99_ms: 97.33,
    },
  });
  assert.equal(report.slo.observedP99Ms, 97.33);
  assert.equal(report.slo.pass, true, "97.33 ms <= 100 ms");
  // 100 ms lies between p(99) = 97.33 and max = 412.55: an estimated 0.9915 % slower = 99.2 % of the budget.
  assert.equal(report.slo.errorBudgetBurnedPct, 99.2);
  const input = JSON.parse(report.annexes.find((a) => a.id === "results-input")!.body);
  assert.equal(input.source, "k6-summary");
  assert.equal(input.k6SummarySha256, await jcsSha256(k6));
  assert.deepEqual(input.metricsUsed.http_req_duration, k6.metrics.http_req_duration);
});

dbTest("runs are listed newest first and each one can be read", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  assert.deepEqual(await (await app.request("/api/test-runs", { headers: auth })).json(), {
    runs: [],
    nextCursor: null,
  });
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const run = await startRun(app, auth, { planIdentifier: PLAN, notes: `run ${i}` });
    ids.push(run.executionId);
    if (i < 2) {
      await finishRun(app, auth, run.executionId, {
        outcome: "passed",
        results: { latencySamplesMs: [i + 1] },
      });
    }
  }
  const { runs } = await (await app.request("/api/test-runs", { headers: auth })).json();
  assert.deepEqual(runs.map((r: { executionId: string }) => r.executionId), [...ids].reverse());
  assert.deepEqual(runs.map((r: { status: string }) => r.status), ["active", "finished", "finished"]);
  assert.deepEqual(runs.map((r: { runId: string }) => Number(r.runId)), [3, 2, 1]);
  for (const r of runs) {
    const one = await app.request(`/api/test-runs/${r.executionId}`, { headers: auth });
    assert.deepEqual(await one.json(), r);
  }
  assert.equal((await app.request(`/api/test-runs/${NIL}`, { headers: auth })).status, 404);
  assert.equal((await app.request("/api/test-runs/nope", { headers: auth })).status, 404);
});

dbTest(
  "a poll committing while the run finishes is in the report: finish waits for the poll's row lock",
  async (db) => {
    const { app, auth } = await testServices(db, fixtureModules());
    await using lab = await fixtureLab(app, auth);
    await snapshot(app, auth, lab.deviceId);
    const run = await startRun(app, auth, { planIdentifier: PLAN });
    const existing = await db.kysely.selectFrom("snapshots").select("payload_sha256")
      .executeTakeFirstOrThrow();
    let finishing: Promise<Response> | Response | undefined;
    const inserted = await db.kysely.transaction().execute(async (tx) => {
      // What the poll cycle's store step does: read the active run FOR SHARE, then insert linked snapshots.
      const active = await tx.selectFrom("test_runs").select("execution_id").where("status", "=", "active")
        .forShare().executeTakeFirstOrThrow();
      const row = await tx.insertInto("snapshots").values({
        device_id: lab.deviceId,
        endpoint_label: "system_info",
        payload_sha256: existing.payload_sha256,
        collected_at: new Date(),
        test_run_execution_id: active.execution_id,
        adapter_module: "@dutlab/adapter-fixture-fw",
        adapter_version: "0.0.1",
      }).returning(sql<string>`id::text`.as("id")).executeTakeFirstOrThrow();
      finishing = app.request(
        `/api/test-runs/${run.executionId}/finish`,
        jsonReq("POST", { outcome: "passed", results: { latencySamplesMs: [1] } }, auth),
      );
      // Commit only once the finish is waiting for the run's row lock.
      for (let i = 0;; i++) {
        const waiting = await db.kysely.selectFrom(sql<{ n: number }>`(
          select count(*)::int as n from pg_stat_activity
          where wait_event_type = 'Lock' and datname = current_database() and query ilike '%"test_runs"%'
        )`.as("w")).select("n").executeTakeFirstOrThrow();
        if (waiting.n > 0) break;
        assert.ok(i < 400, "finish never waited for the poll's lock");
        await new Promise((r) => setTimeout(r, 25));
      }
      return row.id;
    });
    const res = await finishing!;
    assert.equal(res.status, 200);
    const report = JSON.parse((await fetchReport(app, auth, run.executionId)).text) as ReportData;
    const annex = JSON.parse(report.annexes.find((a) => a.id === "snapshots")!.body) as Array<
      { snapshotId: string }
    >;
    assert.ok(
      annex.some((s) => s.snapshotId === inserted),
      "the snapshot committed during finish is annexed",
    );
  },
  { only: ["postgres"] },
);
