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
import { childEnv } from "../../core/harness/process.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The scenario runs in a child process of its own: the reclaimer measures its whole process's CPU, and
 * `deno test --parallel` runs the other test modules as threads of this process (under a loaded CI run it
 * never saw this process idle). The child reports what it saw; the assertions stay here.
 */
const RECLAIM_SCENARIO = `
const { MIN_GROWTH_BYTES, startIdleReclaimer } = await import(${
  JSON.stringify(new URL("../../core/harness/core.ts", import.meta.url).href)
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let workerCollections = 0; // another isolate's collection (PGlite's worker), asked first at each reclaim
const reclaimer = startIdleReclaimer(1, async () => void workerCollections++);
let junk = [];
for (let i = 0; i < 400_000; i++) junk.push(String(i).repeat(20));
const grown = Deno.memoryUsage().heapUsed;
junk = null;
const deadline = performance.now() + 10_000;
while (reclaimer.reclaims === 0 && performance.now() < deadline) await sleep(200);
const first = reclaimer.reclaims;
const after = Deno.memoryUsage().heapUsed;
await sleep(2_500);
console.log(JSON.stringify({
  minGrowth: MIN_GROWTH_BYTES, grown, first, after, later: reclaimer.reclaims, workerCollections,
}));
reclaimer.stop();
`;

Deno.test("an idle process that grew gives the garbage back: one reclaim, then none while nothing grows", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--lock=deno.dev.lock", RECLAIM_SCENARIO],
    cwd: new URL("../..", import.meta.url),
    env: childEnv({}),
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const err = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, err);
  const r = JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!);
  // Garbage well above the growth threshold, dropped at once; then the process idles.
  assert.ok(r.grown > r.minGrowth, "the test made enough garbage");
  assert.equal(r.first, 1, "reclaimed once while idle");
  assert.ok(r.after < r.grown, "the garbage was collected");
  // two more idle periods without growth
  assert.equal(r.later, 1, "nothing to give back: no further collection");
  assert.equal(r.workerCollections, 1, "the worker's heap is collected with this thread's");
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
