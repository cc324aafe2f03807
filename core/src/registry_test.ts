import assert from "node:assert/strict";
import { buildRegistry, type LoadedModules } from "./registry.ts";
import { StartupError } from "./errors.ts";
import { fixtureAdapter, fixtureCheck, fixtureModules, fixturePlugin } from "../testing/fixture_modules.ts";
import { coreSatisfies } from "./version.ts";

const code = (c: string) => (e: unknown) => e instanceof StartupError && e.code === c;

Deno.test("registry lists vendors with versions, including a vendor without adapter", () => {
  const r = buildRegistry(fixtureModules());
  assert.deepEqual(r.vendors, [
    { key: "fixture-fw", displayName: "Fixture firewall", available: true, version: "0.0.1" },
    { key: "vendor-c-ngfw", displayName: "Vendor C", available: false, version: null },
  ]);
  assert.deepEqual(r.checks.map((c) => [c.check.id, c.version]), [["fixture-ntp", "0.0.1"]]);
  assert.equal(r.plan("fixture-plan")?.displayName, "Fixture plan");
});

Deno.test("registry refuses a duplicate vendor key or check id with a coded error", () => {
  const dupAdapter: LoadedModules = fixtureModules({
    adapters: [{ name: "@dutlab/adapter-other", version: "1.0.0", module: fixtureAdapter }],
  });
  assert.throws(() => buildRegistry(dupAdapter), code("DUPLICATE_VENDOR"));
  const dupWithout = fixtureModules({ vendorsWithoutAdapter: [{ key: "fixture-fw", displayName: "x" }] });
  assert.throws(() => buildRegistry(dupWithout), code("DUPLICATE_VENDOR"));
  const dupCheck = fixtureModules({
    checks: [{ name: "@dutlab/check-copy", version: "1.0.0", module: fixtureCheck }],
  });
  assert.throws(() => buildRegistry(dupCheck), (e: unknown) => {
    assert.ok(e instanceof StartupError && e.code === "DUPLICATE_CHECK");
    assert.match(e.message, /@dutlab\/check-fixture-ntp and @dutlab\/check-copy/);
    return true;
  });
});

Deno.test("registry refuses a module written for another core version", () => {
  const old = fixtureModules();
  old.adapters[0] = { ...old.adapters[0]!, module: { ...fixtureAdapter, coreVersion: "^2.0.0" } };
  assert.throws(() => buildRegistry(old), (e: unknown) => {
    assert.ok(e instanceof StartupError && e.code === "MODULE_CORE_VERSION");
    assert.match(e.message, /@dutlab\/adapter-fixture-fw@0.0.1 is written for @dutlab\/core "\^2.0.0"/);
    return true;
  });
  assert.equal(coreSatisfies("^1.0.0", "1.4.2"), true);
  assert.equal(coreSatisfies("^1.5.0", "1.4.2"), false);
  assert.equal(coreSatisfies("^0.9.0", "1.0.0"), false);
  assert.equal(coreSatisfies("1.x", "1.0.0"), false);
});

Deno.test("registry refuses modules of the wrong shape, naming the module", () => {
  const cases: Array<[string, LoadedModules]> = [];
  const a = fixtureModules();
  a.adapters[0] = { ...a.adapters[0]!, module: { ...fixtureAdapter, labels: [] } };
  cases.push(["labels", a]);
  const b = fixtureModules();
  b.checks[0] = { ...b.checks[0]!, module: { ...fixtureCheck, evaluate: undefined } };
  cases.push(["evaluate", b]);
  const c = fixtureModules();
  c.adapters[0] = { ...c.adapters[0]!, module: { ...fixtureAdapter, kind: undefined } };
  cases.push(["adapter \\(default export of defineAdapter", c]);
  const d = fixtureModules();
  d.plugins[0] = {
    ...d.plugins[0]!,
    module: { kind: "plugin", name: "p", coreVersion: "^1.0.0", planCatalog: { plans: [] } },
  };
  cases.push(["catalogVersion", d]);
  for (const [what, mods] of cases) {
    assert.throws(() => buildRegistry(mods), (e: unknown) => {
      assert.ok(e instanceof StartupError && e.code === "MODULE_SHAPE", what);
      assert.match(e.message, new RegExp(what));
      return true;
    });
  }
});

Deno.test("define* helpers set kind, and the registry refuses a module listed under the wrong kind", () => {
  assert.equal(fixtureAdapter.kind, "adapter");
  assert.equal(fixtureCheck.kind, "check");
  assert.equal(fixturePlugin.kind, "plugin");
  const cases: Array<[LoadedModules, RegExp]> = [];
  const a = fixtureModules();
  a.adapters[0] = { ...a.adapters[0]!, module: fixtureCheck };
  cases.push([
    a,
    /adapter-fixture-fw@0.0.1 is listed under "adapters".* is a check \(made with defineCheck\)/,
  ]);
  const c = fixtureModules();
  c.checks[0] = { ...c.checks[0]!, module: fixtureAdapter };
  cases.push([
    c,
    /check-fixture-ntp@0.0.1 is listed under "checks".* is an adapter \(made with defineAdapter\)/,
  ]);
  const p = fixtureModules();
  p.plugins[0] = { ...p.plugins[0]!, module: fixtureCheck };
  cases.push([p, /is listed under "plugins".* is a check .*; list it under "checks"/]);
  for (const [mods, message] of cases) {
    assert.throws(() => buildRegistry(mods), (e: unknown) => {
      assert.ok(e instanceof StartupError && e.code === "MODULE_KIND", String(e));
      assert.match(e.message, message);
      return true;
    });
  }
});

Deno.test("registry checks the core range the generator recorded, and refuses a record the module contradicts", () => {
  const recorded = fixtureModules();
  recorded.checks[0] = { ...recorded.checks[0]!, coreVersion: "^1.0.0" };
  assert.equal(buildRegistry(recorded).checks.length, 1);
  const stale = fixtureModules();
  stale.checks[0] = { ...stale.checks[0]!, coreVersion: "^2.0.0" };
  assert.throws(() => buildRegistry(stale), (e: unknown) => {
    assert.ok(e instanceof StartupError && e.code === "MODULE_CORE_VERSION");
    assert.match(
      e.message,
      /declares @dutlab\/core "\^1.0.0", but modules.gen.ts records "\^2.0.0": run `deno task gen`/,
    );
    return true;
  });
  const old = fixtureModules();
  old.checks[0] = {
    ...old.checks[0]!,
    coreVersion: "^2.0.0",
    module: { ...fixtureCheck, coreVersion: "^2.0.0" },
  };
  assert.throws(() => buildRegistry(old), (e: unknown) => {
    assert.ok(e instanceof StartupError && e.code === "MODULE_CORE_VERSION");
    assert.match(e.message, /is written for @dutlab\/core "\^2.0.0", but this is @dutlab\/core 1\./);
    return true;
  });
});

Deno.test("registry refuses facts.inventory whose inventoryLabel is not one of the adapter's labels", () => {
  const inventory = () => ({ model: null, softwareVersion: null, serialNumber: null });
  const withInventory = (extra: Record<string, unknown>) => {
    const mods = fixtureModules();
    mods.adapters[0] = {
      ...mods.adapters[0]!,
      module: { ...fixtureAdapter, facts: { ...fixtureAdapter.facts, inventory }, ...extra },
    };
    return mods;
  };
  assert.equal(
    buildRegistry(withInventory({ inventoryLabel: "system_info" })).adapters.get("fixture-fw")?.adapter
      .inventoryLabel,
    "system_info",
  );
  for (
    const extra of [{ inventoryLabel: undefined }, { inventoryLabel: "inventory" }, { inventoryLabel: 3 }]
  ) {
    assert.throws(() => buildRegistry(withInventory(extra)), (e: unknown) => {
      assert.ok(e instanceof StartupError && e.code === "MODULE_SHAPE", JSON.stringify(extra));
      assert.match(e.message, /@dutlab\/adapter-fixture-fw@0.0.1 .*inventoryLabel/);
      return true;
    });
  }
  const notFn = fixtureModules();
  notFn.adapters[0] = {
    ...notFn.adapters[0]!,
    module: { ...fixtureAdapter, facts: { inventory: "system_info" }, inventoryLabel: "system_info" },
  };
  assert.throws(() => buildRegistry(notFn), code("MODULE_SHAPE"));
  // An inventoryLabel without facts.inventory is harmless (nothing reads it) but must still be a string.
  assert.doesNotThrow(() =>
    buildRegistry(
      withInventory({ facts: { ...fixtureAdapter.facts, inventory: undefined }, inventoryLabel: "x" }),
    )
  );
});

Deno.test("registry refuses a plan whose dependsOn is not a list of {deviceRole, labels}, naming the entry", () => {
  const withDeps = (dependsOn: unknown): LoadedModules => {
    const m = fixtureModules();
    const plugin = m.plugins[0]!.module as { planCatalog: { plans: object[] } };
    m.plugins[0] = {
      ...m.plugins[0]!,
      module: {
        ...plugin,
        planCatalog: { ...plugin.planCatalog, plans: [{ ...plugin.planCatalog.plans[0], dependsOn }] },
      },
    };
    return m;
  };
  const ok = buildRegistry(withDeps([{ deviceRole: "ngfw", labels: ["ntp_config"] }]));
  assert.deepEqual(ok.plan("fixture-plan")?.dependsOn, [{ deviceRole: "ngfw", labels: ["ntp_config"] }]);
  for (
    const [bad, where] of [
      [[{ deviceRole: "ngfw", labels: [] }], /dependsOn\[0\]\.labels/],
      [[{ deviceRole: "", labels: ["ntp_config"] }], /dependsOn\[0\]\.deviceRole/],
      [[{ deviceRole: "ngfw", label: "ntp_config" }], /dependsOn\[0\]/],
      ["ntp_config", /dependsOn/],
      [[{ deviceRole: "ngfw", labels: ["a"] }, { deviceRole: "ngfw", labels: ["b"] }], /one entry per/],
    ] as const
  ) {
    assert.throws(() => buildRegistry(withDeps(bad)), (e: unknown) => {
      assert.ok(e instanceof StartupError && e.code === "PLAN_CATALOG", String(e));
      assert.match(e.message, /Plan "fixture-plan": /);
      assert.match(e.message, where);
      return true;
    });
  }
});
