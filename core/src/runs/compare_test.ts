/**
 * Issue 22 point 5: `POST /api/test-runs/compare` and the print page `GET /runs/compare` on the fixture lab.
 * Three runs of the same plan, the third with a slower p99: the third (and only it) is a regression, in the
 * JSON and on the page printed by real headless Chromium.
 */
import assert from "node:assert/strict";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import { assertReportPages, findChromium, pdfPages, printToPdf, squash } from "@dutlab/core/testing/chromium";
import { fixtureModules, startFixtureDevice } from "@dutlab/core/testing";
import { jcsSha256 } from "@dutlab/core";
import type { Comparison } from "../../harness/core.ts";
import type { ReportData } from "../../harness/core.ts";
import {
  type App,
  type Auth,
  fetchReport,
  finishRun,
  register,
  shuffledRange,
  snapshot,
  startRun,
} from "../../harness/runs_lab.ts";

const chromium = findChromium();
const inCi = Boolean(Deno.env.get("CI"));
const PLAN = "fixture-plan";

/** 1,000 samples 0.05 … 50 ms; `slowTail` makes the slowest 2 % four times slower (p99 ≈ 198 ms). */
function samples(slowTail: boolean): number[] {
  return shuffledRange(1000).map((i) => (slowTail && i > 980 ? (i / 20) * 4 : i / 20));
}

async function lab(app: App, auth: Auth) {
  const dev = await startFixtureDevice();
  const deviceId = await register(app, auth, "fixture-fw", "fw-fixture-1", {
    sim: dev.sim,
    credentials: { username: "admin", password: dev.state.password },
  });
  await snapshot(app, auth, deviceId);
  return { ...dev, deviceId, [Symbol.asyncDispose]: () => dev.sim.close() };
}

async function finishedRun(app: App, auth: Auth, slowTail: boolean) {
  const run = await startRun(app, auth, { planIdentifier: PLAN, licenseId: "DUTLAB-EVAL-1.0" });
  await finishRun(app, auth, run.executionId, {
    outcome: "passed",
    results: { latencySamplesMs: samples(slowTail), requests: 1000, failedRequests: 0, durationS: 60 },
  });
  const { text } = await fetchReport(app, auth, run.executionId);
  return JSON.parse(text) as ReportData;
}

const compare = (app: App, auth: Auth, body: unknown) =>
  app.request("/api/test-runs/compare", jsonReq("POST", body, auth));

dbTest(
  "comparing three runs of one plan flags the one with a slower p99, in JSON and in print",
  async (db) => {
    const { app, auth } = await testServices(db, fixtureModules());
    await using _lab = await lab(app, auth);
    const r1 = await finishedRun(app, auth, false);
    const r2 = await finishedRun(app, auth, false);
    const r3 = await finishedRun(app, auth, true);
    assert.ok(r3.results.aggregate.p99_ms > r1.results.aggregate.p99_ms * 1.1, "the fixture's p99 is slower");

    // Ids in any order: runs come back oldest first, the oldest is the baseline.
    const res = await compare(app, auth, { executionIds: [r3, r1, r2].map((r) => r.meta.executionId) });
    const cmp = await res.json() as Comparison;
    assert.equal(res.status, 200, JSON.stringify(cmp));
    assert.deepEqual(cmp.runs.map((r) => r.executionId), [r1, r2, r3].map((r) => r.meta.executionId));
    assert.deepEqual(cmp.runs.map((r) => r.reportSha256), [r1, r2, r3].map((r) => r.reportSha256));
    assert.equal(cmp.baselineExecutionId, r1.meta.executionId);
    assert.deepEqual(cmp.runs.map((r) => r.isBaseline), [true, false, false]);
    assert.deepEqual(cmp.runs.map((r) => r.regression), [false, false, true]);
    assert.deepEqual(cmp.summary.regressions, [r3.meta.executionId]);
    const slow = cmp.runs[2]!;
    assert.equal(slow.kpis.p99Ms.value, r3.results.aggregate.p99_ms);
    assert.equal(slow.kpis.p99Ms.regression, true);
    assert.equal(
      slow.kpis.p99Ms.delta,
      Math.round((r3.results.aggregate.p99_ms - r1.results.aggregate.p99_ms) * 1000) / 1000,
    );
    assert.equal(slow.kpis.p50Ms.delta, 0);
    assert.equal(slow.kpis.p50Ms.regression, false);
    assert.equal(slow.regressionReasons.length, 2, slow.regressionReasons.join("; ")); // p99 and the SLO verdict
    assert.match(slow.regressionReasons[0]!, /^p99 .* above the baseline's .* \(threshold 10 %\)$/);
    assert.equal(slow.kpis.verdict.value, "fail");
    assert.equal(slow.kpis.verdict.worseThanBaseline, true);
    assert.equal(cmp.runs[1]!.kpis.throughputRps.value, r2.results.figures!.requestsPerSecond!.value);
    assert.equal(cmp.runs[1]!.kpis.errorRatePct.value, 0);
    assert.equal(cmp.runs[1]!.kpis.p99Ms.deltaPct, 0);
    assert.deepEqual(cmp.summary.planDiffers, []);
    assert.deepEqual(cmp.summary.labDiffers, []);

    // Its own hash over its canonical JSON, the same whatever the order of the ids.
    const { comparisonSha256, ...rest } = cmp;
    assert.equal(comparisonSha256, await jcsSha256(rest));
    const again =
      await (await compare(app, auth, { executionIds: [r1, r2, r3].map((r) => r.meta.executionId) }))
        .json() as Comparison;
    assert.equal(again.comparisonSha256, comparisonSha256);

    // Another baseline: the slow run; the other two are then faster, no regression.
    const vsSlow = await (await compare(app, auth, {
      executionIds: [r1, r2, r3].map((r) => r.meta.executionId),
      baseline: r3.meta.executionId.toUpperCase(),
    })).json() as Comparison;
    assert.equal(vsSlow.baselineExecutionId, r3.meta.executionId);
    assert.deepEqual(vsSlow.summary.regressions, []);
    assert.ok(vsSlow.runs[0]!.kpis.p99Ms.delta! < 0);

    // The print page: bearer token, no script, the regression row and chart point flagged.
    const ids = [r1, r2, r3].map((r) => r.meta.executionId).join(",");
    assert.equal((await app.request(`/runs/compare?ids=${ids}`)).status, 401);
    const page = await app.request(`/runs/compare?ids=${ids}`, { headers: auth });
    assert.equal(page.status, 200);
    assert.equal(page.headers.get("x-comparison-sha256"), comparisonSha256);
    const html = await page.text();
    assert.ok(!/<script/i.test(html), "no client script");
    assert.match(
      html,
      new RegExp(`<tr class="hl-bad" data-run="${r3.meta.executionId}" data-regression="yes">`),
    );
    assert.equal((html.match(/data-regression="yes"/g) ?? []).length, 1 + 1, "the row and its p99 cell");
    assert.match(html, /<svg class="chart"[^>]*data-chart="Latency \(p50, p95, p99\) per run"/);
    assert.match(
      html,
      /<circle cx="[\d.]+" cy="[\d.]+" r="4.5" fill="#b91c1c"/,
      "the regression point is red",
    );

    if (!chromium && !inCi) return console.warn("Chromium not found: skipping the print checks");
    assert.ok(chromium, "Chromium is required when CI is set");
    const pages = await pdfPages(await printToPdf(html));
    assertReportPages(pages, r1.license, 3);
    const first = squash(pages[0]!.text);
    assert.ok(first.includes(squash("1 regression against the baseline")), pages[0]!.text);
    assert.ok(first.includes(squash(`Run ${r3.meta.runId} (${r3.meta.executionId.slice(0, 8)}): p99`)));
    assert.ok(first.includes("REGRESSION"));
    assert.equal(first.split("REGRESSION").length - 1, 1, "one run is flagged");
    const all = squash(pages.map((p) => p.text).join(""));
    assert.ok(all.includes(comparisonSha256));
    for (const r of [r1, r2, r3]) assert.ok(all.includes(r.reportSha256), "each run's reportSha256 is cited");
  },
);

dbTest(
  "compare: 400 naming the field, 404 for unknown runs, 409 for unfinished ones; a viewer may compare (audited)",
  async (db) => {
    const { app, auth } = await testServices(db, fixtureModules());
    await using _lab = await lab(app, auth);
    const a = (await finishedRun(app, auth, false)).meta.executionId;
    const b = (await finishedRun(app, auth, true)).meta.executionId;
    const bad = async (body: unknown, field: string) => {
      const res = await compare(app, auth, body);
      const p = await res.json();
      assert.equal(res.status, 400, JSON.stringify(p));
      assert.equal(res.headers.get("content-type"), "application/problem+json");
      assert.ok(
        p.errors.some((e: { field: string }) => e.field === field),
        `${field}: ${JSON.stringify(p.errors)}`,
      );
    };
    await bad({ executionIds: [a] }, "executionIds");
    await bad({ executionIds: Array.from({ length: 21 }, () => crypto.randomUUID()) }, "executionIds");
    await bad({ executionIds: [a, b, a.toUpperCase()] }, "executionIds.2");
    await bad({ executionIds: [a, "run-1"] }, "executionIds.1");
    await bad({ executionIds: [a, b], baseline: crypto.randomUUID() }, "baseline");
    await bad({ executionIds: [a, b], extra: 1 }, "body");
    await bad({}, "executionIds");

    const unknown = crypto.randomUUID();
    const nf = await compare(app, auth, { executionIds: [a, unknown] });
    assert.equal(nf.status, 404);
    assert.match((await nf.json()).detail, new RegExp(unknown));

    const active = (await startRun(app, auth, { planIdentifier: PLAN })).executionId;
    const cf = await compare(app, auth, { executionIds: [a, active, b] });
    const cp = await cf.json();
    assert.equal(cf.status, 409, JSON.stringify(cp));
    assert.deepEqual(cp.unfinishedExecutionIds, [active]);
    const pg = await app.request(`/runs/compare?ids=${a},${active}`, { headers: auth });
    assert.equal(pg.status, 409);
    const pq = await app.request(`/runs/compare?ids=${a}`, { headers: auth });
    assert.equal(pq.status, 400);
    assert.equal((await pq.json()).errors[0].field, "query.ids");

    // A viewer may compare (the POST only reads).
    const tok = await (await app.request(
      "/api/admin/tokens",
      jsonReq("POST", { name: "viewer-1", role: "viewer" }, auth),
    )).json();
    const viewer = { authorization: `Bearer ${tok.token}` };
    const vr = await compare(app, viewer, { executionIds: [a, b] });
    assert.equal(vr.status, 200);
    assert.equal((await app.request(`/runs/compare?ids=${a},${b}`, { headers: viewer })).status, 200);
    assert.equal(
      (await app.request(`/api/test-runs/${active}/finish`, jsonReq("POST", { outcome: "passed" }, viewer)))
        .status,
      403,
      "a viewer still cannot change a run",
    );
    // Like every POST (pre-flight included), the compare is in the audit log: who compared, never the body.
    const audit =
      await (await app.request("/api/admin/audit?route=/api/test-runs/compare", { headers: auth }))
        .json();
    const byViewer = (audit.entries as Array<Record<string, unknown>>).filter((e) =>
      e.tokenName === "viewer-1"
    );
    assert.deepEqual(
      byViewer.map((e) => [e.role, e.method, e.status, e.outcome, e.targetId]),
      [["viewer", "POST", 200, "success", null]],
    );

    // Registered in the OpenAPI document with an operationId and tag.
    const doc = await (await app.request("/api/openapi.json")).json();
    const op = doc.paths["/api/test-runs/compare"].post;
    assert.equal(op.operationId, "compareRuns");
    assert.deepEqual(op.tags, ["Test runs"]);
    assert.ok(op.responses["404"] && op.responses["409"] && op.responses["400"]);
    assert.equal(doc.paths["/runs/compare"].get.operationId, "getRunComparisonPage");
  },
);
