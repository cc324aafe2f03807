/**
 * Issue 53, A/B interleaved in one process tree: the embedded service's restart (`deno run -A server.ts` on
 * the same `DUT_DATA_DIR`, spawn → first 200 from /readyz) against the PGlite floor's open of the same
 * directory (bench/_pglite_floor.ts with the service's `shared_buffers`), alternating, `--rounds` times, with
 * the load average at each round and the service's own "Embedded database ready in N ms" from its log (the
 * part of its start spent opening PGlite). With `--worker off,on` each round starts the service once per
 * `DUT_PGLITE_WORKER` setting (after the floor, in that order); each start also gives the service's RSS 2 s
 * after its first 200 (idle, nothing registered) beside the floor's (its RSS 2 s after its first 200).
 *
 * `deno run -A --lock=deno.dev.lock bench/micro_restart_floor.ts [--rounds 5] [--worker off,on]`
 *
 * @module
 */
import { parseArgs } from "node:util";
import { freePort, round, serverEnv, startServer, statusMiB, stopChild, waitFor200 } from "./_util.ts";
import { pgliteFloor } from "./_floors.ts";
import { PGLITE_SHARED_BUFFERS } from "../core/harness/core.ts";

const { values: args } = parseArgs({
  args: Deno.args,
  options: { rounds: { type: "string", default: "5" }, worker: { type: "string", default: "off" } },
});
const tmp = await Deno.makeTempDir({ prefix: "dutlab-restart-floor-" });
const load = () => Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).map(Number);

async function service(phase: string, worker = "off"): Promise<{ ms: number; rssMiB: number }> {
  const port = freePort();
  const log = `${tmp}/serve-${phase}.log`;
  const t0 = performance.now();
  const env = serverEnv(port, { DUT_DATA_DIR: `${tmp}/data`, DUT_PGLITE_WORKER: worker });
  const { child, logs } = startServer(env, log);
  try {
    const ms = await waitFor200(`http://127.0.0.1:${port}/readyz`, t0, 120_000, child);
    await new Promise((r) => setTimeout(r, 2_000));
    return { ms, rssMiB: statusMiB("VmRSS", child.pid) };
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
  const rows: Array<{
    round: number;
    worker: string;
    load: number[];
    floorMs: number;
    serviceMs: number;
    ratio: number;
    serviceDbOpenMs: number | null;
    floorRssMiB: number;
    serviceRssMiB: number;
  }> = [];
  const workers = args.worker!.split(",");
  for (let i = 0; i < Number(args.rounds); i++) {
    const floor = await pgliteFloor(`${tmp}/data/pglite`, false, PGLITE_SHARED_BUFFERS);
    for (const worker of workers) {
      const s = await service(`r${i}-${worker}`, worker);
      const row = {
        round: i,
        worker,
        load: load(),
        floorMs: round(floor.ms),
        serviceMs: round(s.ms),
        ratio: round(s.ms / floor.ms, 2),
        serviceDbOpenMs: await dbReadyMs(`r${i}-${worker}`),
        floorRssMiB: round(floor.rssMiB),
        serviceRssMiB: round(s.rssMiB),
      };
      console.error(JSON.stringify(row));
      rows.push(row);
    }
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const byWorker = Object.fromEntries(workers.map((w) => {
    const rs = rows.filter((r) => r.worker === w);
    return [w, {
      medianRatio: median(rs.map((r) => r.ratio)),
      medianServiceRssMiB: median(rs.map((r) => r.serviceRssMiB)),
      medianFloorRssMiB: median(rs.map((r) => r.floorRssMiB)),
    }];
  }));
  console.log(JSON.stringify({ byWorker, rows }));
} finally {
  await Deno.remove(tmp, { recursive: true }).catch(() => {});
}
