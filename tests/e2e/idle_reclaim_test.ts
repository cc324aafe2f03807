/**
 * The idle reclaimer measures its own process's CPU: a process-level test, kept with the cross-process tests
 * (beside its room it ran next to busy room tests in the same test process and never saw it idle).
 */
import assert from "node:assert/strict";
import {
  BUSY_CPU_SHARE,
  IDLE_CPU_SHARE,
  MIN_GROWTH_BYTES,
  ReclaimPolicy,
  startIdleReclaimer,
} from "../../core/harness/core.ts";
import { parseEnv } from "../../core/harness/core.ts";

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

Deno.test("one reclaim per burst: none while a steady service regrows its working set between bursts", () => {
  const interval = 5_000;
  const idle = IDLE_CPU_SHARE * interval; // the most CPU an idle interval may use
  const burst = BUSY_CPU_SHARE * interval + 1; // the least a burst uses
  const mib = 2 ** 20;
  const p = new ReclaimPolicy(interval);
  // Start-up counts as a burst: the first idle interval with memory grown reclaims.
  assert.equal(p.due(idle, 200 * mib), true);
  p.reclaimed(120 * mib);
  // Steady polling at or near the idle share regrows what it needs: no reclaim without a burst, however
  // much the memory grows, and intervals between the idle share and a burst's are neither.
  for (const [used, rss] of [[idle / 2, 140], [idle, 170], [idle + 1, 200], [burst - 1, 230], [idle, 260]]) {
    assert.equal(p.due(used!, rss! * mib), false, `${used} ms, ${rss} MiB`);
  }
  // A burst is never interrupted; the first idle interval after it reclaims.
  assert.equal(p.due(burst, 400 * mib), false);
  assert.equal(p.due(idle + 1, 400 * mib), false, "not idle yet");
  assert.equal(p.due(idle, 400 * mib), true);
  p.reclaimed(150 * mib);
  assert.equal(p.due(idle, 400 * mib), false, "one reclaim for that burst");
  // A burst that left less than MIN_GROWTH_BYTES behind pays no collection, until the growth reaches it.
  assert.equal(p.due(burst, 155 * mib), false);
  assert.equal(p.due(0, 150 * mib + MIN_GROWTH_BYTES - 1), false);
  assert.equal(p.due(0, 150 * mib + MIN_GROWTH_BYTES), true);
});
