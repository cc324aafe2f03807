import assert from "node:assert/strict";
import { checkFixture } from "@dutlab/core/testing";
import ngfwA from "@dutlab/adapter-vendor-a-ngfw";
import ngfwB from "@dutlab/adapter-vendor-b-ngfw";
import sw from "@dutlab/adapter-vendor-a-switch";
import bmc from "@dutlab/adapter-vendor-a-bmc";
import check from "./mod.ts";

const VENDORS = ["vendor-a-ngfw", "vendor-b-ngfw", "vendor-a-switch", "vendor-a-bmc"] as const;
type Vendor = typeof VENDORS[number];
const fx = checkFixture(check, { adapters: [ngfwA, ngfwB, sw, bmc] });
const run = (vendor: Vendor, payload: unknown) => fx.run(vendor, payload);

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
  assert.deepEqual(fx.plan.vendors, [...VENDORS]);
  for (const v of VENDORS) assert.equal(fx.applies(v), true, v);
  assert.equal(fx.applies("vendor-a-bmc", { plan: { ...fx.plan, vendors: ["vendor-a-ngfw"] } }), false);
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
    const other = VENDORS[(VENDORS.indexOf(v) + 1) % VENDORS.length]!;
    for (const payload of [PAYLOAD[other](["10.0.0.1"]), "10.0.0.1"]) {
      const r = run(v, payload);
      assert.equal(r?.status, "error", `${v} reading ${JSON.stringify(payload)}`);
      assert.equal(r?.pass, false);
      assert.match(r!.detail, /^check error: could not evaluate the ntp_config payload \(.+\)$/);
    }
  }
});

Deno.test("ntp-source-configured does not apply without an ntpServers reading", () => {
  // The check carries no guard: an evaluation handed no such reading is the engine's error, asserted for
  // every check in tests/e2e/preflight_engine_test.ts.
  // vendor-x has no adapter in the fixture: the label counts as collected, and no facts are offered.
  const p = { ...fx.plan, vendors: ["vendor-x"] };
  assert.equal(fx.run("vendor-x", {}, { plan: p }), null);
});
