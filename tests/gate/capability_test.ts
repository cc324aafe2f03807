/**
 * Capabilities, not vendor keys: over whatever modules are enabled (modules.gen.ts), a check applies to a
 * device exactly when the plan selects it (role, and vendor only when the plan narrows) and its adapter
 * serves the check (label, facts, further labels), opt-in checks only under plans naming them. Spec 4.9's
 * "Applies to" column still holds for the vendors it names; a vendor it does not name is placed by
 * capability alone, and "all vendors" means every enabled adapter, whichever they are.
 */
import assert from "node:assert/strict";
import { modules } from "../../modules.gen.ts";
import { buildRegistry } from "../../core/harness/core.ts";
import { CONTROLLER, FIREWALL, serves } from "../../core/harness/core.ts";
import { checkApplies } from "../../core/harness/core.ts";
import { defineCheck } from "../../core/mod.ts";

const registry = buildRegistry(modules);
/** The enabled adapters' vendor keys, in manifest order. */
const ENABLED = [...registry.adapters.keys()];
const ALL = "all vendors";

/**
 * Spec 4.9, "Applies to" (and the server management controller checks this repository adds), for the
 * vendors the spec names. A vendor it does not name gets a check exactly when its adapter serves it.
 */
const NAMED = "the vendors it names";
const SPEC_4_9: Record<string, typeof NAMED | typeof ALL> = {
  "ngfw-deploy-clean": NAMED,
  "ngfw-decrypt-state-matches-plan": NAMED,
  "ntp-source-configured": ALL,
  "ngfw-ha-state-sane": NAMED,
  "snapshot-fresh": ALL,
  "bmc-health-ok": NAMED,
  "bmc-power-on": NAMED,
};
/**
 * The vendor column for the vendors the spec names, kept by each of their adapters as data beside its own
 * captures (`testdata/spec-4.9.json`: the named checks the spec gives it, and the role the run's capability
 * test picks it in); an adapter without that file is one the spec does not name.
 */
const SPEC_VENDORS: Record<string, { checks: string[]; pickedAs: "firewall" | "controller" | null }> = {};
for (const { name } of modules.adapters) {
  const file = new URL("./testdata/spec-4.9.json", import.meta.resolve(name));
  const vendor = ENABLED[modules.adapters.findIndex((m) => m.name === name)]!;
  try {
    SPEC_VENDORS[vendor] = JSON.parse(await Deno.readTextFile(file));
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}

Deno.test("every enabled adapter is in the registry under its package's vendor key", () => {
  assert.ok(ENABLED.length > 0);
  assert.deepEqual(
    ENABLED,
    modules.adapters.map((m) => m.name.replace(/^@dutlab\/adapter-/, "")),
    "@dutlab/adapter-<vendor-key>",
  );
});

Deno.test("every check applies to a device exactly where the plan selects it and its adapter serves it", () => {
  assert.ok(registry.planCatalog.plans.length > 0);
  assert.ok(registry.checks.length > 0);
  for (const { check } of registry.checks) {
    for (const plan of registry.planCatalog.plans) {
      for (const vendor of ENABLED) {
        const adapter = registry.adapters.get(vendor)!.adapter;
        for (const deviceRole of [null, ...adapter.deviceRoles]) {
          const device = { id: "d", hostname: "h", vendor, deviceRole };
          const role = deviceRole ?? adapter.deviceRoles[0]!;
          const want = serves(adapter, check) && (plan.vendors ?? [vendor]).includes(vendor) &&
            plan.deviceRoles.includes(role) && (!check.optIn || (plan.checks ?? []).includes(check.id));
          assert.equal(
            checkApplies(check, device, plan, adapter),
            want,
            `${check.id} ${plan.identifier} ${vendor}`,
          );
        }
      }
      // A vendor without an enabled adapter is served by nothing, even under a plan naming it.
      for (
        const vendor of [
          "vendor-without-adapter",
          ...registry.vendors.filter((v) => !v.available).map((v) => v.key),
        ]
      ) {
        const c = { id: "d", hostname: "h", vendor, deviceRole: "ngfw" };
        assert.equal(checkApplies(check, c, { ...plan, vendors: [vendor] }, undefined), false, vendor);
        assert.equal(checkApplies(check, c, { ...plan, vendors: undefined }, undefined), false, vendor);
      }
    }
  }
});

Deno.test("spec 4.9's vendor column holds for the vendors it names; all vendors means every enabled adapter", () => {
  for (const { check } of registry.checks) {
    const spec = SPEC_4_9[check.id];
    assert.ok(spec, `${check.id} is in the table`);
    for (const vendor of ENABLED) {
      const adapter = registry.adapters.get(vendor)!.adapter;
      const served = serves(adapter, check);
      if (spec === ALL) assert.ok(served, `${check.id} applies to all vendors: ${vendor} must serve it`);
      else if (SPEC_VENDORS[vendor]) {
        assert.equal(served, SPEC_VENDORS[vendor].checks.includes(check.id), `${check.id} ${vendor}`);
      }
    }
    // Under a plan that runs it and takes every role, it reaches the devices the capability test picks.
    for (
      const plan of registry.planCatalog.plans.filter((p) => !check.optIn || p.checks?.includes(check.id))
    ) {
      const reached = ENABLED.filter((v) => {
        const a = registry.adapters.get(v)!.adapter;
        return checkApplies(check, { id: "d", hostname: "h", vendor: v, deviceRole: null }, plan, a);
      });
      const want = ENABLED.filter((v) => {
        const a = registry.adapters.get(v)!.adapter;
        return serves(a, check) && plan.deviceRoles.includes(a.deviceRoles[0]!);
      });
      assert.deepEqual(reached, want, `${check.id} under ${plan.identifier}`);
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

Deno.test("the catalog's plans name no vendor; a plan may still narrow by role and by vendor", () => {
  for (const p of registry.planCatalog.plans) assert.equal(p.vendors, undefined, p.identifier);
  const plan = registry.planCatalog.plans[0]!;
  const ntp = registry.checks.find((c) => c.check.id === "ntp-source-configured")!.check;
  for (const vendor of ENABLED) {
    const adapter = registry.adapters.get(vendor)!.adapter;
    const role = adapter.deviceRoles[0]!;
    const device = { id: "d", hostname: "h", vendor, deviceRole: role };
    const other = ENABLED.find((v) => v !== vendor) ?? "vendor-x";
    assert.equal(checkApplies(ntp, device, plan, adapter), plan.deviceRoles.includes(role), vendor);
    assert.equal(
      checkApplies(ntp, device, { ...plan, deviceRoles: ["another-role"] }, adapter),
      false,
      vendor,
    );
    assert.equal(checkApplies(ntp, device, { ...plan, vendors: [other] }, adapter), false, vendor);
    assert.equal(
      checkApplies(ntp, device, { ...plan, vendors: [other, vendor] }, adapter),
      plan.deviceRoles.includes(role),
      vendor,
    );
  }
});

Deno.test("roles come from the enabled adapters; every enabled check is served", () => {
  const roles = [...new Set(ENABLED.flatMap((v) => registry.adapters.get(v)!.adapter.deviceRoles))];
  assert.deepEqual(registry.deviceRoles, roles);
  // The catalog's plans take roles the enabled adapters bring.
  for (const p of registry.planCatalog.plans) {
    for (const r of p.deviceRoles) assert.ok(roles.includes(r), `${p.identifier}: ${r}`);
  }
  assert.deepEqual(registry.unservedChecks, []);
  for (const { check } of registry.checks) {
    assert.ok(ENABLED.some((v) => serves(registry.adapters.get(v)!.adapter, check)), check.id);
  }
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
  const pick = (cap: typeof FIREWALL) =>
    ENABLED.filter((v) => serves(registry.adapters.get(v)!.adapter, cap));
  // Before: adapters collecting `decrypt_policy` (FIREWALL_LABEL) and devices of role `bmc` (BMC_ROLE).
  assert.deepEqual(
    pick(FIREWALL),
    ENABLED.filter((v) => registry.adapters.get(v)!.adapter.labels.includes("decrypt_policy")),
  );
  assert.deepEqual(
    pick(CONTROLLER),
    ENABLED.filter((v) => registry.adapters.get(v)!.adapter.deviceRoles[0] === "bmc"),
  );
  // The lab has firewalls to measure and the spec's named ones are among them when enabled.
  assert.ok(pick(FIREWALL).length > 0);
  for (const v of ENABLED.filter((v) => SPEC_VENDORS[v]?.pickedAs === "firewall")) {
    assert.ok(pick(FIREWALL).includes(v), v);
  }
  for (const v of ENABLED.filter((v) => SPEC_VENDORS[v]?.pickedAs === "controller")) {
    assert.ok(pick(CONTROLLER).includes(v), v);
  }
});
