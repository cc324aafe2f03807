/**
 * Scenario 7, footprint: cold start of `deno run -A server.ts` on an empty PGlite data directory to the
 * first 200 from /readyz (the shipped database template unpacked, secrets generated), a restart on the same
 * directory, and the resident memory of the idle server after each. The RSS while polling is measured by the poll scenario.
 *
 * @module
 */
import {
  commandLine,
  type Figure,
  freePort,
  mean,
  round,
  startServer,
  statusMiB,
  stopChild,
  waitFor200,
} from "../_util.ts";
import type { Ctx } from "../main.ts";

export async function run(ctx: Ctx): Promise<Figure[]> {
  const reps = ctx.quick ? 1 : 3;
  const cold: number[] = [];
  const warm: number[] = [];
  const rss: number[] = [];
  const rssRestart: number[] = [];
  let command = "";
  for (let k = 0; k < reps; k++) {
    const dir = await Deno.makeTempDir({ prefix: "dutlab-bench-cold-" });
    try {
      for (const phase of ["cold", "restart"] as const) {
        const port = freePort();
        const env = { DUT_DATA_DIR: dir, HOST: "127.0.0.1", PORT: String(port) };
        command = commandLine("deno", ["run", "-A", "server.ts"], {
          ...env,
          DUT_DATA_DIR: "<empty temp dir>",
        });
        const t0 = performance.now();
        const { child, logs } = startServer(env, `${ctx.tmp}/server-${k}-${phase}.log`);
        try {
          const ms = await waitFor200(`http://127.0.0.1:${port}/readyz`, t0, 120_000, child);
          (phase === "cold" ? cold : warm).push(ms);
          await new Promise((r) => setTimeout(r, 1000));
          (phase === "cold" ? rss : rssRestart).push(statusMiB("VmRSS", child.pid));
          ctx.log(`${phase} start ${k + 1}: ${round(ms)} ms`);
        } finally {
          await stopChild(child, 15_000);
          await logs;
        }
      }
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  }
  const base = { scenario: "footprint", command: ctx.command, note: command };
  return [
    {
      ...base,
      name: "cold start to first 200 from /readyz (empty PGlite data dir)",
      value: round(Math.min(...cold)),
      unit: "ms",
      params: { runs: cold.map((x) => round(x)), mean: round(mean(cold)) },
    },
    {
      ...base,
      name: "restart to first 200 from /readyz (same PGlite data dir)",
      value: round(Math.min(...warm)),
      unit: "ms",
      params: { runs: warm.map((x) => round(x)), mean: round(mean(warm)) },
    },
    {
      ...base,
      name: "idle server RSS after a cold start (PGlite)",
      value: round(mean(rss)),
      unit: "MiB",
      params: { runs: rss.map((x) => round(x)) },
    },
    {
      ...base,
      name: "idle server RSS after a restart (PGlite)",
      value: round(mean(rssRestart)),
      unit: "MiB",
      params: { runs: rssRestart.map((x) => round(x)) },
    },
  ];
}
