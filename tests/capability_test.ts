/**
 * Capabilities, not vendor keys: over today's modules (modules.gen.ts), the capability test (the plan
 * selects the device by role and vendor; the device's adapter collects the check's label and offers the
 * facts it needs) selects exactly the devices of spec 4.9's "Applies to" column, and the run's firewalls
 * and controllers are the devices the vendor and role tests named before.
 */
import assert from "node:assert/strict";
import { modules } from "../modules.gen.ts";
import { buildRegistry } from "../core/src/registry.ts";
import { CONTROLLER, FIREWALL, serves } from "../core/src/capability.ts";
import { checkApplies } from "../core/testing/mod.ts";
import { defineCheck } from "../core/mod.ts";

const registry = buildRegistry(modules);
const TODAY = ["vendor-a-ngfw", "vendor-b-ngfw", "vendor-a-switch", "vendor-a-bmc"];

/** Spec 4.9, "Applies to" (and the server management controller checks this repository adds). */
const SPEC_4_9: Record<string, string[]> = {
  "ngfw-deploy-clean": ["vendor-a-ngfw"],
  "ngfw-decrypt-state-matches-plan": ["vendor-a-ngfw", "vendor-b-ngfw"],
  "ntp-source-configured": TODAY,
  "ngfw-ha-state-sane": ["vendor-a-ngfw"],
  "snapshot-fresh": TODAY,
  "bmc-health-ok": ["vendor-a-bmc"],
  "bmc-power-on": ["vendor-a-bmc"],
};

Deno.test("today's modules: every check selects the devices of spec 4.9's vendor column, per plan", () => {
  assert.deepEqual(registry.adapters.size, TODAY.length);
  assert.ok(registry.planCatalog.plans.length > 0);
  for (const { check } of registry.checks) {
    const spec = SPEC_4_9[check.id];
    assert.ok(spec, `${check.id} is in the table`);
    for (const plan of registry.planCatalog.plans) {
      for (const vendor of TODAY) {
        const adapter = registry.adapters.get(vendor)!.adapter;
        for (const deviceRole of [null, ...adapter.deviceRoles]) {
          const device = { id: "d", hostname: "h", vendor, deviceRole };
          const role = deviceRole ?? adapter.deviceRoles[0]!;
          const want: boolean = spec.includes(vendor) && plan.vendors.includes(vendor) &&
            plan.deviceRoles.includes(role) && (!check.optIn || (plan.checks ?? []).includes(check.id));
          assert.equal(
            checkApplies(check, device, plan, adapter),
            want,
            `${check.id} ${plan.identifier} ${vendor}`,
          );
        }
      }
      // A vendor without an enabled adapter (vendor-c-ngfw) is served by nothing.
      const c = { id: "d", hostname: "h", vendor: "vendor-c-ngfw", deviceRole: "ngfw" };
      assert.equal(
        checkApplies(check, c, { ...plan, vendors: [...plan.vendors, c.vendor] }, undefined),
        false,
      );
    }
  }
});

Deno.test("the BMC checks are opt-in: only the plan naming them runs them", () => {
  const runs = (id: string) =>
    registry.planCatalog.plans.filter((p) => (p.checks ?? []).includes(id)).map((p) => p.identifier);
  assert.deepEqual(runs("bmc-health-ok"), ["ngfw-throughput-decrypt-on-server-health"]);
  assert.deepEqual(runs("bmc-power-on"), ["ngfw-throughput-decrypt-on-server-health"]);
  for (const { check } of registry.checks) assert.equal(!!check.optIn, check.id.startsWith("bmc-"), check.id);
});

Deno.test("a plan narrows by role and by vendor", () => {
  const plan = registry.planCatalog.plans[0]!;
  const ntp = registry.checks.find((c) => c.check.id === "ntp-source-configured")!.check;
  const sw = registry.adapters.get("vendor-a-switch")!.adapter;
  const device = { id: "d", hostname: "h", vendor: "vendor-a-switch", deviceRole: "switch" };
  assert.equal(checkApplies(ntp, device, plan, sw), true);
  assert.equal(checkApplies(ntp, device, { ...plan, deviceRoles: ["ngfw", "bmc"] }, sw), false);
  assert.equal(checkApplies(ntp, device, { ...plan, vendors: ["vendor-a-ngfw"] }, sw), false);
});

Deno.test("roles come from the enabled adapters; every enabled check is served", () => {
  assert.deepEqual(registry.deviceRoles, ["ngfw", "switch", "bmc"]);
  assert.deepEqual(registry.unservedChecks, []);
});

Deno.test("the registry names enabled checks that no enabled adapter serves", () => {
  const orphan = defineCheck({
    id: "orphan-power",
    coreVersion: "^1.0.0",
    description: "needs a reading only controllers give, on a label they do not collect",
    label: "power_budget",
    needs: ["powerState"],
    evaluate: () => ({ pass: true, detail: "" }),
  });
  const r = buildRegistry({
    ...modules,
    checks: [...modules.checks, { name: "@x/check-orphan-power", version: "1.0.0", module: orphan }],
  });
  assert.deepEqual(r.unservedChecks, ["orphan-power"]);
});

Deno.test("the run's firewalls and controllers: the capability test picks the vendors and role named before", () => {
  const pick = (cap: typeof FIREWALL) => TODAY.filter((v) => serves(registry.adapters.get(v)!.adapter, cap));
  // Before: adapters collecting `decrypt_policy` (FIREWALL_LABEL) and devices of role `bmc` (BMC_ROLE).
  assert.deepEqual(
    pick(FIREWALL),
    TODAY.filter((v) => registry.adapters.get(v)!.adapter.labels.includes("decrypt_policy")),
  );
  assert.deepEqual(
    pick(CONTROLLER),
    TODAY.filter((v) => registry.adapters.get(v)!.adapter.deviceRoles[0] === "bmc"),
  );
  assert.deepEqual(pick(CONTROLLER), ["vendor-a-bmc"]);
});
