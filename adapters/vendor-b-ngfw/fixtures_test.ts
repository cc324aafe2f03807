/**
 * Fixture tests: the adapter polls captured FortiOS answers (prometheus-community/fortigate_exporter test
 * data, and cases derived from them; see testdata/README.md) through the replay server with an API token.
 */
import assert from "node:assert/strict";
import { replayCase } from "@dutlab/core/testing";
import adapter from "./mod.ts";
import { decryptingPolicies } from "./_facts.ts";

const dir = (c: string) => new URL(`./testdata/${c}`, import.meta.url);
const TOKEN = { username: "apitoken", password: "replay-token-0123456789" };
// deno-lint-ignore no-explicit-any
const payloadOf = (snaps: Array<{ label: string; payload: unknown }>, label: string): any =>
  snaps.find((s) => s.label === label)?.payload;

Deno.test("fixture exporter-multi-vdom: policies of every VDOM are collected, with their VDOM", async () => {
  const { snaps, expected, replay } = await replayCase(adapter, dir("exporter-multi-vdom"), TOKEN);
  assert.deepEqual(replay.unmatched, []);
  const policies = payloadOf(snaps, "decrypt_policy").policies;
  assert.deepEqual(policies.map((e: { vdom: string }) => e.vdom), expected.vdoms);
  assert.equal(policies[0].results.length, 3, "the policies live in FG-traffic, not root");
  assert.ok(replay.sim.requests.every((r) => r.authStyle === "bearer"));
});

Deno.test("fixture multi-vdom-deep-inspection: decryption found in a non-root VDOM; disabled and UTM-off policies do not decrypt", async () => {
  const { snaps, expected, replay } = await replayCase(adapter, dir("multi-vdom-deep-inspection"), TOKEN);
  assert.deepEqual(replay.unmatched, []);
  assert.deepEqual(decryptingPolicies(payloadOf(snaps, "decrypt_policy")), expected.decrypting);
});

Deno.test("decryptRuleCount: a deep-inspection profile on a UTM-off or disabled policy does not decrypt", async () => {
  const policies = JSON.parse(
    await Deno.readTextFile(
      new URL("./testdata/multi-vdom-deep-inspection/firewall-policy-vdom-all.json", import.meta.url),
    ),
  );
  const sslSshProfiles = JSON.parse(
    await Deno.readTextFile(
      new URL("./testdata/exporter-multi-vdom/ssl-ssh-profile-vdom-all.json", import.meta.url),
    ),
  );
  assert.equal(adapter.facts.decryptRuleCount({ policies, sslSshProfiles }), 1);
  policies[0].results[3]["utm-status"] = "enable";
  assert.equal(adapter.facts.decryptRuleCount({ policies, sslSshProfiles }), 2);
  policies[0].results[2].status = "enable";
  assert.equal(adapter.facts.decryptRuleCount({ policies, sslSshProfiles }), 3);
});

Deno.test("inventory reads model, version with build and serial from the simulator's system status", async () => {
  const { startSimulatedDevice } = await import("./sim.ts");
  const { connectTo } = await import("@dutlab/core/testing");
  await using sim = await startSimulatedDevice({ username: "apitoken" });
  await using conn = await connectTo(adapter, sim.sim, { credentials: sim.credentials });
  const snaps = await conn.session.collectAll();
  assert.deepEqual(adapter.facts.inventory(payloadOf(snaps, "system_info")), {
    model: "FortiGate VM64",
    softwareVersion: "v7.6.7 build 3704",
    serialNumber: "FGVM02TM24000001",
  });
});
