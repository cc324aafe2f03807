import assert from "node:assert/strict";
import { stripVolatile } from "./volatile.ts";
import { volatilePatternError } from "../registry.ts";
import { buildRegistry } from "../registry.ts";
import { StartupError } from "../errors.ts";
import { fixtureAdapter, fixtureModules } from "../../testing/fixture_modules.ts";

Deno.test("stripVolatile leaves out what the patterns name, with * for any key or index, and copies", () => {
  const payload = {
    uptime: 12,
    "a/b": { "~x": 1, keep: 2 },
    ifs: [{ name: "e1", rx: 10, tx: 11 }, { name: "e2", rx: 20, tx: 21 }],
    results: { cpu: [{ current: 5, historical: [1, 2] }], mem: [{ current: 7 }] },
  };
  const before = structuredClone(payload);
  const out = stripVolatile(payload, [
    "/uptime",
    "/a~1b/~0x",
    "/ifs/*/rx",
    "/ifs/1/tx",
    "/results/*/*/current",
    "/nowhere/at/all",
  ]);
  assert.deepEqual(out, {
    "a/b": { keep: 2 },
    ifs: [{ name: "e1", tx: 11 }, { name: "e2" }],
    results: { cpu: [{ historical: [1, 2] }], mem: [{}] },
  });
  assert.deepEqual(payload, before);
  assert.deepEqual(stripVolatile([1, 2, 3], ["/1"]), [1, 3]);
  assert.equal(stripVolatile("text", ["/x"]), "text");
});

Deno.test("volatile patterns must be non-empty JSON Pointers", () => {
  assert.equal(volatilePatternError("/a/*/b"), null);
  assert.equal(volatilePatternError("/a~1b~0"), null);
  for (const bad of ["", "a/b", "/a~2", "/a~", 3]) assert.ok(volatilePatternError(bad), String(bad));
});

Deno.test("registry refuses volatilePaths for a label the adapter does not collect, or a bad pattern", () => {
  const withPaths = (volatilePaths: unknown) => {
    const mods = fixtureModules();
    mods.adapters[0] = { ...mods.adapters[0]!, module: { ...fixtureAdapter, volatilePaths } };
    return mods;
  };
  const label = fixtureAdapter.labels[0];
  assert.deepEqual(
    buildRegistry(withPaths({ [label]: ["/uptime"] })).adapters.get("fixture-fw")?.adapter.volatilePaths,
    { [label]: ["/uptime"] },
  );
  const cases: Array<[unknown, RegExp]> = [
    [{ no_such_label: ["/x"] }, /"no_such_label", which is not one of its labels/],
    [{ [label]: "/x" }, /volatilePaths\./],
    [{ [label]: [""] }, /pattern "" is empty/],
    [{ [label]: ["uptime"] }, /must start with \//],
    [["/x"], /"volatilePaths"/],
  ];
  for (const [paths, message] of cases) {
    assert.throws(() => buildRegistry(withPaths(paths)), (e: unknown) => {
      assert.ok(e instanceof StartupError && e.code === "MODULE_SHAPE", JSON.stringify(paths));
      assert.match(e.message, /@dutlab\/adapter-fixture-fw@0.0.1/);
      assert.match(e.message, message);
      return true;
    });
  }
});
