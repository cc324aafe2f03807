import assert from "node:assert/strict";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import { fixtureModules, startFixtureDevice } from "../../testing/fixture_modules.ts";
import { verifyReport } from "./verify.ts";
import type { ReportData } from "./types.ts";
import {
  type App,
  type Auth,
  fetchReport,
  finishRun,
  k6HandleSummary,
  register,
  snapshot,
  startRun,
} from "../../harness/runs_lab.ts";

const PLAN = "fixture-plan";

async function lab(app: App, auth: Auth) {
  const dev = await startFixtureDevice();
  const deviceId = await register(app, auth, "fixture-fw", "fw-fixture-1", {
    sim: dev.sim,
    credentials: { username: "admin", password: dev.state.password },
  });
  await snapshot(app, auth, deviceId);
  return { ...dev, deviceId, [Symbol.asyncDispose]: () => dev.sim.close() };
}

const report = async (app: App, auth: Auth, id: string) =>
  JSON.parse((await fetchReport(app, auth, id)).text) as ReportData;
const reason = (r: ReportData, input: string) => r.verdict!.reasons.find((x) => x.input === input)!;

dbTest(
  "a k6 handleSummary with 434 failed requests shows the error rate and throughput and fails",
  async (db) => {
    const { app, auth } = await testServices(db, fixtureModules());
    await using _lab = await lab(app, auth);
    const run = await startRun(app, auth, { planIdentifier: PLAN });
    const done = await finishRun(app, auth, run.executionId, {
      outcome: "passed",
      results: { k6Summary: k6HandleSummary() },
    });
    const r = await report(app, auth, run.executionId);
    assert.equal(r.results.k6Format, "handleSummary");
    const f = r.results.figures!;
    assert.deepEqual(f.failedRequests, {
      value: 434,
      unit: "requests",
      source: "load-generator",
      exactness: "exact",
      basis: "k6 http_req_failed passes (requests that failed)",
    });
    assert.equal(f.errorRatePct!.value, 3.617);
    assert.equal(f.errorRatePct!.source, "load-generator");
    assert.equal(f.requests!.value, 12000);
    assert.equal(f.requestsPerSecond!.value, 133.315);
    assert.equal(f.durationS!.value, 90.013);
    assert.equal(f.durationS!.source, "load-generator");
    assert.equal(f.bytesSent!.value, 1620000);
    assert.equal(f.bitsPerSecond!.value, (17997.5 + 935577.5) * 8);
    assert.equal(f.bitsPerSecond!.source, "service");
    assert.equal(f.iterations!.value, 12000);
    assert.deepEqual(r.results.checks, { passes: 11566, fails: 434 });
    assert.deepEqual(r.results.latencyProvenance?.source, "load-generator", "k6 computed the percentiles");
    assert.equal(r.slo.errorBudgetExactness, "estimated");
    assert.equal(r.slo.pass, true, "spec 2.5: slo.pass is the p99 against the target, unchanged");

    assert.equal(r.verdict!.value, "fail", "the operator's `passed` does not hide 3.6 % failed requests");
    assert.equal(reason(r, "outcome").effect, "pass");
    assert.equal(reason(r, "error-rate").effect, "fail");
    assert.match(reason(r, "error-rate").detail, /3\.617 % of requests failed \(434 of 12000\)/);
    assert.equal(reason(r, "load-generator-thresholds").effect, "fail");
    assert.match(reason(r, "load-generator-thresholds").detail, /http_req_failed rate<0\.01/);
    assert.equal(reason(r, "coverage").effect, "pass", "90 s of the 60 s plan");
    assert.equal((await verifyReport(r)).ok, true);
    assert.deepEqual(done.verdict, { value: r.verdict!.value, reasons: r.verdict!.reasons });
  },
);

dbTest(
  "raw samples with counts on a ready lab pass; without a failure count the verdict is inconclusive",
  async (db) => {
    const { app, auth } = await testServices(db, fixtureModules());
    await using _lab = await lab(app, auth);
    const one = await startRun(app, auth, { planIdentifier: PLAN });
    await finishRun(app, auth, one.executionId, {
      outcome: "passed",
      results: {
        latencySamplesMs: [10, 20, 30, 40],
        requests: 4000,
        failedRequests: 4,
        bytesSent: 1000,
        bytesReceived: 7000,
        durationS: 60,
      },
    });
    const r = await report(app, auth, one.executionId);
    assert.equal(r.verdict!.value, "pass", JSON.stringify(r.verdict));
    const f = r.results.figures!;
    assert.equal(f.errorRatePct!.value, 0.1);
    assert.equal(f.errorRatePct!.source, "service");
    assert.equal(f.requestsPerSecond!.value, 66.667);
    assert.equal(f.bitsPerSecond!.value, 1066.667, "8,000 bytes × 8 over 60 s");
    assert.equal(f.requests!.source, "load-generator");
    assert.equal(r.results.latencyProvenance?.source, "service");

    const two = await startRun(app, auth, { planIdentifier: PLAN });
    await finishRun(app, auth, two.executionId, { outcome: "passed", results: { latencySamplesMs: [10] } });
    const r2 = await report(app, auth, two.executionId);
    assert.equal(r2.verdict!.value, "inconclusive");
    assert.equal(reason(r2, "error-rate").effect, "inconclusive");
    assert.equal(reason(r2, "coverage").effect, "inconclusive", "a run of seconds against a 60 s plan");
    assert.equal(r2.results.figures!.durationS!.exactness, "estimated");
    assert.equal(r2.results.figures!.requests!.source, "service");
  },
);

dbTest("a run started after a failing pre-flight cannot read as a clean pass", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  await using l = await lab(app, auth);
  l.state.ntp = [];
  await snapshot(app, auth, l.deviceId);
  const run = await startRun(app, auth, { planIdentifier: PLAN });
  await finishRun(app, auth, run.executionId, {
    outcome: "passed",
    results: { latencySamplesMs: [10], requests: 100, failedRequests: 0, durationS: 60 },
  });
  const r = await report(app, auth, run.executionId);
  assert.equal(r.verdict!.value, "inconclusive");
  assert.match(reason(r, "preflight").detail, /not ready at start: .*fixture-ntp on fw-fixture-1: fail/);
});

dbTest("a k6 summary missing a required metric is refused with 400 naming it", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const run = await startRun(app, auth, { planIdentifier: PLAN });
  for (const name of ["http_req_failed", "http_reqs", "http_req_duration"]) {
    const k6 = k6HandleSummary() as { metrics: Record<string, unknown> };
    delete k6.metrics[name];
    const res = await app.request(
      `/api/test-runs/${run.executionId}/finish`,
      jsonReq("POST", { outcome: "passed", results: { k6Summary: k6 } }, auth),
    );
    assert.equal(res.status, 400);
    const text = JSON.stringify(await res.json());
    assert.match(text, new RegExp(`required k6 metric ${name} is missing`), text);
  }
  const bad = await app.request(
    `/api/test-runs/${run.executionId}/finish`,
    jsonReq(
      "POST",
      { outcome: "passed", results: { latencySamplesMs: [1], requests: 5, failedRequests: 6 } },
      auth,
    ),
  );
  assert.equal(bad.status, 400);
  assert.match(JSON.stringify(await bad.json()), /failedRequests/);
});
