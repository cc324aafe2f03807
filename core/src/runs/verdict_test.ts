import assert from "node:assert/strict";
import type { Plan } from "../plan.ts";
import type { PreflightResult } from "../preflight.ts";
import { rawFigures } from "./figures.ts";
import { computeVerdict, type VerdictInputs } from "./verdict.ts";

const plan: Plan = {
  identifier: "p",
  displayName: "P",
  description: "",
  tlsDecrypt: "on",
  sloTargetP99Ms: 100,
  maxErrorRatePct: 1,
  deploymentMode: "inline",
  phases: [{ name: "a", durationS: 600, load: {} }, { name: "b", durationS: 2400, load: {} }],
  vendors: [],
  deviceRoles: [],
  parameters: {},
};
const preflight = (pass: boolean): PreflightResult => ({
  planIdentifier: "p",
  ranAt: "2026-11-23T00:00:00Z",
  checksRun: 12,
  checksPassed: pass ? 12 : 1,
  checksFailed: pass ? 0 : 11,
  checksSkipped: 0,
  pass,
  checks: pass ? [] : [{
    checkId: "ngfw-decrypt-state-matches-plan",
    description: "",
    deviceId: "d",
    deviceHostname: "fw-1",
    vendor: "v",
    pass: false,
    status: "fail",
    detail: "off",
    evidence: null,
  }],
  summary: pass ? "12/12 checks passed" : "1/12 checks passed",
});

/** A clean run: every input passes. */
const clean = (): VerdictInputs => ({
  outcome: "passed",
  plan,
  observedP99Ms: 90,
  figures: rawFigures(1000, { requests: 1000, failedRequests: 5, durationS: 3000 }, 3010),
  thresholds: [{ metric: "http_req_duration", expression: "p(95)<500", ok: true }],
  preflight: preflight(true),
  alerts: [],
  decryptAtStart: "on",
  decryptAtEnd: "on",
});

const effect = (v: ReturnType<typeof computeVerdict>, input: string) =>
  v.reasons.find((r) => r.input === input)!.effect;

Deno.test("a clean run passes, with one reason per input", () => {
  const v = computeVerdict(clean());
  assert.equal(v.value, "pass");
  assert.equal(v.rule, "dutlab-verdict-1");
  assert.deepEqual(v.reasons.map((r) => [r.input, r.effect]), [
    ["outcome", "pass"],
    ["slo", "pass"],
    ["error-rate", "pass"],
    ["load-generator-thresholds", "pass"],
    ["preflight", "pass"],
    ["decrypt-alerts", "pass"],
    ["decrypt-config", "pass"],
    ["coverage", "pass"],
  ]);
  assert.match(v.reasons[2].detail, /0\.5 % of requests failed \(5 of 1000\); the plan allows at most 1 %/);
});

Deno.test("each input that undermines a result changes the verdict, the most severe one wins", () => {
  const cases: Array<[Partial<VerdictInputs>, string, string]> = [
    [{ outcome: "failed" }, "fail", "outcome"],
    [{ outcome: "aborted" }, "invalid", "outcome"],
    [{ observedP99Ms: 101 }, "fail", "slo"],
    [{ figures: rawFigures(1000, { failedRequests: 434, durationS: 3000 }, 3000) }, "fail", "error-rate"],
    [{ figures: rawFigures(1000, { durationS: 3000 }, 3000) }, "inconclusive", "error-rate"],
    [
      { thresholds: [{ metric: "http_req_failed", expression: "rate<0.01", ok: false }] },
      "fail",
      "load-generator-thresholds",
    ],
    [{ preflight: preflight(false) }, "inconclusive", "preflight"],
    [
      {
        alerts: [{
          name: "TLSDecryptModeChanged",
          at: "2026-11-23T00:10:00Z",
          deviceId: "d",
          deviceHostname: "fw-1",
          from: "on",
          to: "off",
          snapshotId: "9",
        }],
      },
      "invalid",
      "decrypt-alerts",
    ],
    [{ decryptAtStart: "off" }, "invalid", "decrypt-config"],
    [{ decryptAtEnd: "mixed" }, "invalid", "decrypt-config"],
    [{ decryptAtStart: "unknown" }, "inconclusive", "decrypt-config"],
    [{ figures: rawFigures(1000, { failedRequests: 0, durationS: 90 }, 90) }, "inconclusive", "coverage"],
  ];
  for (const [change, value, input] of cases) {
    const v = computeVerdict({ ...clean(), ...change });
    assert.equal(v.value, value, `${JSON.stringify(change)} -> ${value}`);
    assert.equal(effect(v, input), value, input);
  }
  // Severity: invalid over fail over inconclusive.
  const all = computeVerdict({
    ...clean(),
    observedP99Ms: 500,
    preflight: preflight(false),
    decryptAtEnd: "off",
  });
  assert.equal(all.value, "invalid");
  assert.equal(computeVerdict({ ...clean(), observedP99Ms: 500, preflight: preflight(false) }).value, "fail");
  // 95 % coverage is enough.
  const near = computeVerdict({
    ...clean(),
    figures: rawFigures(1000, { failedRequests: 0, durationS: 2850 }, 0),
  });
  assert.equal(near.value, "pass");
  // A plan without threshold: the error rate does not apply.
  const noMax = computeVerdict({ ...clean(), plan: { ...plan, maxErrorRatePct: undefined } });
  assert.equal(effect(noMax, "error-rate"), "none");
  assert.equal(noMax.value, "pass");
});
