import assert from "node:assert/strict";
import { defineCheck } from "../src/check.ts";
import { checkCases, checkFixture } from "./check_fixture.ts";

const pdu = { vendorKey: "acme-pdu", labels: ["outlets", "system_info"], deviceRoles: ["pdu"], facts: {} };
const sw = {
  vendorKey: "acme-switch",
  labels: ["outlets"],
  deviceRoles: ["switch", "leaf"],
  facts: { ntpServers: () => ["10.0.0.1"] },
};
/** Passes when every outlet is on; reads `system_info` too, to show `related`. */
const outletsOn = defineCheck({
  id: "outlets-on",
  description: "Every outlet is on",
  coreVersion: "^1.0.0",
  label: "outlets",
  alsoReads: ["system_info"],
  optIn: true,
  evaluate: (s, plan, { related }) => {
    const off = (s.payload as { on: boolean }[]).filter((o) => !o.on).length;
    const sys = related?.system_info;
    const model = sys === null ? "no system_info yet" : (sys?.payload as { model?: string }).model;
    return { pass: off === 0, detail: `${off} off on ${model} under ${plan.identifier}` };
  },
});

Deno.test("checkFixture's plan selects the adapters' vendors and roles and names an opt-in check", () => {
  const fx = checkFixture(outletsOn, { adapters: [pdu, sw], plan: { tlsDecrypt: "on" } });
  assert.deepEqual(fx.plan.vendors, ["acme-pdu", "acme-switch"]);
  assert.deepEqual(fx.plan.deviceRoles, ["pdu", "switch", "leaf"]);
  assert.deepEqual(fx.plan.checks, ["outlets-on"]);
  assert.equal(fx.plan.tlsDecrypt, "on");
  assert.equal(checkFixture({ ...outletsOn, optIn: false }).plan.checks, undefined);
});

Deno.test("checkFixture applies and runs the check as pre-flight does, through the vendor's adapter", () => {
  const fx = checkFixture(outletsOn, { adapters: [pdu, sw] });
  assert.equal(fx.applies("acme-pdu"), true);
  // The switch does not collect system_info (an alsoReads label); an unknown vendor is not in the plan.
  assert.equal(fx.applies("acme-switch"), false);
  assert.equal(fx.applies("acme-ups"), false);
  assert.equal(fx.applies("acme-pdu", { device: { deviceRole: "ngfw" } }), false, "a role the plan has not");
  assert.equal(fx.run("acme-switch", []), null);

  const at = new Date("2026-01-02T03:04:05Z");
  const r = fx.run("acme-pdu", [{ on: true }, { on: false }], {
    related: { system_info: { model: "P-8" } },
    snapshot: { id: "42", collectedAt: at, payloadSha256: "f".repeat(64) },
  });
  assert.deepEqual([r?.status, r?.detail, r?.deviceHostname], [
    "fail",
    "1 off on P-8 under unit-plan",
    "dev-1",
  ]);
  assert.deepEqual(r?.evidence, {
    snapshotId: "42",
    payloadSha256: "f".repeat(64),
    collectedAt: at.toISOString(),
  });
  const missing = fx.run("acme-pdu", [{ on: true }]);
  assert.equal(
    missing?.detail,
    "0 off on no system_info yet under unit-plan",
    "a related label not given is null",
  );
  assert.equal(fx.run("acme-pdu", "not a list")?.status, "error");
});

Deno.test("checkFixture's snapshot and facts options reach the check", () => {
  const ntp = defineCheck({
    id: "ntp",
    description: "NTP",
    coreVersion: "^1.0.0",
    label: "outlets",
    needs: ["ntpServers"],
    evaluate: (s, _p, { facts, now }) => ({
      pass: true,
      detail: `${facts.ntpServers(s.payload).join(",")} ${s.endpointLabel} ${s.vendor} ${now.toISOString()}`,
    }),
  });
  const now = new Date("2026-05-05T05:05:05Z");
  const fx = checkFixture(ntp, { adapters: [pdu, sw], now });
  assert.equal(fx.applies("acme-pdu"), false, "the pdu offers no ntpServers reading");
  assert.equal(fx.run("acme-switch", {})?.detail, `10.0.0.1 outlets acme-switch ${now.toISOString()}`);
  const other = fx.run("acme-pdu", {}, { facts: { ntpServers: () => ["ntp.example"] } });
  assert.equal(other?.detail, `ntp.example outlets acme-pdu ${now.toISOString()}`);
  assert.deepEqual(fx.snapshot("acme-pdu", 1).collectedAt, now);
});

Deno.test("checkCases passes a table that matches and names the first case that does not", () => {
  const fx = checkFixture(outletsOn, { adapters: [pdu, sw] });
  const on = [{ on: true }];
  checkCases(fx, [
    {
      name: "all on",
      vendor: "acme-pdu",
      payload: on,
      expect: { status: "pass", pass: true, detail: /^0 off on/ },
    },
    {
      name: "one off",
      vendor: "acme-pdu",
      payload: [{ on: false }],
      expect: { status: "fail", pass: false },
    },
    { name: "no adapter", vendor: "acme-none", payload: on, expect: null },
  ]);
  assert.throws(
    () =>
      checkCases(fx, [{
        name: "wrong detail",
        vendor: "acme-pdu",
        payload: on,
        expect: { status: "pass", detail: "x" },
      }]),
    /wrong detail: detail/,
  );
  assert.throws(
    () =>
      checkCases(fx, [{ name: "wrong status", vendor: "acme-pdu", payload: on, expect: { status: "fail" } }]),
    /wrong status: status/,
  );
  assert.throws(
    () => checkCases(fx, [{ name: "applies", vendor: "acme-pdu", payload: on, expect: null }]),
    /applies: expected/,
  );
});
