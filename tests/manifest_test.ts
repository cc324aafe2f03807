import assert from "node:assert/strict";
import { declaredCore, generate } from "../tools/gen_modules.ts";
import { modules } from "../modules.gen.ts";
import { buildRegistry } from "@dutlab/core/server";

const manifest = JSON.parse(await Deno.readTextFile(new URL("../modules.json", import.meta.url)));

Deno.test("the committed modules.gen.ts matches modules.json", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "gen:check"],
    cwd: new URL("..", import.meta.url),
  })
    .output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
});

Deno.test("the real modules build a registry with the five vendors and the catalog checks (spec 4.9 plus the BMC checks)", () => {
  const r = buildRegistry(modules);
  assert.deepEqual(r.vendors.map((v) => [v.key, v.available]), [
    ["vendor-a-ngfw", true],
    ["vendor-a-switch", true],
    ["vendor-a-bmc", true],
    ["vendor-b-ngfw", true],
    ["vendor-c-ngfw", false],
  ]);
  assert.ok(r.vendors.filter((v) => v.available).every((v) => /^\d+\.\d+\.\d+$/.test(v.version!)));
  assert.deepEqual(r.checks.map((c) => c.check.id).sort(), [
    "bmc-health-ok",
    "bmc-power-on",
    "ngfw-decrypt-state-matches-plan",
    "ngfw-deploy-clean",
    "ngfw-ha-state-sane",
    "ntp-source-configured",
    "snapshot-fresh",
  ]);
});

Deno.test("removing a module's manifest line removes its import, with no core change", async () => {
  const without = structuredClone(manifest);
  without.adapters = without.adapters.filter((n: string) => n !== "@dutlab/adapter-vendor-a-switch");
  without.checks = without.checks.filter((n: string) => n !== "@dutlab/check-snapshot-fresh");
  const text = await generate(JSON.stringify(without));
  assert.ok(!text.includes("@dutlab/adapter-vendor-a-switch"));
  assert.ok(!text.includes("@dutlab/check-snapshot-fresh"));
  assert.ok(text.includes("@dutlab/adapter-vendor-a-bmc"));
  // The same registry code then lists neither.
  const r = buildRegistry({
    ...modules,
    adapters: modules.adapters.filter((m) => m.name !== "@dutlab/adapter-vendor-a-switch"),
    checks: modules.checks.filter((m) => m.name !== "@dutlab/check-snapshot-fresh"),
  });
  assert.ok(!r.vendors.some((v) => v.key === "vendor-a-switch"));
  assert.ok(!r.checks.some((c) => c.check.id === "snapshot-fresh"));
});

Deno.test("the generator refuses a manifest naming a module that is not a workspace member", async () => {
  const bad = structuredClone(manifest);
  bad.adapters.push("@dutlab/adapter-nope");
  await assert.rejects(() => generate(JSON.stringify(bad)), /not a workspace member/);
});

Deno.test("the boundary check passes on the tree and catches an adapter importing another module", async () => {
  const root = new URL("..", import.meta.url).pathname;
  const tool = `${root}tools/boundaries.ts`;
  const ok = await new Deno.Command(Deno.execPath(), { args: ["run", "-A", tool] }).output();
  assert.equal(ok.code, 0, new TextDecoder().decode(ok.stderr));
  const tmp = await Deno.makeTempDir();
  for (const d of ["adapters/x", "checks/y", "plugins", "core"]) {
    await Deno.mkdir(`${tmp}/${d}`, { recursive: true });
  }
  await Deno.writeTextFile(
    `${tmp}/adapters/x/mod.ts`,
    'import other from "@dutlab/adapter-vendor-a-bmc";\nimport "../../server.ts";\n',
  );
  await Deno.writeTextFile(`${tmp}/checks/y/mod.ts`, 'import { x } from "@dutlab/core/testing";\n');
  const bad = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", tool],
    env: { BOUNDARY_ROOT: tmp },
  }).output();
  assert.equal(bad.code, 1);
  const err = new TextDecoder().decode(bad.stderr);
  assert.match(err, /adapters\/x\/mod.ts imports "@dutlab\/adapter-vendor-a-bmc"/);
  assert.match(err, /reaches outside its member folder/);
  assert.match(err, /only tests and simulators may import @dutlab\/core\/testing/);
  await Deno.remove(tmp, { recursive: true });
});

Deno.test("the generated file records each member's declared core range, which boot validation checks", () => {
  for (const m of [...modules.adapters, ...modules.checks, ...modules.plugins]) {
    const declared = (m.module as { coreVersion: string }).coreVersion;
    assert.equal(m.coreVersion, declared, m.name);
  }
  const stale = {
    ...modules,
    checks: modules.checks.map((m, i) => i === 0 ? { ...m, coreVersion: "^9.0.0" } : m),
  };
  assert.throws(() => buildRegistry(stale), /modules\.gen\.ts records "\^9\.0\.0": run `deno task gen`/);
});

Deno.test("the generator refuses a member of the wrong kind before writing modules.gen.ts", async () => {
  assert.equal(await declaredCore("@dutlab/check-snapshot-fresh", "checks"), "^1.0.0");
  await assert.rejects(
    () => declaredCore("@dutlab/check-snapshot-fresh", "adapters"),
    /modules\.json lists @dutlab\/check-snapshot-fresh under "adapters", but its default export is of kind "check"/,
  );
  await assert.rejects(() => declaredCore("@dutlab/plugin-plan-catalog", "checks"), /of kind "plugin"/);
});
