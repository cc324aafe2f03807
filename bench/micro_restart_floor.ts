/**
 * Issue 53, A/B interleaved in one process tree: the embedded service's restart (`deno run -A server.ts` on
 * the same `DUT_DATA_DIR`, spawn → first 200 from /readyz) against the PGlite floor's open of the same
 * directory (bench/_pglite_floor.ts with the service's `shared_buffers`), alternating, `--rounds` times, with
 * the load average at each round and the service's own "Embedded database ready in N ms" from its log (the
 * part of its start spent opening PGlite).
 *
 * `deno run -A --lock=deno.dev.lock bench/micro_restart_floor.ts [--rounds 5]`
 *
 * @module
 */
import { parseArgs } from "node:util";
import { freePort, round, serverEnv, startServer, stopChild, waitFor200 } from "./_util.ts";
import { pgliteFloor } from "./_floors.ts";
import { PGLITE_SHARED_BUFFERS } from "../core/harness/core.ts";

const { values: args } = parseArgs({
  args: Deno.args,
  options: { rounds: { type: "string", default: "5" } },
});
const tmp = await Deno.makeTempDir({ prefix: "dutlab-restart-floor-" });
const load = () => Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).map(Number);

async function service(phase: string): Promise<{ ms: number }> {
  const port = freePort();
  const log = `${tmp}/serve-${phase}.log`;
  const t0 = performance.now();
  const { child, logs } = startServer(serverEnv(port, { DUT_DATA_DIR: `${tmp}/data` }), log);
  try {
    const ms = await waitFor200(`http://127.0.0.1:${port}/readyz`, t0, 120_000, child);
    return { ms };
  } finally {
    await stopChild(child, 15_000);
    await logs;
  }
}

async function dbReadyMs(phase: string): Promise<number | null> {
  const text = await Deno.readTextFile(`${tmp}/serve-${phase}.log`).catch(() => "");
  const m = text.match(/Embedded database ready in\D*(\d+)/);
  return m ? Number(m[1]) : null;
}

try {
  const cold = await service("cold");
  console.error(`cold start ${round(cold.ms)} ms, load ${load().join(" ")}`);
  const rows = [];
  for (let i = 0; i < Number(args.rounds); i++) {
    const floor = await pgliteFloor(`${tmp}/data/pglite`, false, PGLITE_SHARED_BUFFERS, 0);
    const s = await service(`r${i}`);
    const row = {
      round: i,
      load: load(),
      floorMs: round(floor.ms),
      serviceMs: round(s.ms),
      ratio: round(s.ms / floor.ms, 2),
      serviceDbOpenMs: await dbReadyMs(`r${i}`),
    };
    console.error(JSON.stringify(row));
    rows.push(row);
  }
  const ratios = rows.map((r) => r.ratio).sort((a, b) => a - b);
  console.log(JSON.stringify({ medianRatio: ratios[Math.floor(ratios.length / 2)], rows }));
} finally {
  await Deno.remove(tmp, { recursive: true }).catch(() => {});
}
