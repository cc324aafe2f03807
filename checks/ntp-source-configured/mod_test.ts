import assert from "node:assert/strict";
import type { AdapterFacts, CheckSnapshot, Plan } from "@dutlab/core";
import { checkApplies, evaluateCheck } from "@dutlab/core/testing";
import ngfwA from "@dutlab/adapter-vendor-a-ngfw";
import ngfwB from "@dutlab/adapter-vendor-b-ngfw";
import sw from "@dutlab/adapter-vendor-a-switch";
import bmc from "@dutlab/adapter-vendor-a-bmc";
import check from "./mod.ts";

const NOW = new Date("2026-11-21T10:00:00Z");
const VENDORS = ["vendor-a-ngfw", "vendor-b-ngfw", "vendor-a-switch", "vendor-a-bmc"] as const;
type Vendor = typeof VENDORS[number];
const plan: Plan = {
  identifier: "unit-plan",
  displayName: "Unit plan",
  description: "",
  tlsDecrypt: "off",
  sloTargetP99Ms: 100,
  deploymentMode: "inline-routed",
  phases: [],
  vendors: [...VENDORS],
  deviceRoles: ["ngfw", "switch", "bmc"],
  parameters: {},
};
const FACTS: Record<Vendor, AdapterFacts> = {
  "vendor-a-ngfw": ngfwA.facts ?? {},
  "vendor-b-ngfw": ngfwB.facts ?? {},
  "vendor-a-switch": sw.facts ?? {},
  "vendor-a-bmc": bmc.facts ?? {},
};
const device = (vendor: string) => ({ id: "d-1", hostname: "dev-1", vendor, deviceRole: null });
const snapshot = (vendor: string, payload: unknown): CheckSnapshot => ({
  id: "9",
  deviceId: "d-1",
  endpointLabel: "ntp_config",
  vendor,
  payload,
  payloadSha256: "c".repeat(64),
  collectedAt: NOW,
});
const run = (vendor: Vendor, payload: unknown) =>
  evaluateCheck(check, device(vendor), plan, snapshot(vendor, payload), { now: NOW, facts: FACTS[vendor] });

/** Each vendor's `ntp_config` payload with these servers, in the shape its adapter stores. */
const PAYLOAD: Record<Vendor, (servers: string[]) => unknown> = {
  "vendor-a-ngfw": (s) => ({ items: [{ type: "ntp", enabled: true, ntpServers: s }] }),
  "vendor-b-ngfw": (s) => ({
    results: { ntpsync: "enable", type: "custom", ntpserver: s.map((server, id) => ({ id, server })) },
  }),
  "vendor-a-switch": (s) => ({
    totalCount: "1",
    imdata: [{
      datetimeClkPol: {
        attributes: { adminSt: "enabled" },
        children: s.map((name) => ({ datetimeNtpProvider: { attributes: { name, provT: "server" } } })),
      },
    }],
  }),
  "vendor-a-bmc": (s) => ({
    "@odata.type": "#ManagerNetworkProtocol.v1_5_0.ManagerNetworkProtocol",
    NTP: { ProtocolEnabled: true, NTPServers: s },
  }),
};

Deno.test("ntp-source-configured applies to every vendor the plan involves", () => {
  assert.equal(check.label, "ntp_config");
  const adapters = {
    "vendor-a-ngfw": ngfwA,
    "vendor-b-ngfw": ngfwB,
    "vendor-a-switch": sw,
    "vendor-a-bmc": bmc,
  };
  for (const v of VENDORS) assert.equal(checkApplies(check, device(v), plan, adapters[v]), true, v);
  assert.equal(
    checkApplies(check, device("vendor-a-bmc"), { ...plan, vendors: ["vendor-a-ngfw"] }, bmc),
    false,
  );
});

Deno.test("ntp-source-configured passes with a time server on every vendor and lists them", () => {
  for (const v of VENDORS) {
    const r = run(v, PAYLOAD[v](["10.0.0.1", "ntp2.lab.example"]));
    assert.equal(r?.status, "pass", v);
    assert.equal(r?.detail, "2 time server(s) configured: 10.0.0.1, ntp2.lab.example", v);
  }
});

Deno.test("ntp-source-configured fails with no time server on every vendor", () => {
  for (const v of VENDORS) {
    const r = run(v, PAYLOAD[v]([]));
    assert.equal(r?.status, "fail", v);
    assert.equal(r?.detail, "no time server is configured", v);
  }
  // Servers listed but NTP sync disabled (vendor-b) or the NTP object disabled (vendor-a): no time source.
  const b = run("vendor-b-ngfw", { results: { ntpsync: "disable", ntpserver: [{ server: "ntp1" }] } });
  assert.equal(b?.status, "fail");
  const a = run("vendor-a-ngfw", { items: [{ enabled: false, ntpServers: ["ntp1"] }] });
  assert.equal(a?.status, "fail");
});

Deno.test("ntp-source-configured reports an error for a payload of the wrong shape", () => {
  for (const v of VENDORS) {
    // Another vendor's payload is the wrong shape for this vendor's facts.
    const other = VENDORS[(VENDORS.indexOf(v) + 1) % VENDORS.length];
    for (const payload of [PAYLOAD[other](["10.0.0.1"]), "10.0.0.1"]) {
      const r = run(v, payload);
      assert.equal(r?.status, "error", `${v} reading ${JSON.stringify(payload)}`);
      assert.equal(r?.pass, false);
      assert.match(r!.detail, /^check error: could not evaluate the ntp_config payload \(.+\)$/);
    }
  }
});

Deno.test("ntp-source-configured does not apply without an ntpServers reading; evaluate refuses one", () => {
  const p = { ...plan, vendors: ["vendor-x"] };
  const s = snapshot("vendor-x", {});
  assert.equal(evaluateCheck(check, device("vendor-x"), p, s, { now: NOW, facts: {} }), null);
  assert.throws(
    () => check.evaluate(s, p, { now: NOW, facts: {} }),
    /vendor vendor-x offers no ntpServers reading/,
  );
});
