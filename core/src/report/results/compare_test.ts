import assert from "node:assert/strict";
import { compareReports, planChanges, REGRESSION_THRESHOLDS } from "./compare.ts";
import { currentReportFixture } from "../../../harness/report_fixture_current.ts";
import { jcsSha256 } from "../../util/hash.ts";
import type { ReportData } from "../types.ts";
import { renderComparePage } from "../render/compare_page.tsx";

/** A clean fixture run, `n` hours after the fixture's start, changed by `edit`, resealed. */
async function run(n: number, edit: (r: ReportData) => void = () => {}): Promise<ReportData> {
  const r = structuredClone(await currentReportFixture({ clean: true }));
  r.meta.executionId = `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
  r.meta.runId = String(100 + n);
  r.meta.startedAt = new Date(Date.parse(r.meta.startedAt) + n * 3_600_000).toISOString();
  edit(r);
  r.meta.planSnapshotSha256 = await jcsSha256(r.plan);
  const { reportSha256: _, ...rest } = r;
  r.reportSha256 = await jcsSha256(rest);
  return r;
}

Deno.test("plan differences: a changed plan is flagged with each parameter that differs", async () => {
  const a = await run(0);
  const b = await run(1, (r) => {
    r.plan.parameters = { ...r.plan.parameters, trafficMix: "HTTPS 50%", newKnob: true };
    r.plan.phases[1]!.durationS = 900;
  });
  const c = await run(2);
  const cmp = await compareReports([c, b, a]);
  assert.deepEqual(cmp.runs.map((r) => r.runId), ["100", "101", "102"]);
  assert.deepEqual(cmp.summary.planDiffers, [b.meta.executionId]);
  assert.deepEqual(cmp.runs[1]!.planChanges, [
    { path: "parameters.newKnob", baseline: null, value: true },
    { path: "parameters.trafficMix", baseline: a.plan.parameters.trafficMix, value: "HTTPS 50%" },
    { path: "phases[1].durationS", baseline: 600, value: 900 },
  ]);
  assert.deepEqual(cmp.runs[2]!.planChanges, []);
  assert.equal(cmp.runs[2]!.planDiffers, false);
});

Deno.test("lab differences: devices added and removed, software version and serial changed", async () => {
  const a = await run(0);
  const [first, second] = a.topology.devices;
  assert.ok(first && second, "the fixture has at least two devices");
  const b = await run(1, (r) => {
    r.topology.devices = r.topology.devices.filter((d) => d.id !== second.id);
    r.topology.devices.push({
      id: "dev-new",
      hostname: "fw-new-01",
      vendor: "vendor-b-ngfw",
      deviceRole: "ngfw",
    });
    const inv = r.topology.inventory![first.id]!;
    r.topology.inventory![first.id]! = { ...inv, softwareVersion: "99.1", serialNumber: "NEW-SERIAL" };
  });
  assert.equal(a.topology.inventory![first.id]!.status, "read", "the fixture reads this device's inventory");
  const cmp = await compareReports([a, b]);
  const lab = cmp.runs[1]!.lab;
  assert.deepEqual(lab.devicesAdded, [{ id: "dev-new", hostname: "fw-new-01", vendor: "vendor-b-ngfw" }]);
  assert.deepEqual(lab.devicesRemoved, [{ id: second.id, hostname: second.hostname, vendor: second.vendor }]);
  assert.deepEqual(lab.inventoryChanged.map((c) => [c.hostname, c.field, c.baseline, c.value]), [
    [first.hostname, "softwareVersion", a.topology.inventory![first.id]!.softwareVersion, "99.1"],
    [first.hostname, "serialNumber", a.topology.inventory![first.id]!.serialNumber, "NEW-SERIAL"],
  ]);
  assert.deepEqual(cmp.summary.labDiffers, [b.meta.executionId]);
  assert.equal(cmp.runs[1]!.regression, false, "a lab change alone is not a regression");

  const html = renderComparePage(cmp, [a.license]);
  for (const s of ["device added", "device removed", "software version changed", "99.1", "fw-new-01"]) {
    assert.ok(html.includes(s), s);
  }

  // A lab of 5,000 more devices (issue 49): the counts first, 20 rows, the rest named as left out.
  const big = structuredClone(cmp);
  big.runs[1]!.lab.devicesAdded = Array.from(
    { length: 5000 },
    (_, i) => ({ id: `d${i}`, hostname: `dut-${i}.lab.test`, vendor: "vendor-a-ngfw" }),
  );
  const bounded = renderComparePage(big, [a.license]);
  assert.match(
    bounded,
    /5000 device\(s\) added, 1 removed, 2 inventory change\(s\); the first 20 are listed, 4983 more are left out of print/,
  );
  assert.ok(bounded.includes("dut-19.lab.test") && !bounded.includes("dut-20.lab.test"));
  assert.ok(bounded.length < html.length + 20_000, `${bounded.length} characters`);
});

Deno.test("regression thresholds are strict and cover every KPI and the verdict", async () => {
  const base = await run(0);
  const p = base.results.aggregate.p99_ms;
  const rps = base.results.figures!.requestsPerSecond!.value;
  const err = base.results.figures!.errorRatePct!.value;
  const at = await run(
    1,
    (r) => (r.results.aggregate.p99_ms = p * (1 + REGRESSION_THRESHOLDS.latencyPct / 100)),
  );
  const past = await run(2, (r) => (r.results.aggregate.p95_ms *= 1.2));
  const slowRps = await run(3, (r) => (r.results.figures!.requestsPerSecond!.value = rps * 0.85));
  const errs = await run(4, (r) => (r.results.figures!.errorRatePct!.value = err + 1.5));
  const worse = await run(5, (r) => (r.verdict!.value = "invalid"));
  const old = await run(6, (r) => {
    delete r.results.figures;
    delete r.verdict;
  });
  const cmp = await compareReports([base, at, past, slowRps, errs, worse, old]);
  assert.equal(base.verdict!.value, "pass");
  assert.deepEqual(cmp.runs.map((r) => r.regression), [false, false, true, true, true, true, false]);
  assert.equal(cmp.runs[2]!.kpis.p95Ms.regression, true);
  assert.equal(cmp.runs[3]!.kpis.throughputRps.regression, true);
  assert.equal(cmp.runs[3]!.kpis.throughputRps.deltaPct, -15);
  assert.equal(cmp.runs[4]!.kpis.errorRatePct.regression, true);
  assert.equal(cmp.runs[5]!.kpis.verdict.worseThanBaseline, true);
  assert.deepEqual(cmp.runs[6]!.kpis.throughputRps, {
    value: null,
    delta: null,
    deltaPct: null,
    regression: false,
  });
  assert.equal(cmp.runs[6]!.kpis.verdict.value, null);
  await assert.rejects(() => compareReports([base, at], "00000000-0000-4000-8000-999999999999"), /baseline/);
});

Deno.test("planChanges lists leaves only, arrays by index", () => {
  assert.deepEqual(planChanges({ a: [1, 2], b: {} }, { a: [1], b: { c: "x" } }), [
    { path: "a[1]", baseline: 2, value: null },
    { path: "b", baseline: {}, value: null },
    { path: "b.c", baseline: null, value: "x" },
  ]);
});
