/**
 * Fixture tests: the adapter polls real PAN-OS XML API answers (pan-os-upgrade-assurance and SuzieQ test
 * data, and cases derived from them; see testdata/README.md) through the replay server with an API key, and
 * the facts are compared with each case's expected.json. `xmllint` (libxml2) judges every answer file
 * well-formed, independently of the parser the adapter uses.
 */
import assert from "node:assert/strict";
import { replayCase } from "@dutlab/core/testing";
import adapter, { cpuPercent, KEY_USERNAME } from "./mod.ts";
import { decryptingRules } from "./_facts.ts";

export const CASES = ["upgrade-assurance-pa7050", "suzieq-pavm-8.0", "multi-vsys-decrypt"];
const dir = (c: string) => new URL(`./testdata/${c}`, import.meta.url);
const KEY = { username: KEY_USERNAME, password: "LUFRPTreplayKey0123456789==" };
// deno-lint-ignore no-explicit-any
const payloadOf = (snaps: Array<{ label: string; payload: unknown }>, label: string): any =>
  snaps.find((s) => s.label === label)?.payload;

for (const c of CASES) {
  Deno.test(`fixture ${c}: every request had a captured answer and the facts match expected.json`, async () => {
    const { snaps, expected, replay } = await replayCase(adapter, dir(c), KEY);
    assert.deepEqual(replay.unmatched, []);
    assert.equal(snaps.length, 9);
    assert.equal(cpuPercent(payloadOf(snaps, "resource_usage")), expected.cpuPercent);
    assert.ok(replay.sim.requests.every((r) => r.headers.get("x-pan-key") === KEY.password));
  });
}

Deno.test("fixture multi-vsys-decrypt: enabled decrypt and decrypt-and-forward rules of every vsys count; disabled and no-decrypt do not", async () => {
  const { snaps, expected } = await replayCase(adapter, dir("multi-vsys-decrypt"), KEY);
  assert.deepEqual(decryptingRules(payloadOf(snaps, "decrypt_policy")), expected.decrypting);
});

Deno.test("a single <job> and a single rule read as lists (the parser's list elements)", async () => {
  const { snaps } = await replayCase(adapter, dir("suzieq-pavm-8.0"), KEY);
  assert.ok(Array.isArray(payloadOf(snaps, "deploy_status").jobs.response.result.job));
  const one = {
    response: {
      "@status": "success",
      result: { decryption: { rules: { entry: [{ "@name": "r", action: "decrypt" }] } } },
    },
  };
  assert.equal(adapter.facts.decryptRuleCount(one), 1);
});

Deno.test("xmllint judges every captured answer well-formed", async () => {
  const files: string[] = [];
  for (const c of CASES) {
    for await (const e of Deno.readDir(dir(c))) {
      if (e.name.endsWith(".xml")) files.push(`${dir(c).pathname}/${e.name}`);
    }
  }
  assert.ok(files.length >= 15);
  const out = await new Deno.Command("xmllint", { args: ["--noout", ...files], stderr: "piped" }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
});
