/** The adapter's volatile paths (README "Volatile paths") match real and simulated answers. */
import assert from "node:assert/strict";
import { connectTo, nonVolatileChanges, replayCase, unmatchedVolatilePaths } from "@dutlab/core/testing";
import adapter from "./mod.ts";
import { labControls, startSimulatedDevice } from "./sim.ts";

Deno.test("every volatile path matches the simulator or a captured answer; two polls differ only there", async () => {
  const captured = (await replayCase(adapter, new URL("./testdata/multi-vsys-decrypt", import.meta.url), {
    username: "apikey",
    password: "LUFRPTreplayKey0123456789==",
  })).snaps;
  await using sim = await startSimulatedDevice();
  await labControls(sim).settings.ha!.apply("active");
  await using conn = await connectTo(adapter, sim.sim, { credentials: sim.credentials });
  const first = await conn.session.collectAll();
  await new Promise((r) => setTimeout(r, 1100));
  sim.state.cpuIdle -= 3;
  const second = await conn.session.collectAll();
  assert.deepEqual(unmatchedVolatilePaths(adapter, [captured, first, second]), []);
  assert.deepEqual(nonVolatileChanges(adapter, first, second), []);
});
