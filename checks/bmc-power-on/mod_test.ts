import assert from "node:assert/strict";
import { checkFixture } from "@dutlab/core/testing";
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
const run = (payload: unknown) => fx.run("vendor-a-bmc", payload);

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

Deno.test("bmc-power-on passes for On and fails for any other or a missing PowerState", () => {
  assert.deepEqual([run(system({ PowerState: "On" }))?.status, run(system({ PowerState: "On" }))?.detail], [
    "pass",
    "system power state On",
  ]);
  const off = run(system({ PowerState: "Off" }));
  assert.deepEqual([off?.status, off?.detail], ["fail", "system power state Off (expected On)"]);
  assert.equal(run(system({ PowerState: "PoweringOn" }))?.status, "fail");
  const none = run(system({}));
  assert.deepEqual([none?.status, none?.detail], ["fail", "system power state not reported (expected On)"]);
  const absent = run({ present: false, resource: "ComputerSystem", detail: "no members" });
  assert.equal(absent?.status, "fail");
});

Deno.test("bmc-power-on reports an error for a payload that is no ComputerSystem", () => {
  for (const payload of [null, "On", { "@odata.type": "#Chassis.v1_28_0.Chassis", PowerState: "On" }]) {
    const r = run(payload);
    assert.equal(r?.status, "error", JSON.stringify(payload));
    assert.match(r!.detail, /^check error: could not evaluate the system_info payload/);
  }
});
