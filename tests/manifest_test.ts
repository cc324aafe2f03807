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

/** Each workspace member's `deno.json` (name, version), read from the root `deno.json` workspace list. */
async function members(): Promise<Map<string, { version: string; dir: string }>> {
  const root = JSON.parse(await Deno.readTextFile(new URL("../deno.json", import.meta.url)));
  const out = new Map<string, { version: string; dir: string }>();
  for (const dir of root.workspace as string[]) {
    const j = JSON.parse(await Deno.readTextFile(new URL(`../${dir}/deno.json`, import.meta.url)));
    out.set(j.name, { version: j.version, dir });
  }
  return out;
}

Deno.test("the real modules build a registry listing every enabled module of modules.json, and nothing else", async () => {
  const r = buildRegistry(modules);
  const ws = await members();
  // Every enabled adapter is a vendor of the list, available, under the key its package name carries
  // (@dutlab/adapter-<vendor-key>), with its member's version; then the vendors listed without adapter.
  assert.ok(manifest.adapters.length > 0);
  assert.deepEqual(r.vendors.map((v) => [v.key, v.available, v.version]), [
    ...manifest.adapters.map((name: string) => {
      assert.ok(ws.has(name), `${name} is a workspace member`);
      return [name.replace(/^@dutlab\/adapter-/, ""), true, ws.get(name)!.version];
    }),
    ...manifest.vendorsWithoutAdapter.map((v: { key: string }) => [v.key, false, null]),
  ]);
  assert.ok(r.vendors.filter((v) => v.available).every((v) => /^\d+\.\d+\.\d+$/.test(v.version!)));
  // Every enabled check is registered under the id its package name carries (@dutlab/check-<id>).
  assert.deepEqual(
    r.checks.map((c) => c.check.id).sort(),
    manifest.checks.map((n: string) => n.replace(/^@dutlab\/check-/, "")).sort(),
  );
  // The generated file imports exactly the manifest's modules, in its order.
  for (const kind of ["adapters", "checks", "plugins"] as const) {
    assert.deepEqual(modules[kind].map((m) => m.name), manifest[kind], kind);
  }
  // The catalog checks of spec 4.9 (plus the BMC checks) are among them.
  for (
    const id of [
      "ngfw-deploy-clean",
      "ngfw-decrypt-state-matches-plan",
      "ntp-source-configured",
      "ngfw-ha-state-sane",
      "snapshot-fresh",
    ]
  ) {
    assert.ok(r.checks.some((c) => c.check.id === id), id);
  }
});

Deno.test("every enabled module is a workspace member; a vendor is enabled or listed without adapter", async () => {
  const ws = await members();
  for (const name of [...manifest.adapters, ...manifest.checks, ...manifest.plugins]) {
    assert.ok(ws.has(name), `${name} is in the root deno.json workspace`);
  }
  const keys = manifest.adapters.map((n: string) => n.replace(/^@dutlab\/adapter-/, ""));
  for (const v of manifest.vendorsWithoutAdapter) assert.ok(!keys.includes(v.key), v.key);
});

Deno.test("removing a module's manifest line removes its import, with no core change", async () => {
  // Each enabled adapter and check in turn: the generator and the registry drop it and keep the others.
  for (const [kind, prefix] of [["adapters", "@dutlab/adapter-"], ["checks", "@dutlab/check-"]] as const) {
    for (const gone of manifest[kind] as string[]) {
      const without = structuredClone(manifest);
      without[kind] = without[kind].filter((n: string) => n !== gone);
      const text = await generate(JSON.stringify(without));
      assert.ok(!text.includes(`"${gone}"`), gone);
      for (const kept of without[kind]) assert.ok(text.includes(`"${kept}"`), kept);
      // The same registry code then lists it no more.
      const r = buildRegistry({ ...modules, [kind]: modules[kind].filter((m) => m.name !== gone) });
      const key = gone.slice(prefix.length);
      if (kind === "adapters") {
        assert.ok(!r.vendors.some((v) => v.key === key), key);
        assert.equal(r.adapters.size, manifest.adapters.length - 1);
      } else {
        assert.ok(!r.checks.some((c) => c.check.id === key), key);
        assert.equal(r.checks.length, manifest.checks.length - 1);
      }
    }
  }
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
