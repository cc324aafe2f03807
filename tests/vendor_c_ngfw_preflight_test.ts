/**
 * Pre-flight for `vendor-c-ngfw` with the enabled check catalog (modules.gen.ts) and no edit to any check: each
 * check serves the adapter by capability, and gives the right answer on the simulator (in each lab setting) and
 * on every fixture of real answers (the expected status per check is in the case's expected.json).
 */
import assert from "node:assert/strict";
import type { CheckDefinition, CollectedSnapshot } from "@dutlab/core";
import { checkFixture, connectTo, replayCase } from "@dutlab/core/testing";
import adapter from "@dutlab/adapter-vendor-c-ngfw";
import { labControls, startSimulatedDevice } from "@dutlab/adapter-vendor-c-ngfw/sim";
import { modules } from "../modules.gen.ts";

const VENDOR = adapter.vendorKey;
const FIREWALL_CHECKS = [
  "ngfw-deploy-clean",
  "ngfw-decrypt-state-matches-plan",
  "ntp-source-configured",
  "ngfw-ha-state-sane",
  "snapshot-fresh",
];
const CASES = ["upgrade-assurance-pa7050", "suzieq-pavm-8.0", "multi-vsys-decrypt"];
/** The enabled checks (modules.gen.ts types members as unknown until the registry has loaded them). */
const CHECKS = modules.checks.map((m) => m.module as CheckDefinition);
const caseDir = (c: string) => new URL(`../adapters/vendor-c-ngfw/testdata/${c}`, import.meta.url);

/** Status of every enabled check that applies to a vendor-c-ngfw device with these snapshots. */
function preflight(snaps: CollectedSnapshot[], tlsDecrypt: "on" | "off"): Record<string, string> {
  const out: Record<string, string> = {};
  for (const check of CHECKS) {
    const fx = checkFixture(check, { adapters: [adapter], plan: { tlsDecrypt } });
    const snap = snaps.find((s) => s.label === check.label);
    if (!fx.applies(VENDOR) || !snap) continue;
    const related = Object.fromEntries((check.alsoReads ?? []).map((l) => [
      l,
      snaps.find((s) => s.label === l)?.payload ?? null,
    ]));
    const r = fx.run(VENDOR, snap.payload, { related });
    assert.ok(r, check.id);
    assert.notEqual(r.status, "error", `${check.id}: ${r.detail}`);
    out[check.id] = r.status;
  }
  return out;
}

Deno.test("every firewall check applies to vendor-c-ngfw by capability; no server-controller check does", () => {
  const applies = CHECKS.filter((c) => checkFixture(c, { adapters: [adapter] }).applies(VENDOR)).map((c) =>
    c.id
  );
  assert.deepEqual(applies.sort(), [...FIREWALL_CHECKS].sort());
});

for (const c of CASES) {
  Deno.test(`pre-flight on fixture ${c} gives the expected status for each check`, async () => {
    const { snaps, expected } = await replayCase(adapter, caseDir(c), {
      username: "apikey",
      password: "LUFRPTreplayKey0123456789==",
    });
    assert.deepEqual(preflight(snaps, "on"), expected.preflightDecryptOn);
    // Decrypt-off flips only the decrypt check.
    const off = preflight(snaps, "off");
    const flipped = expected.facts.decryptRuleCount === 0 ? "pass" : "fail";
    assert.equal(off["ngfw-decrypt-state-matches-plan"], flipped);
  });
}

Deno.test("pre-flight on the simulator: the lab start passes every check; each lab setting fails its check", async () => {
  await using sim = await startSimulatedDevice();
  const lab = labControls(sim);
  await lab.start?.();
  await using conn = await connectTo(adapter, sim.sim, { credentials: sim.credentials });
  const run = async (tlsDecrypt: "on" | "off" = "on") =>
    preflight(await conn.session.collectAll(), tlsDecrypt);
  const allPass = Object.fromEntries(FIREWALL_CHECKS.map((id) => [id, "pass"]));
  assert.deepEqual(await run(), allPass);
  assert.equal((await run("off"))["ngfw-decrypt-state-matches-plan"], "fail");

  const cases: Array<[string, string, string]> = [
    ["decrypt", "off", "ngfw-decrypt-state-matches-plan"],
    ["deploy", "pending", "ngfw-deploy-clean"],
    ["deploy", "failed", "ngfw-deploy-clean"],
    ["ha", "failed", "ngfw-ha-state-sane"],
    ["ha", "suspended", "ngfw-ha-state-sane"],
    ["ntp", "off", "ntp-source-configured"],
  ];
  const restore: Record<string, string> = { decrypt: "on", deploy: "ok", ha: "active", ntp: "on" };
  for (const [key, value, checkId] of cases) {
    await lab.settings[key]!.apply(value);
    assert.deepEqual(await run(), { ...allPass, [checkId]: "fail" }, `${key}=${value}`);
    await lab.settings[key]!.apply(restore[key]!);
    assert.deepEqual(await run(), allPass, `${key}=${restore[key]}`);
  }
  await lab.settings.ha!.apply("standby");
  assert.deepEqual(await run(), allPass, "a passive node is sane");
});
