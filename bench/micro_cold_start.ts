/**
 * Issue 53, cold start A/B interleaved in one process tree: the embedded service's first start (`deno run -A
 * server.ts` on a new `DUT_DATA_DIR`, spawn → first 200 from /readyz) against the PGlite floor's first open of
 * a directory made from the template, alternating, `--rounds` times: the default (the worker opened early,
 * unpacking the template itself: runtime/early_open.ts) and the usual path (`DUT_PGLITE_SHARED_BUFFERS=16MB`,
 * the default's value, which leaves the open to `start()`: the template unpacked on the main thread, then the
 * worker started). One JSON line per start, then the medians (the bench's p50: the lower middle of an even
 * count).
 *
 * `deno run -A --lock=deno.dev.lock bench/micro_cold_start.ts [--rounds 5]`
 *
 * @module
 */
import { parseArgs } from "node:util";
import { freePort, pct, round, serverEnv, startServer, stopChild, waitFor200 } from "./_util.ts";
import { pgliteFloor } from "./_floors.ts";

const { values: args } = parseArgs({
  args: Deno.args,
  options: { rounds: { type: "string", default: "5" } },
});
const tmp = await Deno.makeTempDir({ prefix: "dutlab-cold-" });
const load = () => Number(Deno.readTextFileSync("/proc/loadavg").split(" ")[0]);

async function service(dir: string, extra: Record<string, string>): Promise<number> {
  const port = freePort();
  const t0 = performance.now();
  const { child, logs } = startServer(serverEnv(port, { DUT_DATA_DIR: dir, ...extra }), `${dir}.log`);
  try {
    return await waitFor200(`http://127.0.0.1:${port}/readyz`, t0, 120_000, child);
  } finally {
    await stopChild(child, 15_000);
    await logs;
  }
}

const ratios: Record<string, number[]> = { early: [], usual: [] };
try {
  for (let i = 0; i < Number(args.rounds); i++) {
    const floor = await pgliteFloor(`${tmp}/floor-${i}`, true, undefined, 0);
    for (const [mode, extra] of [["early", {}], ["usual", { DUT_PGLITE_SHARED_BUFFERS: "16MB" }]] as const) {
      const ms = await service(`${tmp}/${mode}-${i}`, extra);
      const row = { round: i, mode, load: load(), floorMs: round(floor.ms), serviceMs: round(ms) };
      ratios[mode]!.push(ms / floor.ms);
      console.error(JSON.stringify({ ...row, ratio: round(ms / floor.ms, 2) }));
    }
  }
  console.log(JSON.stringify({
    medianRatio: Object.fromEntries(Object.entries(ratios).map(([k, v]) => [k, round(pct(v, 50), 2)])),
  }));
} finally {
  await Deno.remove(tmp, { recursive: true });
}
