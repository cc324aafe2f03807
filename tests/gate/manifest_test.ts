import assert from "node:assert/strict";
import { declaredCore, generate } from "../../tools/gen_modules.ts";
import { modules } from "../../modules.gen.ts";
import { buildRegistry } from "../../core/harness/core.ts";
import { parse } from "yaml";
import { childEnv } from "../../core/harness/process.ts";
import { LabFile } from "../../core/harness/core.ts";

const manifest = JSON.parse(await Deno.readTextFile(new URL("../../modules.json", import.meta.url)));

Deno.test("the committed modules.gen.ts matches modules.json", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "gen:check"],
    cwd: new URL("../..", import.meta.url),
  })
    .output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
});

/** Each workspace member's `deno.json` (name, version), read from the root `deno.json` workspace list. */
async function members(): Promise<Map<string, { version: string; dir: string }>> {
  const root = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
  const out = new Map<string, { version: string; dir: string }>();
  for (const dir of root.workspace as string[]) {
    const j = JSON.parse(await Deno.readTextFile(new URL(`../../${dir}/deno.json`, import.meta.url)));
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

// Issue 35: the lab file's JSON Schema judged by an outside validator, ajv-cli 5 (draft 2020-12), over the
// example lab files (valid) and a set of wrong ones (tests/testdata/lab/invalid, each invalid for the reason
// its name gives); our own zod schema must agree with it on every file.
const ROOT = new URL("../..", import.meta.url).pathname;
const SCHEMA = "schemas/lab.schema.json";
const VALID = ["examples/lab.yaml", "examples/lab.json"];
/** Each wrong file and the instance path ajv must name. */
const INVALID: Record<string, string> = {
  "absolute-secret-file.yaml": "/credentials/admin/password",
  "bad-hostname.yaml": "/devices/0/hostname",
  "bad-lab-name.yaml": "/metadata/name",
  "bad-tag.yaml": "/devices/0/tags/0",
  "bad-tls-mode.yaml": "/devices/0/tlsVerifyMode",
  "http-url.yaml": "/devices/0/baseUrl",
  "no-devices-member.yaml": "",
  "password-on-a-device.yaml": "/devices/0",
  "plaintext-password.yaml": "/credentials/admin/password",
  "poll-interval-too-short.yaml": "/devices/0/pollIntervalSeconds",
  "wrong-api-version.yaml": "/apiVersion",
};

async function ajv(args: string[]) {
  const o = await new Deno.Command("npx", {
    args: ["-y", "ajv-cli@5.0.0", ...args, "--spec=draft2020", "-s", SCHEMA, "--errors=line"],
    cwd: ROOT,
    env: childEnv({}),
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: o.code, out: dec.decode(o.stdout) + dec.decode(o.stderr) };
}

Deno.test("ajv-cli (draft 2020-12) accepts the example lab files and refuses each wrong one at its path", async () => {
  const ok = await ajv(["validate", ...VALID.flatMap((f) => ["-d", f])]);
  assert.equal(ok.code, 0, ok.out);
  for (const f of VALID) assert.match(ok.out, new RegExp(`${f} valid`));

  const files = Object.keys(INVALID).sort();
  const listed = [...Deno.readDirSync(`${ROOT}tests/testdata/lab/invalid`)].map((e) => e.name).sort();
  assert.deepEqual(listed, files, "every wrong file has its expected path here");
  const bad = await ajv([
    "test",
    "--invalid",
    ...files.flatMap((f) => ["-d", `tests/testdata/lab/invalid/${f}`]),
  ]);
  assert.equal(bad.code, 0, bad.out);
  for (const f of files) {
    const m = bad.out.match(new RegExp(`${f} passed test\\n(\\[.*\\])`));
    assert.ok(m, `${f}: ${bad.out}`);
    const errors = JSON.parse(m[1]!) as Array<{ instancePath: string }>;
    assert.ok(errors.some((e) => e.instancePath === INVALID[f]), `${f}: ${m[1]}`);
  }

  // Our own schema agrees with the outside judge on every file.
  for (const f of VALID) {
    assert.ok(LabFile.safeParse(parse(await Deno.readTextFile(`${ROOT}${f}`))).success, f);
  }
  for (const f of files) {
    const r = LabFile.safeParse(parse(await Deno.readTextFile(`${ROOT}tests/testdata/lab/invalid/${f}`)));
    assert.ok(!r.success, f);
  }
});

Deno.test("deno task doc:lint covers every published face (every export of every member's deno.json)", async () => {
  const root = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
  const args = (root.tasks["doc:lint"] as string).split(/\s+/).filter((a) => /\.tsx?$/.test(a));
  const globs = args.map((a) => new RegExp(`^${a.replace(/[.]/g, "\\.").replace(/\*/g, "[^/]+")}$`));
  const missing: string[] = [];
  for (const dir of root.workspace as string[]) {
    const j = JSON.parse(await Deno.readTextFile(new URL(`../../${dir}/deno.json`, import.meta.url)));
    const faces: string[] = typeof j.exports === "string" ? [j.exports] : Object.values(j.exports ?? {});
    for (const face of faces) {
      const path = `${dir.replace(/^\.\//, "")}/${face.replace(/^\.\//, "")}`;
      if (!globs.some((g) => g.test(path))) missing.push(path);
    }
  }
  assert.deepEqual(missing, [], "published faces deno task doc:lint does not lint");
});

Deno.test("deno task test runs the JSDoc examples and the leak checks (ops and resources sanitizers)", async () => {
  const root = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
  const args = (root.tasks.test as string).split(/\s+/);
  for (const flag of ["--doc", "--sanitize-ops", "--sanitize-resources"]) {
    assert.ok(args.includes(flag), `the test task passes ${flag}`);
  }
});
