import assert from "node:assert/strict";
import { checkCases, checkFixture } from "@dutlab/core/testing";
import sw from "@dutlab/adapter-vendor-a-switch";
import bmc from "@dutlab/adapter-vendor-a-bmc";
import ngfwA from "@dutlab/adapter-vendor-a-ngfw";
import ngfwB from "@dutlab/adapter-vendor-b-ngfw";
import check from "./mod.ts";

const fx = checkFixture(check, { adapters: [ngfwA, ngfwB, sw, bmc], plan: { tlsDecrypt: "on" } });
/** The FDM `ha_status` object as the adapter stores it. */
const ha = (nodeState: string) => ({
  nodeRole: "HA_PRIMARY",
  nodeState,
  peerNodeState: "HA_STANDBY_NODE",
  configStatus: "IN_SYNC",
  haHealthStatus: "HEALTHY",
});

Deno.test("ngfw-ha-state-sane applies to vendor-a-ngfw devices of the plan only", () => {
  assert.equal(check.label, "ha_status");
  assert.deepEqual(check.needs, ["haState"]);
  assert.equal(fx.applies("vendor-a-ngfw"), true);
  for (const v of ["vendor-b-ngfw", "vendor-a-switch", "vendor-a-bmc"]) assert.equal(fx.applies(v), false, v);
  assert.equal(fx.applies("vendor-a-ngfw", { plan: { ...fx.plan, vendors: [] } }), false);
  assert.equal(fx.applies("vendor-a-ngfw", { plan: { ...fx.plan, deviceRoles: ["switch"] } }), false);
});

const NGFW = "vendor-a-ngfw";

Deno.test("ngfw-ha-state-sane passes on states the adapter maps to a sane catalog state", () => {
  const cases: Array<[string, string]> = [
    ["HA_ACTIVE_NODE", "ACTIVE"],
    ["SINGLE_NODE", "ACTIVE"],
    ["HA_STANDBY_NODE", "STANDBY_READY"],
    ["HA_NEGOTIATING_NODE", "NEGOTIATION"],
    ["HA_CONFIGURATION_SYNC", "NEGOTIATION"],
  ];
  checkCases(
    fx,
    cases.map(([raw, mapped]) => ({
      name: raw,
      vendor: NGFW,
      payload: ha(raw),
      expect: { status: "pass", detail: `HA state ${raw} (maps to ${mapped})` },
    })),
  );
});

Deno.test("ngfw-ha-state-sane fails on states that map to no catalog state and shows the device's value", () => {
  checkCases(
    fx,
    ["HA_FAILED_NODE", "HA_SUSPENDED_NODE", "HA_DISABLED_NODE", "HA_UNKNOWN_NODE", "NEW_STATE"].map((
      raw,
    ) => ({
      name: raw,
      vendor: NGFW,
      payload: ha(raw),
      expect: {
        status: "fail",
        detail:
          `HA state ${raw} maps to no catalog state (expected one of ACTIVE, STANDBY_READY, NEGOTIATION, JOIN)`,
      },
    })),
  );
});

Deno.test("ngfw-ha-state-sane judges the mapped state with plain fixture facts", () => {
  // A fixture haState reading that yields each catalog state: the check trusts the adapter's mapping.
  checkCases(
    fx,
    (["ACTIVE", "STANDBY_READY", "NEGOTIATION", "JOIN"] as const).map((mapped) => ({
      name: mapped,
      vendor: NGFW,
      payload: {},
      options: { facts: { haState: () => ({ raw: `raw-${mapped}`, mapped }) } },
      expect: { status: "pass", detail: `HA state raw-${mapped} (maps to ${mapped})` },
    })),
  );
});

Deno.test("ngfw-ha-state-sane reports an error for a payload of the wrong shape", () => {
  checkCases(
    fx,
    [{}, { nodeState: 3 }, "HA_ACTIVE_NODE", null].map((payload) => ({
      name: JSON.stringify(payload),
      vendor: NGFW,
      payload,
      expect: {
        status: "error",
        pass: false,
        detail: /^check error: could not evaluate the ha_status payload \(.+\)$/,
      },
    })),
  );
});

Deno.test("ngfw-ha-state-sane does not apply without an haState reading", () => {
  // The check carries no guard: an evaluation handed no such reading is the engine's error, asserted for
  // every check in tests/e2e/preflight_engine_test.ts.
  const payload = { results: { mode: "standalone" } };
  assert.equal(fx.run("vendor-b-ngfw", payload), null);
});
