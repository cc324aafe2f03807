import assert from "node:assert/strict";
import type { Plan } from "../../plan.ts";
import type { PreflightResult } from "../../preflight/engine.ts";
import { rawFigures } from "./figures.ts";
import { computeVerdict, driftForVerdict, type VerdictDrift, type VerdictInputs } from "./verdict.ts";

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
  dependsOn: [{ deviceRole: "ngfw", labels: ["ntp_config", "decrypt_policy"] }],
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
  drift: [],
});

const drifted = (host: string, role: string | null, label: string, changeCount = 1): VerdictDrift => ({
  deviceHostname: host,
  deviceRole: role,
  endpointLabel: label,
  changeCount,
});

const effect = (v: ReturnType<typeof computeVerdict>, input: string) =>
  v.reasons.find((r) => r.input === input)!.effect;

Deno.test("a clean run passes, with one reason per input", () => {
  const v = computeVerdict(clean());
  assert.equal(v.value, "pass");
  assert.equal(v.rule, "dutlab-verdict-2");
  assert.deepEqual(v.reasons.map((r) => [r.input, r.effect]), [
    ["outcome", "pass"],
    ["slo", "pass"],
    ["error-rate", "pass"],
    ["load-generator-thresholds", "pass"],
    ["preflight", "pass"],
    ["decrypt-alerts", "pass"],
    ["decrypt-config", "pass"],
    ["coverage", "pass"],
    ["configuration-drift", "pass"],
  ]);
  assert.match(v.reasons[2]!.detail, /0\.5 % of requests failed \(5 of 1000\); the plan allows at most 1 %/);
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
    [{ drift: [drifted("fw-1", "ngfw", "ntp_config")] }, "invalid", "configuration-drift"],
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

Deno.test("drift on a label the plan depends on invalidates the run; drift elsewhere is listed, effect none", () => {
  const reason = (v: ReturnType<typeof computeVerdict>) =>
    v.reasons.find((r) => r.input === "configuration-drift")!;
  // The firewall's NTP source and decrypt rules changed: both named, with their change counts.
  const hit = computeVerdict({
    ...clean(),
    drift: [drifted("fw-1", "ngfw", "ntp_config"), drifted("fw-2", "ngfw", "decrypt_policy", 3)],
  });
  assert.equal(hit.value, "invalid");
  assert.equal(reason(hit).effect, "invalid");
  assert.match(reason(hit).detail, /fw-1 ntp_config \(1 change\), fw-2 decrypt_policy \(3 changes\)/);
  assert.doesNotMatch(reason(hit).detail, /Also changed/);

  // The same label on a device of another role, or another label of a firewall: not what the plan depends on.
  const elsewhere = computeVerdict({
    ...clean(),
    drift: [drifted("sw-1", "switch", "ntp_config"), drifted("fw-1", "ngfw", "interfaces", 2)],
  });
  assert.equal(elsewhere.value, "pass");
  assert.equal(reason(elsewhere).effect, "none");
  assert.match(
    reason(elsewhere).detail,
    /not what the plan depends on: sw-1 ntp_config .*fw-1 interfaces \(2/,
  );

  // Both at once: invalid, and the detail still names the rest.
  const both = computeVerdict({
    ...clean(),
    drift: [drifted("sw-1", "switch", "vpc_status"), drifted("fw-1", "ngfw", "decrypt_policy")],
  });
  assert.equal(reason(both).effect, "invalid");
  assert.match(reason(both).detail, /fw-1 decrypt_policy .*Also changed: sw-1 vpc_status/);

  // A device without a recorded role never matches a role of the plan.
  assert.equal(
    reason(computeVerdict({ ...clean(), drift: [drifted("x", null, "ntp_config")] })).effect,
    "none",
  );

  // A plan that names no dependency: drift is reported, never counted.
  const none = computeVerdict({
    ...clean(),
    plan: { ...plan, dependsOn: undefined },
    drift: [drifted("fw-1", "ngfw", "decrypt_policy")],
  });
  assert.equal(none.value, "pass");
  assert.equal(reason(none).effect, "none");
  assert.match(reason(none).detail, /the plan names no dependency/);
});

Deno.test("driftForVerdict gives each drift entry its device's role from the lab at start", () => {
  const change = { op: "replace", path: "/servers/0", before: "a", after: "b" };
  assert.deepEqual(
    driftForVerdict(
      {
        drift: [
          { deviceId: "d1", deviceHostname: "fw-1", endpointLabel: "ntp_config", changes: [change, change] },
          { deviceId: "gone", deviceHostname: "old", endpointLabel: "ntp_config", changes: [change] },
        ],
      },
      [{ id: "d1", deviceRole: "ngfw" }, { id: "d2", deviceRole: "switch" }],
    ),
    [drifted("fw-1", "ngfw", "ntp_config", 2), drifted("old", null, "ntp_config", 1)],
  );
});
