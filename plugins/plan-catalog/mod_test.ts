import assert from "node:assert/strict";
import { jcsSha256, PlanDependsOnSchema } from "@dutlab/core";
import plugin from "./mod.ts";

const catalog = plugin.planCatalog;

/**
 * The catalog content each catalogVersion stands for. Changing any plan changes the hash: bump
 * `catalogVersion` in mod.ts, add the new line here and a changelog entry in README.md. Never edit a line.
 */
const RELEASED: Record<number, string> = {
  4: "f914d7af0dbcba9aa1f214ab0ab7622d9913022e3238c8a5f0ec4946428e4caa",
  5: "884a54da325d7a21ed31d8eaa86447f90ec55327664f70163f33dae9e77190b8",
  6: "e43b4f8be08de529f85b5cd372c44f7c9c44762a81f9a3259d222d9a09f0d943",
  7: "11f133cbbcd96ffd719fd20f01e8572f9c99ce13721f93f7a784b9c13478f525",
  8: "020b8580dd7dcdb20685f31c8d3895703f114ea49bef3cf2e95f4e61861dd664",
};

Deno.test("a change to the plans comes with a new catalogVersion", async () => {
  assert.ok(Number.isInteger(catalog.catalogVersion) && catalog.catalogVersion > 0);
  assert.equal(
    await jcsSha256(catalog.plans),
    RELEASED[catalog.catalogVersion],
    `plans differ from catalogVersion ${catalog.catalogVersion}: bump it (README "catalogVersion policy")`,
  );
  assert.equal(Math.max(...Object.keys(RELEASED).map(Number)), catalog.catalogVersion);
});

Deno.test("the catalog ships the decrypt-on and decrypt-off throughput plans", () => {
  const on = catalog.plans.find((p) => p.identifier === "ngfw-throughput-decrypt-on");
  const off = catalog.plans.find((p) => p.identifier === "ngfw-throughput-decrypt-off");
  assert.equal(on?.tlsDecrypt, "on");
  assert.equal(off?.tlsDecrypt, "off");
  for (const p of [on!, off!]) {
    assert.equal(p.vendors, undefined, `${p.identifier} selects firewalls by role, whatever their vendor`);
    assert.ok(p.deviceRoles.includes("ngfw"), p.identifier);
    assert.equal(p.phases.reduce((s, ph) => s + ph.durationS, 0), 3000, "50 minutes in all");
  }
  // Decryption costs capacity: the decrypt-on plan offers less load and allows more latency.
  const peak = (id: string) =>
    Math.max(
      ...catalog.plans.find((p) => p.identifier === id)!.phases.map((ph) => Number(ph.load.throughputGbps)),
    );
  assert.ok(peak("ngfw-throughput-decrypt-on") < peak("ngfw-throughput-decrypt-off"));
  assert.ok(on!.sloTargetP99Ms > off!.sloTargetP99Ms);
});

Deno.test("every plan is well-formed data", () => {
  const ids = new Set<string>();
  for (const p of catalog.plans) {
    const at = p.identifier;
    assert.match(p.identifier, /^[a-z0-9]+(-[a-z0-9]+)*$/, "identifier is kebab-case");
    assert.ok(!ids.has(p.identifier), `${at} is unique`);
    ids.add(p.identifier);
    assert.ok(p.displayName.trim() && p.description.trim(), `${at} has a name and a description`);
    assert.ok(p.tlsDecrypt === "on" || p.tlsDecrypt === "off", `${at} tlsDecrypt`);
    assert.ok(Number.isInteger(p.sloTargetP99Ms) && p.sloTargetP99Ms > 0, `${at} sloTargetP99Ms`);
    assert.ok(p.deploymentMode.trim(), `${at} deploymentMode`);
    if (p.maxErrorRatePct !== undefined) {
      assert.ok(p.maxErrorRatePct >= 0 && p.maxErrorRatePct <= 100, `${at} maxErrorRatePct is a percentage`);
    }
    // A plan selects by role and capability; `vendors`, when a plan must narrow, lists each key once.
    if (p.vendors !== undefined) {
      assert.ok(p.vendors.length > 0 && new Set(p.vendors).size === p.vendors.length, `${at} vendors`);
    }
    assert.ok(p.deviceRoles.length > 0, `${at} deviceRoles`);
    assert.ok(p.phases.length > 0, `${at} phases`);
    assert.equal(new Set(p.phases.map((ph) => ph.name)).size, p.phases.length, `${at} phase names unique`);
    for (const ph of p.phases) {
      assert.ok(Number.isInteger(ph.durationS) && ph.durationS > 0, `${at} ${ph.name} durationS`);
      for (const [k, v] of Object.entries(ph.load)) {
        assert.ok(typeof v === "string" || (Number.isFinite(v) && v > 0), `${at} ${ph.name} load.${k}`);
        // Written out by hand: no 0.8000000000000002 in a frozen plan.
        if (typeof v === "number") assert.equal(v, Number(v.toPrecision(12)), `${at} ${ph.name} load.${k}`);
      }
    }
    // Every plan says what drift voids it; the labels' existence is checked against the lab's adapters in
    // tests/e2e/preflight_engine_test.ts.
    assert.ok(PlanDependsOnSchema.safeParse(p.dependsOn).success, `${at} dependsOn`);
    for (const d of p.dependsOn!) assert.ok(p.deviceRoles.includes(d.deviceRole), `${at} dependsOn role`);
    for (const [k, v] of Object.entries(p.parameters)) {
      assert.ok(typeof v !== "number" || Number.isFinite(v), `${at} parameters.${k}`);
    }
  }
});
