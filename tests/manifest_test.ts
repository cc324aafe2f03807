import assert from "node:assert/strict";
import { declaredCore, generate } from "../tools/gen_modules.ts";
import { modules } from "../modules.gen.ts";
import { buildRegistry } from "@dutlab/core/runtime";

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

/** Run the boundary check over a temp tree of `files` (path → text); returns its exit code and stderr. */
async function boundariesOver(files: Record<string, string>): Promise<{ code: number; err: string }> {
  const tool = new URL("../tools/boundaries.ts", import.meta.url).pathname;
  const tmp = await Deno.makeTempDir();
  try {
    for (const d of ["adapters", "checks", "plugins", "core/src"]) {
      await Deno.mkdir(`${tmp}/${d}`, { recursive: true });
    }
    for (const [path, text] of Object.entries(files)) {
      await Deno.mkdir(`${tmp}/${path.slice(0, path.lastIndexOf("/"))}`, { recursive: true });
      await Deno.writeTextFile(`${tmp}/${path}`, text);
    }
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", tool],
      env: { BOUNDARY_ROOT: tmp },
    }).output();
    return { code: out.code, err: new TextDecoder().decode(out.stderr) };
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

Deno.test("the boundary check fails when domain code imports the HTTP layer, wherever the rooms are", async () => {
  // The real tree passes (all rules, these two included): the first boundary test runs the tool over it.
  const r = await boundariesOver({
    "core/src/http/problem.ts": "export const problems = {};\n",
    "core/src/http/app.ts": 'import { RunService } from "../runs/service.ts";\nexport const createApp = 1;\n',
    "core/src/runs/service.ts": 'import { problems } from "../http/problem.ts";\n',
    "core/src/access.ts": 'export { problems } from "./http/problem.ts";\n',
    // After a regrouping into folders: matched by the http/ folder name, not today's paths.
    "core/src/devices/store.ts": 'import type { Problem } from "../http/problem.ts";\n',
    // The runtime wiring that builds the app may import it, here and after a move into runtime/.
    "core/src/bootstrap.ts": 'export { createApp } from "./http/app.ts";\n',
    "core/src/runtime/bootstrap.ts": 'export { createApp } from "../http/app.ts";\n',
    "core/testing/app.ts": 'import { createApp } from "../src/http/app.ts";\n',
  });
  assert.equal(r.code, 1);
  const bad = [...r.err.matchAll(/^\s+(\S+) imports .*domain code may not import the HTTP layer/gm)].map((
    m,
  ) => m[1]);
  assert.deepEqual(bad.sort(), [
    "core/src/access.ts",
    "core/src/devices/store.ts",
    "core/src/runs/service.ts",
  ]);
  const ok = await boundariesOver({
    "core/src/http/problem.ts": "export const problems = {};\n",
    "core/src/http/app.ts": 'import { problems } from "./problem.ts";\nexport const createApp = 1;\n',
    "core/src/runtime/bootstrap.ts": 'export { createApp } from "../http/app.ts";\n',
  });
  assert.equal(ok.code, 0, ok.err);
});

Deno.test("the boundary check fails when the poller imports runs", async () => {
  const r = await boundariesOver({
    "core/src/runs/alerts.ts": 'import type { PollWriteHook } from "../poller/store.ts";\n',
    "core/src/poller/store.ts": 'import { recordDecryptAlerts } from "../runs/alerts.ts";\n',
    "core/src/poller/cycle.ts": 'import type { StartState } from "../runs/alerts.ts";\n',
    // Regrouped: a poller folder nested in another room still may not reach runs.
    "core/src/devices/poller/cycle.ts": 'import "../../runs/alerts.ts";\n',
  });
  assert.equal(r.code, 1);
  const bad = [...r.err.matchAll(/^\s+(\S+) imports .*the poller may not import runs/gm)].map((m) => m[1]);
  assert.deepEqual(bad.sort(), [
    "core/src/devices/poller/cycle.ts",
    "core/src/poller/cycle.ts",
    "core/src/poller/store.ts",
  ]);
  // runs importing the poller (to register its hook) is the allowed direction.
  const ok = await boundariesOver({
    "core/src/runs/alerts.ts": 'import type { PollWriteHook } from "../poller/store.ts";\n',
    "core/src/poller/store.ts": "export type PollWriteHook = () => void;\n",
  });
  assert.equal(ok.code, 0, ok.err);
});

Deno.test("the boundary check fails when the CLI imports core or a member (HTTP API only)", async () => {
  const r = await boundariesOver({
    "cli/_a.ts": 'import { runPreflight } from "../core/src/preflight/engine.ts";\n',
    "cli/_b.ts": 'import { defineCheck } from "@dutlab/core";\n',
    "cli/sub/_c.ts": 'import "../../checks/x/mod.ts";\n',
  });
  assert.equal(r.code, 1);
  const bad = [...r.err.matchAll(/^\s+(\S+) imports .*the CLI talks to the service over the HTTP API only/gm)]
    .map((m) => m[1]);
  assert.deepEqual(bad.sort(), ["cli/_a.ts", "cli/_b.ts", "cli/sub/_c.ts"]);
  const ok = await boundariesOver({
    "cli/_a.ts":
      'import type { paths } from "./generated/dutlab-api.ts";\nimport "../tools/verify_report.ts";\n',
  });
  assert.equal(ok.code, 0, ok.err);
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
