import assert from "node:assert/strict";
import type { Plan } from "@dutlab/core";
import { checkFixture } from "@dutlab/core/testing";
import sw from "@dutlab/adapter-vendor-a-switch";
import bmc from "@dutlab/adapter-vendor-a-bmc";
import ngfwA from "@dutlab/adapter-vendor-a-ngfw";
import ngfwB from "@dutlab/adapter-vendor-b-ngfw";
import check from "./mod.ts";

const fx = checkFixture(check, { adapters: [ngfwA, ngfwB, sw, bmc] });
const plan = (tlsDecrypt: "on" | "off"): Plan => ({
  ...fx.plan,
  identifier: `unit-decrypt-${tlsDecrypt}`,
  tlsDecrypt,
});
const run = (vendor: "vendor-a-ngfw" | "vendor-b-ngfw", payload: unknown, p: Plan) =>
  fx.run(vendor, payload, { plan: p });

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
  for (const v of ["vendor-a-ngfw", "vendor-b-ngfw"]) {
    assert.equal(fx.applies(v, { plan: plan("on") }), true, v);
  }
  for (const v of ["vendor-a-switch", "vendor-a-bmc"]) {
    assert.equal(fx.applies(v, { plan: plan("on") }), false, v);
  }
  // A vendor without an adapter (listed in the plan) is served by nothing.
  assert.equal(fx.applies("vendor-c-ngfw", { plan: { ...plan("on"), vendors: ["vendor-c-ngfw"] } }), false);
  assert.equal(fx.applies("vendor-b-ngfw", { plan: { ...plan("on"), vendors: ["vendor-a-ngfw"] } }), false);
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
  const cases: Array<["vendor-a-ngfw" | "vendor-b-ngfw", unknown]> = [
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
