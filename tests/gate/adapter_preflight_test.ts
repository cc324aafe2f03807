/**
 * Pre-flight for every enabled adapter that records what the check catalog should answer for it
 * (`adapters/<key>/testdata/expected-preflight.json`), with the enabled checks (modules.gen.ts) and no edit
 * to any check: the checks that apply by capability, the expected status per check on every replayed case of
 * real answers (the case's expected.json), and on the simulator the lab start passing every check while each
 * listed lab setting fails its one check. The vendor-specific expectations are the adapter's data; this test
 * names no adapter.
 */
import assert from "node:assert/strict";
import type { AdapterDefinition, CheckDefinition, CollectedSnapshot } from "@dutlab/core";
import {
  checkFixture,
  connectTo,
  type LabControls,
  replayCase,
  type SimulatedDevice,
} from "@dutlab/core/testing";
import { modules } from "../../modules.gen.ts";

interface ExpectedPreflight {
  replayCredentials: { username: string; password: string };
  applies: string[];
  cases: string[];
  lab: {
    fails: Array<[string, string, string]>;
    restore: Record<string, string>;
    passes: Array<[string, string, string]>;
  };
}

/** The enabled checks (modules.gen.ts types members as unknown until the registry has loaded them). */
const CHECKS = modules.checks.map((m) => m.module as CheckDefinition);
const ADAPTERS = modules.adapters.map((m) => m.module as AdapterDefinition);
const DECRYPT_CHECK = "ngfw-decrypt-state-matches-plan";
const folder = (a: AdapterDefinition) => new URL(`../../adapters/${a.vendorKey}/`, import.meta.url);

/** Status of every enabled check that applies to a device of `adapter` with these snapshots. */
function preflight(adapter: AdapterDefinition, snaps: CollectedSnapshot[], tlsDecrypt: "on" | "off") {
  const out: Record<string, string> = {};
  for (const check of CHECKS) {
    const fx = checkFixture(check, { adapters: [adapter], plan: { tlsDecrypt } });
    const snap = snaps.find((s) => s.label === check.label);
    if (!fx.applies(adapter.vendorKey) || !snap) continue;
    const related = Object.fromEntries((check.alsoReads ?? []).map((l) => [
      l,
      snaps.find((s) => s.label === l)?.payload ?? null,
    ]));
    const r = fx.run(adapter.vendorKey, snap.payload, { related });
    assert.ok(r, check.id);
    assert.notEqual(r.status, "error", `${check.id}: ${r.detail}`);
    out[check.id] = r.status;
  }
  return out;
}

const withExpectations: Array<[AdapterDefinition, ExpectedPreflight]> = [];
for (const adapter of ADAPTERS) {
  const file = new URL("testdata/expected-preflight.json", folder(adapter));
  const text = await Deno.readTextFile(file).catch((e) =>
    e instanceof Deno.errors.NotFound ? null : Promise.reject(e)
  );
  if (text !== null) withExpectations.push([adapter, JSON.parse(text)]);
}

Deno.test("at least one enabled adapter records its expected pre-flight (the tests below are not empty)", () => {
  assert.ok(withExpectations.length > 0);
});

for (const [adapter, exp] of withExpectations) {
  const vendor = adapter.vendorKey;
  Deno.test(`${vendor}: the checks that apply by capability are the ones its data lists`, () => {
    const applies = CHECKS.filter((c) => checkFixture(c, { adapters: [adapter] }).applies(vendor)).map((c) =>
      c.id
    );
    assert.deepEqual(applies.sort(), [...exp.applies].sort());
  });

  for (const c of exp.cases) {
    Deno.test(`${vendor}: pre-flight on fixture ${c} gives the expected status for each check`, async () => {
      const { snaps, expected } = await replayCase(
        adapter,
        new URL(`testdata/${c}`, folder(adapter)),
        exp.replayCredentials,
      );
      assert.deepEqual(preflight(adapter, snaps, "on"), expected.preflightDecryptOn);
      // Decrypt-off flips only the decrypt check.
      const off = preflight(adapter, snaps, "off");
      const flipped = expected.facts.decryptRuleCount === 0 ? "pass" : "fail";
      assert.equal(off[DECRYPT_CHECK], flipped);
    });
  }

  Deno.test(`${vendor}: pre-flight on the simulator: the lab start passes every check; each lab setting fails its check`, async () => {
    const simModule: {
      startSimulatedDevice(): Promise<SimulatedDevice & { url: string }>;
      labControls(d: SimulatedDevice & { url: string }): LabControls;
    } = await import(new URL("sim.ts", folder(adapter)).href);
    await using sim = await simModule.startSimulatedDevice();
    const lab = simModule.labControls(sim);
    await lab.start?.();
    await using conn = await connectTo(adapter, sim.sim, { credentials: sim.credentials });
    const run = async (tlsDecrypt: "on" | "off" = "on") =>
      preflight(adapter, await conn.session.collectAll(), tlsDecrypt);
    const allPass = Object.fromEntries(exp.applies.map((id) => [id, "pass"]));
    assert.deepEqual(await run(), allPass);
    assert.equal((await run("off"))[DECRYPT_CHECK], "fail");
    for (const [key, value, checkId] of exp.lab.fails) {
      await lab.settings[key]!.apply(value);
      assert.deepEqual(await run(), { ...allPass, [checkId]: "fail" }, `${key}=${value}`);
      await lab.settings[key]!.apply(exp.lab.restore[key]!);
      assert.deepEqual(await run(), allPass, `${key}=${exp.lab.restore[key]}`);
    }
    for (const [key, value, why] of exp.lab.passes) {
      await lab.settings[key]!.apply(value);
      assert.deepEqual(await run(), allPass, why);
    }
  });
}
