import assert from "node:assert/strict";
import { checkCases, checkFixture } from "@dutlab/core/testing";
import ngfwA from "@dutlab/adapter-vendor-a-ngfw";
import ngfwB from "@dutlab/adapter-vendor-b-ngfw";
import sw from "@dutlab/adapter-vendor-a-switch";
import bmc from "@dutlab/adapter-vendor-a-bmc";
import check from "./mod.ts";

const VENDORS = ["vendor-a-ngfw", "vendor-b-ngfw", "vendor-a-switch", "vendor-a-bmc"] as const;
type Vendor = typeof VENDORS[number];
const fx = checkFixture(check, { adapters: [ngfwA, ngfwB, sw, bmc] });

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
  checkCases(
    fx,
    VENDORS.map((v) => ({
      name: v,
      vendor: v,
      payload: PAYLOAD[v](["10.0.0.1", "ntp2.lab.example"]),
      expect: { status: "pass", detail: "2 time server(s) configured: 10.0.0.1, ntp2.lab.example" },
    })),
  );
});

Deno.test("ntp-source-configured fails with no time server on every vendor", () => {
  checkCases(fx, [
    ...VENDORS.map((v) => ({
      name: v,
      vendor: v,
      payload: PAYLOAD[v]([]),
      expect: { status: "fail", detail: "no time server is configured" } as const,
    })),
    // Servers listed but NTP sync disabled (vendor-b) or the NTP object disabled (vendor-a): no time source.
    {
      name: "vendor-b-ngfw, ntpsync disabled",
      vendor: "vendor-b-ngfw",
      payload: { results: { ntpsync: "disable", ntpserver: [{ server: "ntp1" }] } },
      expect: { status: "fail" },
    },
    {
      name: "vendor-a-ngfw, NTP object disabled",
      vendor: "vendor-a-ngfw",
      payload: { items: [{ enabled: false, ntpServers: ["ntp1"] }] },
      expect: { status: "fail" },
    },
  ]);
});

Deno.test("ntp-source-configured reports an error for a payload of the wrong shape", () => {
  // Another vendor's payload is the wrong shape for this vendor's facts.
  checkCases(
    fx,
    VENDORS.flatMap((v) => {
      const other = VENDORS[(VENDORS.indexOf(v) + 1) % VENDORS.length]!;
      return [PAYLOAD[other](["10.0.0.1"]), "10.0.0.1"].map((payload) => ({
        name: `${v} reading ${JSON.stringify(payload)}`,
        vendor: v,
        payload,
        expect: {
          status: "error",
          pass: false,
          detail: /^check error: could not evaluate the ntp_config payload \(.+\)$/,
        } as const,
      }));
    }),
  );
});

Deno.test("ntp-source-configured does not apply without an ntpServers reading", () => {
  // The check carries no guard: an evaluation handed no such reading is the engine's error, asserted for
  // every check in tests/e2e/preflight_engine_test.ts.
  // vendor-x has no adapter in the fixture: the label counts as collected, and no facts are offered.
  const p = { ...fx.plan, vendors: ["vendor-x"] };
  assert.equal(fx.run("vendor-x", {}, { plan: p }), null);
});
