import assert from "node:assert/strict";
import { MIN_GROWTH_BYTES, startIdleReclaimer } from "./idle.ts";
import { parseEnv } from "./config.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("an idle process that grew gives the garbage back: one reclaim, then none while nothing grows", async () => {
  const reclaimer = startIdleReclaimer(1);
  try {
    // Garbage well above the growth threshold, dropped at once; then the process idles.
    let junk: string[] | null = [];
    for (let i = 0; i < 400_000; i++) junk.push(`${i}`.repeat(20));
    const grown = Deno.memoryUsage();
    junk = null;
    assert.ok(grown.heapUsed > MIN_GROWTH_BYTES, "the test made enough garbage");
    const deadline = performance.now() + 10_000;
    while (reclaimer.reclaims === 0 && performance.now() < deadline) await sleep(200);
    assert.equal(reclaimer.reclaims, 1, "reclaimed once while idle");
    assert.ok(Deno.memoryUsage().heapUsed < grown.heapUsed, "the garbage was collected");
    await sleep(2_500); // two more idle periods without growth
    assert.equal(reclaimer.reclaims, 1, "nothing to give back: no further collection");
  } finally {
    reclaimer.stop();
  }
});

Deno.test("DUT_IDLE_RECLAIM_SECONDS=0 turns the reclaimer off; the default is 5 s", async () => {
  assert.equal(parseEnv({}).DUT_IDLE_RECLAIM_SECONDS, 5);
  assert.equal(parseEnv({ DUT_IDLE_RECLAIM_SECONDS: "0" }).DUT_IDLE_RECLAIM_SECONDS, 0);
  assert.throws(() => parseEnv({ DUT_IDLE_RECLAIM_SECONDS: "-1" }), /DUT_IDLE_RECLAIM_SECONDS/);
  const off = startIdleReclaimer(0);
  let junk: string[] | null = [];
  for (let i = 0; i < 200_000; i++) junk.push(`${i}`.repeat(20));
  junk = null;
  await sleep(1_200);
  assert.equal(off.reclaims, 0);
  off.stop();
});
