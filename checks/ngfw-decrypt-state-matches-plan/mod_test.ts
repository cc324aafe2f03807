import assert from "node:assert/strict";
import type { Plan } from "@dutlab/core";
import { type CheckCase, checkCases, checkFixture } from "@dutlab/core/testing";
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
type Ngfw = "vendor-a-ngfw" | "vendor-b-ngfw";

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

/** A case: the vendor's `decrypt_policy` payload evaluated under the plan. */
const row = (name: string, vendor: Ngfw, payload: unknown, p: Plan, expect: CheckCase["expect"]) => ({
  name,
  vendor,
  payload,
  options: { plan: p },
  expect,
});

Deno.test("decrypt-on plan passes with decrypt rules on either vendor", () => {
  checkCases(fx, [
    row(
      "vendor-a-ngfw, one decrypt rule",
      "vendor-a-ngfw",
      fdm(["DECRYPT_RE_SIGN", "DO_NOT_DECRYPT"]),
      plan("on"),
      {
        status: "pass",
        detail: "the plan requires decrypt-on and 1 decrypt rule(s) are configured",
      },
    ),
    row(
      "vendor-b-ngfw, two deep-inspection policies",
      "vendor-b-ngfw",
      restV2(["deep", "deep"]),
      plan("on"),
      {
        status: "pass",
        detail: "the plan requires decrypt-on and 2 decrypt rule(s) are configured",
      },
    ),
  ]);
});

Deno.test("decrypt-on plan fails when no decrypt rule is configured", () => {
  const none = {
    status: "fail",
    detail: "the plan requires decrypt-on but no decrypt rules are configured",
  } as const;
  checkCases(fx, [
    row("vendor-a-ngfw, no decrypt rule", "vendor-a-ngfw", fdm(["DO_NOT_DECRYPT"]), plan("on"), none),
    // The policy detached: it decrypts nothing.
    row("vendor-a-ngfw, policy detached", "vendor-a-ngfw", fdm(["DECRYPT_RE_SIGN"], false), plan("on"), none),
    row(
      "vendor-b-ngfw, certificate inspection only",
      "vendor-b-ngfw",
      restV2(["certificate-inspection"]),
      plan("on"),
      none,
    ),
  ]);
});

Deno.test("decrypt-off plan passes with zero decrypt rules and fails with any", () => {
  checkCases(fx, [
    row("vendor-a-ngfw, no decrypt rule", "vendor-a-ngfw", fdm(["DO_NOT_DECRYPT"]), plan("off"), {
      status: "pass",
      detail: "the plan requires decrypt-off and no decrypt rules are configured",
    }),
    row(
      "vendor-b-ngfw, one deep inspection",
      "vendor-b-ngfw",
      restV2(["deep", "certificate-inspection"]),
      plan("off"),
      {
        status: "fail",
        detail: "the plan requires decrypt-off but 1 decrypt rule(s) are configured",
      },
    ),
  ]);
});

Deno.test("ngfw-decrypt-state-matches-plan reports an error for a payload of the wrong shape", () => {
  // Each vendor's payload read through the other vendor's facts, and plain garbage.
  const error = {
    status: "error",
    pass: false,
    detail: /^check error: could not evaluate the decrypt_policy payload/,
  } as const;
  const cases: Array<[Ngfw, unknown]> = [
    ["vendor-a-ngfw", restV2(["deep"])],
    ["vendor-b-ngfw", fdm(["DECRYPT_RE_SIGN"])],
    ["vendor-a-ngfw", []],
    ["vendor-b-ngfw", null],
  ];
  checkCases(
    fx,
    cases.map(([vendor, payload]) =>
      row(`${vendor} ${JSON.stringify(payload)}`, vendor, payload, plan("on"), error)
    ),
  );
});

Deno.test("ngfw-decrypt-state-matches-plan reports an error for a plan without on/off", () => {
  checkCases(fx, [
    row("tlsDecrypt maybe", "vendor-a-ngfw", fdm([]), { ...plan("on"), tlsDecrypt: "maybe" as "on" }, {
      status: "error",
      detail: /tlsDecrypt "maybe", not on\/off/,
    }),
  ]);
});
