import assert from "node:assert/strict";
import { checkCases, checkFixture } from "@dutlab/core/testing";
import bmc from "@dutlab/adapter-vendor-a-bmc";
import ngfwA from "@dutlab/adapter-vendor-a-ngfw";
import ngfwB from "@dutlab/adapter-vendor-b-ngfw";
import sw from "@dutlab/adapter-vendor-a-switch";
import check from "./mod.ts";

const fx = checkFixture(check, { adapters: [ngfwA, ngfwB, sw, bmc], now: new Date("2026-11-23T10:00:00Z") });
/** A Redfish ComputerSystem as `system_info` stores it (DMTF public rackmount mockup, trimmed). */
const system = (extra: Record<string, unknown>) => ({
  "@odata.id": "/redfish/v1/Systems/437XR1138R2",
  "@odata.type": "#ComputerSystem.v1_27_0.ComputerSystem",
  Id: "437XR1138R2",
  Status: { State: "Enabled", Health: "OK" },
  ...extra,
});

Deno.test("bmc-power-on applies where the adapter reads a power state: vendor-a-bmc of today's adapters", () => {
  assert.equal(check.label, "system_info");
  assert.deepEqual(check.needs, ["powerState"]);
  assert.equal(fx.applies("vendor-a-bmc"), true);
  // Opt-in: a plan that does not name the check does not run it.
  assert.equal(check.optIn, true);
  assert.equal(fx.applies("vendor-a-bmc", { plan: { ...fx.plan, checks: undefined } }), false);
  for (const v of ["vendor-a-ngfw", "vendor-b-ngfw", "vendor-a-switch"]) {
    assert.equal(fx.applies(v), false, v);
  }
  assert.equal(fx.applies("vendor-a-bmc", { plan: { ...fx.plan, deviceRoles: ["ngfw"] } }), false);
});

const BMC = "vendor-a-bmc";

Deno.test("bmc-power-on passes for On and fails for any other or a missing PowerState", () => {
  checkCases(fx, [
    {
      name: "On",
      vendor: BMC,
      payload: system({ PowerState: "On" }),
      expect: { status: "pass", detail: "system power state On" },
    },
    {
      name: "Off",
      vendor: BMC,
      payload: system({ PowerState: "Off" }),
      expect: { status: "fail", detail: "system power state Off (expected On)" },
    },
    {
      name: "PoweringOn",
      vendor: BMC,
      payload: system({ PowerState: "PoweringOn" }),
      expect: { status: "fail" },
    },
    {
      name: "no PowerState",
      vendor: BMC,
      payload: system({}),
      expect: { status: "fail", detail: "system power state not reported (expected On)" },
    },
    {
      name: "no ComputerSystem offered",
      vendor: BMC,
      payload: { present: false, resource: "ComputerSystem", detail: "no members" },
      expect: { status: "fail" },
    },
  ]);
});

Deno.test("bmc-power-on reports an error for a payload that is no ComputerSystem", () => {
  const error = {
    status: "error",
    detail: /^check error: could not evaluate the system_info payload/,
  } as const;
  checkCases(fx, [
    { name: "null", vendor: BMC, payload: null, expect: error },
    { name: "a string", vendor: BMC, payload: "On", expect: error },
    {
      name: "a Chassis",
      vendor: BMC,
      payload: { "@odata.type": "#Chassis.v1_28_0.Chassis", PowerState: "On" },
      expect: error,
    },
  ]);
});
