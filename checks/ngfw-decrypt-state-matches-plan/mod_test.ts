import assert from "node:assert/strict";
import type { CheckSnapshot, Plan } from "@dutlab/core";
import { checkApplies, evaluateCheck } from "@dutlab/core/testing";
import sw from "@dutlab/adapter-vendor-a-switch";
import bmc from "@dutlab/adapter-vendor-a-bmc";
import ngfwA from "@dutlab/adapter-vendor-a-ngfw";
import ngfwB from "@dutlab/adapter-vendor-b-ngfw";
import check from "./mod.ts";

const NOW = new Date("2026-11-21T10:00:00Z");
const plan = (tlsDecrypt: "on" | "off"): Plan => ({
  identifier: `unit-decrypt-${tlsDecrypt}`,
  displayName: "Unit plan",
  description: "",
  tlsDecrypt,
  sloTargetP99Ms: 100,
  deploymentMode: "inline-routed",
  phases: [],
  vendors: ["vendor-a-ngfw", "vendor-b-ngfw", "vendor-a-switch", "vendor-a-bmc"],
  deviceRoles: ["ngfw", "switch", "bmc"],
  parameters: {},
});
const FACTS = { "vendor-a-ngfw": ngfwA.facts ?? {}, "vendor-b-ngfw": ngfwB.facts ?? {} };
const device = (vendor: string) => ({ id: "d-1", hostname: "fw-1", vendor, deviceRole: "ngfw" });
const snapshot = (vendor: string, payload: unknown): CheckSnapshot => ({
  id: "7",
  deviceId: "d-1",
  endpointLabel: "decrypt_policy",
  vendor,
  payload,
  payloadSha256: "b".repeat(64),
  collectedAt: NOW,
});
const run = (vendor: keyof typeof FACTS, payload: unknown, p: Plan) =>
  evaluateCheck(check, device(vendor), p, snapshot(vendor, payload), { now: NOW, facts: FACTS[vendor] });

/** vendor-a-ngfw (FDM) `decrypt_policy`: the SSL policy is attached to the access policy or not. */
const fdm = (actions: string[], attached = true) => ({
  accessPolicies: {
    items: [{ id: "ap-1", sslPolicy: attached ? { id: "ssl-1", type: "sslpolicy" } : null }],
  },
  sslPolicies: { items: [{ id: "ssl-1", type: "sslpolicy" }] },
  sslRules: { "ssl-1": { items: actions.map((ruleAction, i) => ({ id: `r${i}`, ruleAction })) } },
});
/** vendor-b-ngfw (REST v2) `decrypt_policy`: accept policies and their SSL/SSH inspection profiles. */
const restV2 = (profiles: string[]) => ({
  policies: {
    results: profiles.map((p, i) => ({
      policyid: i + 1,
      status: "enable",
      action: "accept",
      "ssl-ssh-profile": p,
    })),
  },
  sslSshProfiles: {
    results: [
      { name: "deep", ssl: { "inspect-all": "deep-inspection" } },
      { name: "certificate-inspection", ssl: { "inspect-all": "certificate-inspection" } },
    ],
  },
});

Deno.test("ngfw-decrypt-state-matches-plan applies to both firewall vendors of the plan only", () => {
  assert.equal(check.label, "decrypt_policy");
  assert.deepEqual(check.needs, ["decryptRuleCount"]);
  const adapters = {
    "vendor-a-ngfw": ngfwA,
    "vendor-b-ngfw": ngfwB,
    "vendor-a-switch": sw,
    "vendor-a-bmc": bmc,
  };
  for (const v of ["vendor-a-ngfw", "vendor-b-ngfw"] as const) {
    assert.equal(checkApplies(check, device(v), plan("on"), adapters[v]), true);
  }
  for (const v of ["vendor-a-switch", "vendor-a-bmc"] as const) {
    assert.equal(checkApplies(check, device(v), plan("on"), adapters[v]), false, v);
  }
  assert.equal(checkApplies(check, device("vendor-c-ngfw"), plan("on"), undefined), false);
  assert.equal(
    checkApplies(check, device("vendor-b-ngfw"), { ...plan("on"), vendors: ["vendor-a-ngfw"] }, ngfwB),
    false,
  );
});

Deno.test("decrypt-on plan passes with decrypt rules on either vendor", () => {
  const a = run("vendor-a-ngfw", fdm(["DECRYPT_RE_SIGN", "DO_NOT_DECRYPT"]), plan("on"));
  assert.equal(a?.status, "pass");
  assert.equal(a?.detail, "the plan requires decrypt-on and 1 decrypt rule(s) are configured");
  const b = run("vendor-b-ngfw", restV2(["deep", "deep"]), plan("on"));
  assert.equal(b?.status, "pass");
  assert.equal(b?.detail, "the plan requires decrypt-on and 2 decrypt rule(s) are configured");
});

Deno.test("decrypt-on plan fails when no decrypt rule is configured", () => {
  for (
    const r of [
      run("vendor-a-ngfw", fdm(["DO_NOT_DECRYPT"]), plan("on")),
      run("vendor-a-ngfw", fdm(["DECRYPT_RE_SIGN"], false), plan("on")), // policy detached: decrypts nothing
      run("vendor-b-ngfw", restV2(["certificate-inspection"]), plan("on")),
    ]
  ) {
    assert.equal(r?.status, "fail");
    assert.equal(r?.detail, "the plan requires decrypt-on but no decrypt rules are configured");
  }
});

Deno.test("decrypt-off plan passes with zero decrypt rules and fails with any", () => {
  const ok = run("vendor-a-ngfw", fdm(["DO_NOT_DECRYPT"]), plan("off"));
  assert.equal(ok?.status, "pass");
  assert.equal(ok?.detail, "the plan requires decrypt-off and no decrypt rules are configured");
  const bad = run("vendor-b-ngfw", restV2(["deep", "certificate-inspection"]), plan("off"));
  assert.equal(bad?.status, "fail");
  assert.equal(bad?.detail, "the plan requires decrypt-off but 1 decrypt rule(s) are configured");
});

Deno.test("ngfw-decrypt-state-matches-plan reports an error for a payload of the wrong shape", () => {
  // Each vendor's payload read through the other vendor's facts, and plain garbage.
  const cases: Array<[keyof typeof FACTS, unknown]> = [
    ["vendor-a-ngfw", restV2(["deep"])],
    ["vendor-b-ngfw", fdm(["DECRYPT_RE_SIGN"])],
    ["vendor-a-ngfw", []],
    ["vendor-b-ngfw", null],
  ];
  for (const [vendor, payload] of cases) {
    const r = run(vendor, payload, plan("on"));
    assert.equal(r?.status, "error", `${vendor} ${JSON.stringify(payload)}`);
    assert.equal(r?.pass, false);
    assert.match(r!.detail, /^check error: could not evaluate the decrypt_policy payload/);
  }
});

Deno.test("ngfw-decrypt-state-matches-plan reports an error for a plan without on/off", () => {
  const r = run("vendor-a-ngfw", fdm([]), { ...plan("on"), tlsDecrypt: "maybe" as "on" });
  assert.equal(r?.status, "error");
  assert.match(r!.detail, /tlsDecrypt "maybe", not on\/off/);
});
