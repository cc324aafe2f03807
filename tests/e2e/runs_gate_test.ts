/**
 * Issue 29, point 4: gating a run's start on its pre-flight (`requirePreflightPass`, a plan's `startGate`),
 * the 422 with the pre-flight body, and the admin-only override: refused to an operator, recorded in the
 * audit log, on the run, in the report (verdict input `preflight`) and on the print page.
 */
import assert from "node:assert/strict";
import { dbTest } from "../../core/harness/db.ts";
import { jsonReq, testServices } from "../../core/harness/app.ts";
import type { Db } from "../../core/harness/core.ts";
import type { PreflightResult } from "../../core/harness/core.ts";
import type { ReportData } from "../../core/harness/core.ts";
import { verifyReportBytes } from "../../core/harness/core.ts";
import { renderReportPage } from "../../core/harness/core.ts";
import { modules } from "../../modules.gen.ts";
import { fetchReport, finishRun, register, snapshot } from "../../core/harness/runs_lab.ts";
import { adapterForRole } from "../../core/harness/lab.ts";

const ON = "ngfw-throughput-decrypt-on";
/** The plan that declares `startGate: "preflight-pass"`. */
const GATED = "ngfw-throughput-decrypt-on-server-health";
const RESULTS = { outcome: "passed", results: { latencySamplesMs: [10, 20, 30] } };

/** One switch, registered but not snapshotted: its checks are skipped, so the pre-flight does not pass. */
async function lab(db: Db) {
  const { app, auth, svc } = await testServices(db, modules);
  const switches = adapterForRole(modules, "switch");
  const sim = await (await switches.sim()).startSimulatedDevice();
  const id = await register(app, auth, switches.vendor, "sw-1", sim);
  const operator = { authorization: `Bearer ${(await svc.tokens.create("ci-operator", "operator")).token}` };
  const start = async (body: Record<string, unknown>, headers = auth) => {
    const res = await app.request("/api/test-runs", jsonReq("POST", body, headers));
    return { status: res.status, body: await res.json() };
  };
  const runs = async () => (await (await app.request("/api/test-runs", { headers: auth })).json()).runs;
  const audit = async () => (await (await app.request("/api/admin/audit", { headers: auth })).json()).entries;
  return {
    app,
    auth,
    svc,
    id,
    operator,
    start,
    runs,
    audit,
    async [Symbol.asyncDispose]() {
      await sim.close();
    },
  };
}

dbTest("an ungated start keeps today's behaviour: it starts over a failing pre-flight", async (db) => {
  await using l = await lab(db);
  const r = await l.start({ planIdentifier: ON });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.equal(r.body.preflightAtStart.pass, false);
  assert.deepEqual(r.body.startGate, { gated: false, source: null, preflightPass: false, override: null });
  // requirePreflightPass: false is the same as leaving it out.
  await finishRun(l.app, l.auth, r.body.executionId, RESULTS);
  const again = await l.start({ planIdentifier: ON, requirePreflightPass: false });
  assert.equal(again.status, 201);
  assert.equal(again.body.startGate.gated, false);
});

dbTest(
  "a gated start over a failing pre-flight answers 422 with the pre-flight body and starts nothing",
  async (db) => {
    await using l = await lab(db);
    const audited = (await l.audit()).length;
    for (
      const [body, source] of [
        [{ planIdentifier: ON, requirePreflightPass: true }, "request"],
        // The plan's gate holds whatever the request says.
        [{ planIdentifier: GATED }, "plan"],
        [{ planIdentifier: GATED, requirePreflightPass: false }, "plan"],
      ] as const
    ) {
      const r = await l.start(body);
      assert.equal(r.status, 422, `${JSON.stringify(body)} (${source})`);
      const pf = r.body as PreflightResult;
      assert.equal(pf.pass, false);
      assert.equal(pf.planIdentifier, body.planIdentifier);
      assert.equal(pf.checksSkipped, 2);
      assert.deepEqual(pf.checks.map((c) => `${c.checkId}@${c.deviceHostname}:${c.status}`), [
        "ntp-source-configured@sw-1:skipped",
        "snapshot-fresh@sw-1:skipped",
      ]);
      // The same body pre-flight answers (but for its evaluation time).
      const direct = await l.app.request(
        "/api/test-runs/preflight",
        jsonReq("POST", { planIdentifier: body.planIdentifier }, l.auth),
      );
      assert.deepEqual({ ...pf, ranAt: "" }, { ...await direct.json(), ranAt: "" });
    }
    assert.deepEqual(await l.runs(), [], "nothing started");
    const entries = await l.audit();
    assert.equal(entries.length, audited + 6, "three refused starts and three pre-flights, each recorded");
    const refused = entries.slice(0, 6).filter((e: { route: string }) => e.route === "/api/test-runs");
    assert.deepEqual(refused.map((e: { status: number; outcome: string }) => [e.status, e.outcome]), [
      [422, "failed"],
      [422, "failed"],
      [422, "failed"],
    ]);
  },
);

dbTest("a gated start whose pre-flight passes starts and records the gate", async (db) => {
  await using l = await lab(db);
  await snapshot(l.app, l.auth, l.id);
  const r = await l.start({ planIdentifier: GATED, override: { reason: "not needed" } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.deepEqual(r.body.startGate, { gated: true, source: "plan", preflightPass: true, override: null });
  const entry = (await l.audit()).find((e: { route: string }) => e.route === "/api/test-runs");
  assert.equal(entry.detail, null, "an override that was not needed is not recorded");
  await finishRun(l.app, l.auth, r.body.executionId, RESULTS);
  const report = JSON.parse((await fetchReport(l.app, l.auth, r.body.executionId)).text) as ReportData;
  assert.deepEqual(report.startGate, r.body.startGate);
  const html = renderReportPage(report).replaceAll("<!-- -->", "");
  assert.ok(html.includes("gated by the plan (preflight-pass) · pre-flight passed"));
  assert.ok(!html.includes("data-start-override"));
});

dbTest("override needs the admin role; on an ungated start it is refused", async (db) => {
  await using l = await lab(db);
  // An operator may start runs, but not override a gate: 403, whatever the pre-flight says.
  const op = await l.start({ planIdentifier: GATED, override: { reason: "ship it" } }, l.operator);
  assert.equal(op.status, 403);
  assert.equal(op.body.type, "urn:dutlab:problem:forbidden");
  assert.match(op.body.detail, /admin role/);
  assert.match(op.body.detail, /"ci-operator" has operator/);
  assert.deepEqual(await l.runs(), []);
  // Without the override the operator gets the gate's 422, as an admin would.
  assert.equal((await l.start({ planIdentifier: GATED }, l.operator)).status, 422);
  // override on an ungated start, an empty reason, unknown members: 400 naming the field.
  for (
    const [body, field] of [
      [{ planIdentifier: ON, override: { reason: "x" } }, "override"],
      [{ planIdentifier: GATED, override: { reason: " " } }, "override.reason"],
      [{ planIdentifier: GATED, override: {} }, "override.reason"],
      [{ planIdentifier: GATED, override: { reason: "x", by: "me" } }, "override"],
      [{ planIdentifier: GATED, requirePreflightPass: "yes" }, "requirePreflightPass"],
    ] as const
  ) {
    const r = await l.start(body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.ok(r.body.errors.some((e: { field: string }) => e.field === field), JSON.stringify(r.body.errors));
  }
  assert.deepEqual(await l.runs(), []);
});

dbTest(
  "an admin override starts the run and is in the audit log, on the run, in the report and on the page",
  async (db) => {
    await using l = await lab(db);
    const reason = "BMC firmware upgrade in progress; customer accepted the risk <b>in writing</b>";
    const r = await l.start({ planIdentifier: GATED, override: { reason } });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const gate = r.body.startGate;
    assert.equal(gate.gated, true);
    assert.equal(gate.source, "plan");
    assert.equal(gate.preflightPass, false);
    assert.equal(gate.override.reason, reason);
    assert.equal(gate.override.by, "bootstrap-admin");
    assert.equal(gate.override.role, "admin");
    assert.ok(!isNaN(Date.parse(gate.override.at)));
    assert.deepEqual(
      (await (await l.app.request(`/api/test-runs/${r.body.executionId}`, { headers: l.auth })).json())
        .startGate,
      gate,
    );

    // Audit: the entry of the start names the override, its reason and who gave it.
    const entry = (await l.audit()).find((e: { route: string; method: string }) =>
      e.route === "/api/test-runs" && e.method === "POST"
    );
    assert.equal(entry.status, 201);
    assert.equal(entry.tokenName, "bootstrap-admin");
    assert.equal(entry.targetId, r.body.executionId);
    assert.match(entry.detail, /^started over a failed pre-flight \(0\/2 checks passed/);
    assert.ok(
      entry.detail.includes(`overridden by bootstrap-admin (admin), reason: ${JSON.stringify(reason)}`),
      entry.detail,
    );

    // Report: startGate, and the verdict's preflight input says the run started over a failed pre-flight.
    await finishRun(l.app, l.auth, r.body.executionId, RESULTS);
    const { text } = await fetchReport(l.app, l.auth, r.body.executionId);
    const outcome = await verifyReportBytes(new TextEncoder().encode(text));
    assert.equal(outcome.ok, true, JSON.stringify(outcome.findings.filter((f) => !f.ok)));
    const report = JSON.parse(text) as ReportData;
    assert.deepEqual(report.startGate, gate);
    const pf = report.verdict!.reasons.find((x) => x.input === "preflight")!;
    assert.equal(pf.effect, "inconclusive");
    assert.match(
      pf.detail,
      /^The run started over a failed pre-flight: the start gate \(the plan's startGate\) was overridden by bootstrap-admin \(admin\)/,
    );
    assert.ok(pf.detail.includes(JSON.stringify(reason)));
    assert.equal(report.verdict!.value, "inconclusive");
    const finished = await (await l.app.request(`/api/test-runs/${r.body.executionId}`, { headers: l.auth }))
      .json();
    assert.deepEqual(finished.startGate, gate, "read from the frozen report");

    // The print page: the callout on the cover with who and why (escaped), and the cover's start-gate line.
    const page = await l.app.request(`/runs/${r.body.executionId}/report`, { headers: l.auth });
    assert.equal(page.status, 200);
    const html = (await page.text()).replaceAll("<!-- -->", "");
    const callout = html.slice(
      html.indexOf("data-start-override"),
      html.indexOf("</div>", html.indexOf("data-start-override")),
    );
    assert.ok(callout.includes("Started over a failed pre-flight"), callout);
    assert.ok(callout.includes("<strong>bootstrap-admin</strong> (admin)"), callout);
    assert.ok(
      callout.includes(
        "Reason: BMC firmware upgrade in progress; customer accepted the risk &lt;b>in writing&lt;/b>",
      ),
      callout,
    );
    assert.ok(
      html.includes(
        "gated by the plan (preflight-pass) · pre-flight did not pass · overridden by bootstrap-admin",
      ),
    );
    assert.ok(html.indexOf("data-start-override") < html.indexOf('data-section="licence"'), "on the cover");
  },
);

dbTest("requirePreflightPass with an operator token: 422 when not ready, 201 once ready", async (db) => {
  await using l = await lab(db);
  const body = { planIdentifier: ON, requirePreflightPass: true };
  assert.equal((await l.start(body, l.operator)).status, 422);
  await snapshot(l.app, l.auth, l.id);
  const r = await l.start(body, l.operator);
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.deepEqual(r.body.startGate, { gated: true, source: "request", preflightPass: true, override: null });
});

Deno.test("a report frozen before start gating verifies and renders without a start-gate line", async () => {
  const bytes = await Deno.readFile(
    new URL("../../core/src/report/testdata/report-before-issue-19.json", import.meta.url),
  );
  assert.equal((await verifyReportBytes(bytes)).ok, true);
  const report = JSON.parse(new TextDecoder().decode(bytes)) as ReportData;
  assert.equal(report.startGate, undefined);
  const html = renderReportPage(report);
  assert.ok(!html.includes("data-start-override") && !html.includes("Start gate"));
});
