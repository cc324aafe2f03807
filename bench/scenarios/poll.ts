/**
 * Scenario 1, poll throughput (and the RSS half of scenario 7): N farm devices in a separate process,
 * all due at once, polled by the real worker in a separate service process; the floor is the same
 * requests from a bare node:https client at the same concurrency.
 *
 * @module
 */
import { commandLine, cpuSeconds, drainTo, type Figure, round } from "../_util.ts";
import type { Ctx } from "../main.ts";
import { pgliteTemplate } from "../_db.ts";
import { startFarm } from "../_farm_proc.ts";

interface ServiceResult {
  backend: string;
  n: number;
  concurrency: number;
  polled: number;
  statuses: Record<string, number>;
  errors: string[];
  wallMs: number;
  pollsPerSecond: number;
  p50Ms: number;
  p95Ms: number;
  cpuMsPerPoll: number;
  /** The main thread's share of it (hash workers excluded). */
  mainCpuMsPerPoll: number;
  /** DUT_POLL_WORKERS of the run. */
  hashWorkers: number;
  postgresCpuMs: number | null;
  snapshots: number;
  pinned: number;
  overruns: number;
  rssPeakMiB: number;
  rssBeforeMiB: number;
  /** The second scan of the same devices. */
  steady: {
    wallMs: number;
    polled: number;
    p95Ms: number;
    cpuMsPerPoll: number;
    mainCpuMsPerPoll: number;
    postgresCpuMsPerPoll: number | null;
  };
}
interface FloorResult {
  n: number;
  polled: number;
  failures: number;
  bytes: number;
  wallMs: number;
  pollsPerSecond: number;
  p50Ms: number;
  p95Ms: number;
  cpuMsPerPoll: number;
}

async function child<T>(
  ctx: Ctx,
  args: string[],
  log: string,
  extraEnv: Record<string, string> = {},
): Promise<{ result: T; command: string }> {
  // BENCH_PROFILE_DIR=<dir>: CPU profiles of the service and floor processes, for diagnosis.
  const prof = Deno.env.get("BENCH_PROFILE_DIR");
  // The bench task's lockfile: the service and floor children import bench/_db.ts (`npm:postgres`, test-only),
  // which must not reach deno.lock, the product's lockfile (tests/gate/lockfiles_test.ts).
  args = [args[0]!, "--lock=deno.dev.lock", ...args.slice(1)];
  if (prof) {
    args = [args[0]!, "--cpu-prof", `--cpu-prof-dir=${prof}/${log.replace(/\.log$/, "")}`, ...args.slice(1)];
  }
  const command = commandLine("deno", args, extraEnv);
  // Service processes copy a migrated PGlite data dir made once here (initdb on disk takes seconds).
  const env = { BENCH_PGLITE_TEMPLATE: await pgliteTemplate(), ...extraEnv };
  const c = new Deno.Command(Deno.execPath(), { args, env, stdin: "null", stdout: "piped", stderr: "piped" })
    .spawn();
  const err = drainTo(c.stderr, `${ctx.tmp}/${log}`);
  const out = await new Response(c.stdout).text();
  const status = await c.status;
  const tail = await err;
  const last = out.trim().split("\n").pop() ?? "";
  if (!status.success || !last.startsWith("{")) {
    throw new Error(`${command} failed (${status.code}): ${tail}`);
  }
  return { result: JSON.parse(last) as T, command };
}

export async function run(ctx: Ctx): Promise<Figure[]> {
  // BENCH_POLL_SIZES=1000 (comma-separated) picks other sizes, for diagnosis; the defaults are the issue's.
  const only = Deno.env.get("BENCH_POLL_SIZES")?.split(",").map(Number).filter((n) => n > 0);
  const sizes = only?.length ? only : ctx.quick ? [100] : [100, 1000, 3000];
  // BENCH_POLL_PGLITE=0 leaves PGlite out (diagnosis of the PostgreSQL figures at a size PGlite takes long at).
  const pgliteSizes = Deno.env.get("BENCH_POLL_PGLITE") === "0"
    ? []
    : only?.length
    ? only
    : ctx.quick
    ? [100]
    : [100, 1000];
  const figures: Figure[] = [];
  const max = Math.max(...sizes);
  ctx.log(`starting the device farm (${max} devices)`);
  const template = pgliteTemplate(); // made while the farm starts, not while anything is measured
  const farm = await startFarm(ctx, max);
  await template;
  ctx.log(`farm ready in ${farm.setupMs} ms`);
  const base = { command: ctx.command };
  figures.push({
    ...base,
    scenario: "poll",
    name: "farm start-up (capture + certificates + listeners)",
    value: round(farm.setupMs / 1000, 1),
    unit: "s",
    params: { devices: max },
    note: farm.command,
  });
  try {
    for (const n of sizes) {
      const devFile = `${ctx.tmp}/devices-${n}.jsonl`;
      await Deno.writeTextFile(devFile, farm.devices.slice(0, n).join("\n") + "\n");
      // Floor twice (the best run is kept: a conservative ratio), the service once per backend.
      const floors: Array<{ result: FloorResult; command: string; conns: number }> = [];
      for (let k = 0; k < 2; k++) {
        await farm.stats();
        const r = await child<FloorResult>(ctx, [
          "run",
          "-A",
          "bench/_floor.ts",
          "--devices",
          devFile,
          "--captures",
          farm.captures,
          "--concurrency",
          "64",
        ], `floor-${n}-${k}.log`);
        const s = await farm.stats();
        floors.push({ ...r, conns: s.connections });
        ctx.log(`floor N=${n}: ${round(r.result.wallMs)} ms, ${s.connections} connections`);
      }
      const floor = floors.reduce((a, b) => (b.result.wallMs < a.result.wallMs ? b : a));
      if (!ctx.quick && n === 100) {
        // For the record: node:https's own connection factory, much costlier per connection in Deno.
        const d = await child<FloorResult>(ctx, [
          "run",
          "-A",
          "bench/_floor.ts",
          "--devices",
          devFile,
          "--captures",
          farm.captures,
          "--agent",
          "default",
        ], `floor-${n}-default-agent.log`);
        figures.push({
          scenario: "poll",
          name: "floor with node:https's default agent: CPU per poll (not used for the ratio)",
          value: round(d.result.cpuMsPerPoll, 2),
          unit: "ms",
          params: { n, wallS: round(d.result.wallMs / 1000, 2) },
          command: ctx.command,
          note: d.command,
        });
      }
      const f = floor.result;
      const fp = { n, concurrency: 64, keepAlive: true, runs: floors.map((x) => round(x.result.wallMs)) };
      figures.push(
        {
          ...base,
          scenario: "poll",
          name: `floor: time to send all N devices' requests`,
          value: round(f.wallMs / 1000, 2),
          unit: "s",
          params: fp,
          note: floor.command,
        },
        {
          ...base,
          scenario: "poll",
          name: "floor: polls/s",
          value: round(f.pollsPerSecond),
          unit: "polls/s",
          params: fp,
          note: floor.command,
        },
        {
          ...base,
          scenario: "poll",
          name: "floor: CPU per poll",
          value: round(f.cpuMsPerPoll, 2),
          unit: "ms",
          params: fp,
          note: floor.command,
        },
      );
      const variants: Array<
        { backend: string; extra: string[]; label: string; env?: Record<string, string> }
      > = [
        { backend: "postgres", extra: [], label: "postgres" },
        { backend: "pglite", extra: [], label: "pglite" },
      ];
      // Issue 53: "pglite" is the service's default, PGlite in a Web Worker; beside it, in the main thread.
      if (!ctx.quick && n === 1000) {
        variants.push({
          backend: "pglite",
          extra: [],
          label: PGLITE_MAIN_THREAD,
          env: { DUT_PGLITE_WORKER: "off" },
        });
      }
      // Diagnosis (full mode): what the per-device advisory locks cost on PostgreSQL.
      if (!ctx.quick && n === 1000) {
        variants.push({
          backend: "postgres",
          extra: ["--no-device-locks"],
          label: "postgres, no device locks",
        });
      }
      const mainCpu = new Map<string, number>();
      for (const { backend, extra, label, env } of variants) {
        if (backend === "pglite" && !pgliteSizes.includes(n)) continue;
        await farm.stats();
        const farmCpu0 = cpuSeconds(farm.pid);
        ctx.log(`service N=${n} on ${label}`);
        const { result: r, command } = await child<ServiceResult>(
          ctx,
          [
            "run",
            "-A",
            "bench/_poll_service.ts",
            "--devices",
            devFile,
            "--db",
            backend,
            ...extra,
          ],
          `service-${n}-${label.replace(/\W+/g, "-")}.log`,
          env,
        );
        const farmCpuMs = (cpuSeconds(farm.pid) - farmCpu0) * 1000;
        const s = await farm.stats();
        const p = { n, backend: label, concurrency: r.concurrency };
        mainCpu.set(label, r.mainCpuMsPerPoll);
        if (label === "pglite") figures.push(scanReach(ctx.command, n, r.wallMs));
        const failed = r.polled - (r.statuses.ok ?? 0);
        const note = failed ? `${failed} poll(s) not ok: ${r.errors.join("; ")}` : undefined;
        const ratio = r.wallMs / f.wallMs;
        ctx.log(
          `service N=${n} ${label}: ${round(r.wallMs)} ms (floor ${round(f.wallMs)} ms, ratio ${
            round(ratio, 2)
          }), ` +
            `${s.connections} connections, statuses ${JSON.stringify(r.statuses)}; second scan ${
              round(r.steady.wallMs)
            } ms (ratio ${round(r.steady.wallMs / f.wallMs, 2)}); main-thread CPU/poll ${
              round(r.mainCpuMsPerPoll, 2)
            } / ${round(r.steady.mainCpuMsPerPoll, 2)} ms, all threads ${round(r.cpuMsPerPoll, 2)} / ${
              round(r.steady.cpuMsPerPoll, 2)
            } ms, hash workers ${r.hashWorkers}`,
        );
        figures.push(
          {
            ...base,
            scenario: "poll",
            name: "time to poll all N devices (one scan)",
            value: round(r.wallMs / 1000, 2),
            unit: "s",
            params: p,
            target: n === 1000 ? "1,000 devices inside one 30 s scan period" : undefined,
            pass: n === 1000 ? r.wallMs <= 30_000 && !failed : undefined,
            note: `${command}${note ? ` — ${note}` : ""}`,
          },
          {
            ...base,
            scenario: "poll",
            name: "polls/s",
            value: round(r.pollsPerSecond),
            unit: "polls/s",
            params: p,
            note: command,
          },
          {
            ...base,
            scenario: "poll",
            name: "p95 poll duration (connect, collect, store)",
            value: round(r.p95Ms),
            unit: "ms",
            params: p,
            note: command,
          },
          {
            ...base,
            scenario: "poll",
            name: "service CPU per poll",
            value: round(r.cpuMsPerPoll, 2),
            unit: "ms",
            params: p,
            note: command,
          },
          {
            ...base,
            scenario: "poll",
            name: "service main-thread CPU per poll (first scan; second scan)",
            value: round(r.mainCpuMsPerPoll, 2),
            unit: "ms",
            params: { ...p, hashWorkers: r.hashWorkers, second: round(r.steady.mainCpuMsPerPoll, 2) },
            note: command,
          },
          ...(r.postgresCpuMs !== null
            ? [{
              ...base,
              scenario: "poll",
              name: "PostgreSQL server CPU per poll",
              value: round(r.postgresCpuMs / r.polled, 2),
              unit: "ms",
              params: p,
              note: command,
            }]
            : []),
          {
            ...base,
            scenario: "poll",
            name: "farm (device side) CPU per poll",
            value: round(farmCpuMs / r.polled, 2),
            unit: "ms",
            params: p,
            note: farm.command,
          },
          {
            ...base,
            scenario: "poll",
            name: "ratio service ÷ floor (time to poll all)",
            value: round(ratio, 2),
            unit: "×",
            params: p,
            target: "≤ 1.5",
            pass: ratio <= 1.5,
            note: `${command} vs ${floor.command}`,
          },
          {
            ...base,
            scenario: "poll",
            name: "steady state (second scan, certificates pinned): time to poll all N devices",
            value: round(r.steady.wallMs / 1000, 2),
            unit: "s",
            params: {
              ...p,
              polled: r.steady.polled,
              p95Ms: round(r.steady.p95Ms),
              cpuMsPerPoll: round(r.steady.cpuMsPerPoll, 2),
              postgresCpuMsPerPoll: r.steady.postgresCpuMsPerPoll === null
                ? null
                : round(r.steady.postgresCpuMsPerPoll, 2),
            },
            note: command,
          },
          {
            ...base,
            scenario: "poll",
            name: "ratio service ÷ floor, steady state (second scan)",
            value: round(r.steady.wallMs / f.wallMs, 2),
            unit: "×",
            params: p,
            target: "≤ 1.5",
            pass: r.steady.wallMs / f.wallMs <= 1.5,
            note: `${command} vs ${floor.command}`,
          },
          {
            ...base,
            scenario: "poll",
            name: "ratio service ÷ floor (CPU per poll)",
            value: round(r.cpuMsPerPoll / f.cpuMsPerPoll, 2),
            unit: "×",
            params: p,
            note: command,
          },
          {
            ...base,
            scenario: "poll",
            name: "TLS connections per poll (service; floor)",
            value: round(s.connections / (r.polled + r.steady.polled), 2), // both scans
            unit: "conn/poll",
            params: { ...p, floor: round(floor.conns / f.polled, 2) },
            note: "counted by the farm",
          },
          {
            ...base,
            scenario: "poll",
            name: "polls ok / snapshots stored / certificates pinned",
            value: r.statuses.ok ?? 0,
            unit: "polls",
            params: { ...p, snapshots: r.snapshots, pinned: r.pinned, overruns: r.overruns },
            note,
          },
          {
            ...base,
            scenario: "footprint",
            name: `service RSS while polling ${n} devices (peak; before the scan)`,
            value: round(r.rssPeakMiB),
            unit: "MiB",
            params: { ...p, beforeScanMiB: round(r.rssBeforeMiB) },
            note: command,
          },
        );
      }
      const [lite, pg] = [mainCpu.get("pglite"), mainCpu.get("postgres")];
      if (lite !== undefined && pg !== undefined) figures.push(cpuRatio(ctx.command, n, lite, pg));
      const liteMain = mainCpu.get(PGLITE_MAIN_THREAD);
      if (liteMain !== undefined && pg !== undefined) {
        figures.push(cpuRatio(ctx.command, n, liteMain, pg, " in the main thread"));
      }
    }
  } finally {
    await farm.stop();
  }
  return figures;
}

/** The poll scenario's label (its figures' `backend`) of PGlite in the main thread (`DUT_PGLITE_WORKER=off`). */
const PGLITE_MAIN_THREAD = "pglite, main thread";

/**
 * Issue 53: the service's main-thread CPU per poll in the first scan, PGlite ÷ PostgreSQL, same N; the target
 * is the default's (PGlite in a worker), `where` names a diagnosis beside it.
 */
function cpuRatio(command: string, n: number, lite: number, pg: number, where = ""): Figure {
  const ratio = lite / pg;
  return {
    command,
    scenario: "poll",
    name: `main-thread CPU per poll, first scan, PGlite${where} ÷ PostgreSQL`,
    value: round(ratio, 2),
    unit: "×",
    params: { n, pgliteMs: round(lite, 2), postgresMs: round(pg, 2) },
    ...(where ? {} : { target: "<= 1.3", pass: ratio <= 1.3 }),
  };
}

/** Issue 53: how many devices one 30 s scan reaches on PGlite at the rate of this N's first scan. */
function scanReach(command: string, n: number, wallMs: number): Figure {
  const reach = Math.floor((n * 30_000) / wallMs);
  return {
    command,
    scenario: "poll",
    name: "devices polled inside one 30 s scan at the first scan's rate, embedded",
    value: reach,
    unit: "devices",
    params: { n, backend: "pglite", firstScanS: round(wallMs / 1000, 2) },
    target: ">= 2000",
    pass: reach >= 2000,
    note: "N ÷ the first scan's time × 30 s (a scan of 2,000 devices is not run)",
  };
}
