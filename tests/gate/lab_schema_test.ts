/**
 * Issue 35: the lab file's JSON Schema judged by an outside validator, ajv-cli 5 (draft 2020-12), over the
 * example lab files (valid) and a set of wrong ones (tests/testdata/lab/invalid, each invalid for the reason
 * its name gives); our own zod schema must agree with it on every file.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { childEnv } from "../../core/harness/process.ts";
import { LabFile } from "../../core/harness/core.ts";

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
