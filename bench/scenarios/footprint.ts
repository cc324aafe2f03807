/**
 * Scenario 7, footprint: cold start of `deno run -A server.ts` on an empty PGlite data directory to the
 * first 200 from /readyz (the shipped database template unpacked, secrets generated), a restart on the same
 * directory, and the resident memory of the idle server after each; then the same two starts through
 * `deno task serve` and through the README's own command, `npx -y deno@2.9.6 task serve` (run in the
 * repository, so the project's `.npmrc` applies), to state what the wrappers cost (issue 33 point 7). The RSS while polling is measured by the poll scenario.
 *
 * Issue 34 point 5: every start is also divided by the start of a bare `Deno.serve` script (the same
 * `deno run -A`, from the repository, to its first 200), timed just before it, so the ratio holds on a busy
 * machine; and the idle RSS after 200 farm devices × 3 manual polls on PGlite (bench/_idle_polls.ts).
 * `BENCH_FOOTPRINT=run` limits the scenario to the plain process (skips the wrappers), for diagnosis.
 *
 * @module
 */
import {
  BARE_SERVE,
  bareStart,
  commandLine,
  type Figure,
  freePort,
  mean,
  round,
  startGroup,
  startServer,
  statusMiB,
  stopChild,
  stopGroup,
  waitFor200,
} from "../_util.ts";
import { idleAfterPolls } from "../_idle_polls.ts";
import type { Ctx } from "../main.ts";

/** How the service is started: the plain process, the task, and the README's own command (issue 33 point 7). */
const COMMANDS = [
  { key: "run", cmd: "deno", args: ["run", "-A", "server.ts"] },
  { key: "task", cmd: "deno", args: ["task", "serve"] },
  { key: "readme", cmd: "npx", args: ["-y", "deno@2.9.6", "task", "serve"] },
] as const;

/**
 * A wrapped command (npx → node → deno task → deno) in its own process group, so that stopping it stops every
 * layer; the plain process is started as every other scenario starts it.
 */
function start(c: typeof COMMANDS[number], env: Record<string, string>, logFile: string) {
  if (c.key === "run") return startServer(env, logFile);
  return startGroup([c.key === "task" ? Deno.execPath() : c.cmd, ...c.args], env, logFile);
}

async function stop(c: typeof COMMANDS[number], child: Deno.ChildProcess): Promise<void> {
  if (c.key === "run") await stopChild(child, 15_000);
  else await stopGroup(child, 15_000);
}

export async function run(ctx: Ctx): Promise<Figure[]> {
  const reps = ctx.quick ? 1 : 3;
  const figures: Figure[] = [];
  const bareScript = `${ctx.tmp}/bare_serve.ts`;
  await Deno.writeTextFile(bareScript, BARE_SERVE);
  const only = Deno.env.get("BENCH_FOOTPRINT");
  for (const c of COMMANDS.filter((c) => !only || c.key === only)) {
    const bare: number[] = [];
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
          command = commandLine(c.cmd, [...c.args], { ...env, DUT_DATA_DIR: "<empty temp dir>" });
          bare.push(await bareStart(bareScript));
          const t0 = performance.now();
          const { child, logs } = start(c, env, `${ctx.tmp}/server-${c.key}-${k}-${phase}.log`);
          try {
            const ms = await waitFor200(`http://127.0.0.1:${port}/readyz`, t0, 120_000, child);
            (phase === "cold" ? cold : warm).push(ms);
            if (c.key === "run") {
              await new Promise((r) => setTimeout(r, 1000));
              (phase === "cold" ? rss : rssRestart).push(statusMiB("VmRSS", child.pid));
            }
            ctx.log(`${c.key} ${phase} start ${k + 1}: ${round(ms)} ms`);
          } finally {
            await stop(c, child);
            await logs;
          }
        }
      } finally {
        await Deno.remove(dir, { recursive: true }).catch(() => {});
      }
    }
    const base = { scenario: "footprint", command: ctx.command, note: command };
    const via = c.key === "run" ? "" : ` via \`${c.cmd} ${c.args.join(" ")}\``;
    figures.push(
      {
        ...base,
        name: `cold start to first 200 from /readyz (empty PGlite data dir)${via}`,
        value: round(Math.min(...cold)),
        unit: "ms",
        params: { runs: cold.map((x) => round(x)), mean: round(mean(cold)) },
      },
      {
        ...base,
        name: `restart to first 200 from /readyz (same PGlite data dir)${via}`,
        value: round(Math.min(...warm)),
        unit: "ms",
        params: { runs: warm.map((x) => round(x)), mean: round(mean(warm)) },
      },
    );
    // Each start over the bare script's start timed just before it; the median of the ratios.
    const ratios = (xs: number[], first: number) =>
      xs.map((x, i) => x / bare[2 * i + first]!).sort((a, b) => a - b);
    const median = (xs: number[]) => xs[Math.floor(xs.length / 2)]!;
    figures.push(
      {
        ...base,
        name: `bare Deno.serve script to first 200${via}`,
        value: round(Math.min(...bare)),
        unit: "ms",
        params: { runs: bare.map((x) => round(x)), mean: round(mean(bare)) },
        note: "deno run -A bare_serve.ts (one Deno.serve answering 200), timed before each start",
      },
      {
        ...base,
        name: `cold start ÷ bare Deno.serve start${via}`,
        value: round(median(ratios(cold, 0))),
        unit: "×",
        params: { runs: ratios(cold, 0).map((x) => round(x)) },
      },
      {
        ...base,
        name: `restart ÷ bare Deno.serve start${via}`,
        value: round(median(ratios(warm, 1))),
        unit: "×",
        params: { runs: ratios(warm, 1).map((x) => round(x)) },
      },
    );
    if (c.key === "run") {
      figures.push(
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
      );
    }
  }
  if (!only || only === "run") figures.push(...await idleAfterPolls(ctx, 200, 3));
  return figures;
}
