import assert from "node:assert/strict";
import type { CheckSnapshot, Plan } from "@dutlab/core";
import { checkApplies, evaluateCheck } from "@dutlab/core/testing";
import bmc from "@dutlab/adapter-vendor-a-bmc";
import ngfwA from "@dutlab/adapter-vendor-a-ngfw";
import ngfwB from "@dutlab/adapter-vendor-b-ngfw";
import sw from "@dutlab/adapter-vendor-a-switch";
import check from "./mod.ts";

const NOW = new Date("2026-11-23T10:00:00Z");
const plan: Plan = {
  identifier: "unit-plan",
  displayName: "Unit plan",
  description: "",
  tlsDecrypt: "off",
  sloTargetP99Ms: 100,
  deploymentMode: "inline-routed",
  phases: [],
  vendors: ["vendor-a-ngfw", "vendor-b-ngfw", "vendor-a-switch", "vendor-a-bmc"],
  deviceRoles: ["ngfw", "switch", "bmc"],
  checks: ["bmc-power-on"],
  parameters: {},
};
const device = (vendor: string) => ({ id: "d-1", hostname: "bmc-1", vendor, deviceRole: null });
/** A Redfish ComputerSystem as `system_info` stores it (DMTF public rackmount mockup, trimmed). */
const system = (extra: Record<string, unknown>) => ({
  "@odata.id": "/redfish/v1/Systems/437XR1138R2",
  "@odata.type": "#ComputerSystem.v1_27_0.ComputerSystem",
  Id: "437XR1138R2",
  Status: { State: "Enabled", Health: "OK" },
  ...extra,
});
const snapshot = (payload: unknown): CheckSnapshot => ({
  id: "7",
  deviceId: "d-1",
  endpointLabel: "system_info",
  vendor: "vendor-a-bmc",
  payload,
  payloadSha256: "b".repeat(64),
  collectedAt: NOW,
});
const run = (payload: unknown) =>
  evaluateCheck(check, device("vendor-a-bmc"), plan, snapshot(payload), { now: NOW, facts: bmc.facts ?? {} });

Deno.test("bmc-power-on applies where the adapter reads a power state: vendor-a-bmc of today's adapters", () => {
  assert.equal(check.label, "system_info");
  assert.deepEqual(check.needs, ["powerState"]);
  assert.equal(checkApplies(check, device("vendor-a-bmc"), plan, bmc), true);
  // Opt-in: a plan that does not name the check does not run it.
  assert.equal(check.optIn, true);
  assert.equal(checkApplies(check, device("vendor-a-bmc"), { ...plan, checks: undefined }, bmc), false);
  for (
    const [v, a] of [["vendor-a-ngfw", ngfwA], ["vendor-b-ngfw", ngfwB], ["vendor-a-switch", sw]] as const
  ) {
    assert.equal(checkApplies(check, device(v), plan, a), false, v);
  }
  assert.equal(checkApplies(check, device("vendor-a-bmc"), { ...plan, deviceRoles: ["ngfw"] }, bmc), false);
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
