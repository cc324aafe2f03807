import { runAdapterContract } from "@dutlab/core/testing";
import adapter from "./mod.ts";
import { startSimulatedDevice } from "./sim.ts";

Deno.test("vendor-z-test adapter contract", async (t) => {
  await runAdapterContract(t, { adapter, start: startSimulatedDevice });
});
