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
  checks: ["bmc-health-ok"],
  parameters: {},
};
const device = (vendor: string) => ({ id: "d-1", hostname: "bmc-1", vendor, deviceRole: null });
/** Redfish resources as the adapter stores them (ids of the DMTF public rackmount mockup). */
const resource = (type: string, id: string, health: unknown) => ({
  "@odata.id": `/redfish/v1/${type === "ComputerSystem" ? "Systems" : `${type}s`}/${id}`,
  "@odata.type": `#${type}.v1_0_0.${type}`,
  Id: id,
  Status: health === undefined ? { State: "Enabled" } : { State: "Enabled", Health: health },
});
const snap = (label: string, payload: unknown): CheckSnapshot => ({
  id: label,
  deviceId: "d-1",
  endpointLabel: label,
  vendor: "vendor-a-bmc",
  payload,
  payloadSha256: "c".repeat(64),
  collectedAt: NOW,
});
const run = (system: unknown, chassis: unknown, manager: unknown) =>
  evaluateCheck(check, device("vendor-a-bmc"), plan, snap("system_info", system), {
    now: NOW,
    facts: bmc.facts ?? {},
    related: {
      chassis_info: chassis === null ? null : snap("chassis_info", chassis),
      manager_info: manager === null ? null : snap("manager_info", manager),
    },
  });
const sys = (h: unknown) => resource("ComputerSystem", "437XR1138R2", h);
const ch = (h: unknown) => resource("Chassis", "1U", h);
const mgr = (h: unknown) => resource("Manager", "BMC", h);

Deno.test("bmc-health-ok applies where the adapter reads resource health: vendor-a-bmc of today's adapters", () => {
  assert.equal(check.label, "system_info");
  assert.deepEqual(check.alsoReads, ["chassis_info", "manager_info"]);
  assert.deepEqual(check.needs, ["resourceHealth"]);
  assert.equal(checkApplies(check, device("vendor-a-bmc"), plan, bmc), true);
  // Opt-in: a plan that does not name the check does not run it.
  assert.equal(check.optIn, true);
  assert.equal(checkApplies(check, device("vendor-a-bmc"), { ...plan, checks: undefined }, bmc), false);
  for (
    const [v, a] of [["vendor-a-ngfw", ngfwA], ["vendor-b-ngfw", ngfwB], ["vendor-a-switch", sw]] as const
  ) {
    assert.equal(checkApplies(check, device(v), plan, a), false, v);
  }
});

Deno.test("bmc-health-ok passes when all three are OK and names the first one that is not", () => {
  const ok = run(sys("OK"), ch("OK"), mgr("OK"));
  assert.deepEqual([ok?.status, ok?.detail], [
    "pass",
    "health OK: ComputerSystem 437XR1138R2, Chassis 1U, Manager BMC",
  ]);
  const chassis = run(sys("OK"), ch("Warning"), mgr("Critical"));
  assert.deepEqual([chassis?.status, chassis?.detail], [
    "fail",
    "Chassis 1U health is Warning (expected OK); ComputerSystem 437XR1138R2 OK",
  ]);
  const system = run(sys("Critical"), ch("Warning"), mgr("OK"));
  assert.equal(system?.detail, "ComputerSystem 437XR1138R2 health is Critical (expected OK)");
  const manager = run(sys("OK"), ch("OK"), mgr(undefined));
  assert.equal(
    manager?.detail,
    "Manager BMC health is not reported (expected OK); ComputerSystem 437XR1138R2, Chassis 1U OK",
  );
  const absent = run(sys("OK"), { present: false, resource: "Chassis", detail: "no chassis" }, mgr("OK"));
  assert.equal(
    absent?.detail,
    "Chassis (not offered) health is not reported (expected OK); ComputerSystem 437XR1138R2 OK",
  );
  const missing = run(sys("OK"), ch("OK"), null);
  assert.equal(missing?.status, "fail");
  assert.match(missing!.detail, /^no manager_info snapshot of this device yet/);
});

Deno.test("bmc-health-ok reports an error for a payload that is no system, chassis or manager", () => {
  const r = run(sys("OK"), { "@odata.type": "#Thermal.v1_0_0.Thermal" }, mgr("OK"));
  assert.equal(r?.status, "error");
  assert.match(r!.detail, /^check error: could not evaluate the system_info payload \(payload is not a/);
});
