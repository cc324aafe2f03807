import assert from "node:assert/strict";
import { type CheckCase, checkCases, checkFixture } from "@dutlab/core/testing";
import bmc from "@dutlab/adapter-vendor-a-bmc";
import ngfwA from "@dutlab/adapter-vendor-a-ngfw";
import ngfwB from "@dutlab/adapter-vendor-b-ngfw";
import sw from "@dutlab/adapter-vendor-a-switch";
import check from "./mod.ts";

const fx = checkFixture(check, { adapters: [ngfwA, ngfwB, sw, bmc], now: new Date("2026-11-23T10:00:00Z") });
/** Redfish resources as the adapter stores them (ids of the DMTF public rackmount mockup). */
const resource = (type: string, id: string, health: unknown) => ({
  "@odata.id": `/redfish/v1/${type === "ComputerSystem" ? "Systems" : `${type}s`}/${id}`,
  "@odata.type": `#${type}.v1_0_0.${type}`,
  Id: id,
  Status: health === undefined ? { State: "Enabled" } : { State: "Enabled", Health: health },
});
const sys = (h: unknown) => resource("ComputerSystem", "437XR1138R2", h);
const ch = (h: unknown) => resource("Chassis", "1U", h);
const mgr = (h: unknown) => resource("Manager", "BMC", h);

Deno.test("bmc-health-ok applies where the adapter reads resource health: vendor-a-bmc of today's adapters", () => {
  assert.equal(check.label, "system_info");
  assert.deepEqual(check.alsoReads, ["chassis_info", "manager_info"]);
  assert.deepEqual(check.needs, ["resourceHealth"]);
  assert.equal(fx.applies("vendor-a-bmc"), true);
  // Opt-in: a plan that does not name the check does not run it.
  assert.equal(check.optIn, true);
  assert.equal(fx.applies("vendor-a-bmc", { plan: { ...fx.plan, checks: undefined } }), false);
  for (const v of ["vendor-a-ngfw", "vendor-b-ngfw", "vendor-a-switch"]) {
    assert.equal(fx.applies(v), false, v);
  }
});

const BMC = "vendor-a-bmc";
/** A case: the system payload, with the chassis and manager ones as related labels. */
const row = (
  name: string,
  system: unknown,
  chassis: unknown,
  manager: unknown,
  expect: CheckCase["expect"],
) => ({
  name,
  vendor: BMC,
  payload: system,
  options: { related: { chassis_info: chassis, manager_info: manager } },
  expect,
});

Deno.test("bmc-health-ok passes when all three are OK and names the first one that is not", () => {
  checkCases(fx, [
    row("all OK", sys("OK"), ch("OK"), mgr("OK"), {
      status: "pass",
      detail: "health OK: ComputerSystem 437XR1138R2, Chassis 1U, Manager BMC",
    }),
    row("chassis Warning, manager Critical", sys("OK"), ch("Warning"), mgr("Critical"), {
      status: "fail",
      detail: "Chassis 1U health is Warning (expected OK); ComputerSystem 437XR1138R2 OK",
    }),
    row("system Critical", sys("Critical"), ch("Warning"), mgr("OK"), {
      status: "fail",
      detail: "ComputerSystem 437XR1138R2 health is Critical (expected OK)",
    }),
    row("manager health missing", sys("OK"), ch("OK"), mgr(undefined), {
      status: "fail",
      detail: "Manager BMC health is not reported (expected OK); ComputerSystem 437XR1138R2, Chassis 1U OK",
    }),
    row(
      "chassis not offered",
      sys("OK"),
      { present: false, resource: "Chassis", detail: "no chassis" },
      mgr("OK"),
      {
        status: "fail",
        detail: "Chassis (not offered) health is not reported (expected OK); ComputerSystem 437XR1138R2 OK",
      },
    ),
    row("no manager snapshot yet", sys("OK"), ch("OK"), null, {
      status: "fail",
      detail: /^no manager_info snapshot of this device yet/,
    }),
  ]);
});

Deno.test("bmc-health-ok reports an error for a payload that is no system, chassis or manager", () => {
  checkCases(fx, [
    row("a Thermal as chassis", sys("OK"), { "@odata.type": "#Thermal.v1_0_0.Thermal" }, mgr("OK"), {
      status: "error",
      detail: /^check error: could not evaluate the system_info payload \(payload is not a/,
    }),
  ]);
});
