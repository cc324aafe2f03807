/** The adapter's volatile paths (README "Volatile paths") match real and simulated answers. */
import assert from "node:assert/strict";
import { connectTo, nonVolatileChanges, replayCase, unmatchedVolatilePaths } from "@dutlab/core/testing";
import adapter from "./mod.ts";
import { startSimulatedDevice } from "./sim.ts";

Deno.test("every volatile path matches the simulator or a captured answer; two polls differ only there", async () => {
  const dir = (c: string) => new URL(`./testdata/${c}`, import.meta.url);
  const captured = (await replayCase(adapter, dir("dmtf-public-rackmount1"))).snaps;
  const oemDateTime = (await replayCase(adapter, dir("oem-datetime"))).snaps;
  await using sim = await startSimulatedDevice();
  await using conn = await connectTo(adapter, sim.sim, { credentials: sim.credentials });
  const first = await conn.session.collectAll();
  await new Promise((r) => setTimeout(r, 1100));
  const second = await conn.session.collectAll();
  assert.deepEqual(unmatchedVolatilePaths(adapter, [captured, oemDateTime, first, second]), []);
  assert.deepEqual(nonVolatileChanges(adapter, first, second), []);
});
