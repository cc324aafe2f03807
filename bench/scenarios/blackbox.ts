/**
 * Scenario blackbox (issue 34, "Done when"): the figures of snapshot reads, start-up and memory from a
 * black-box run against `deno task serve`, the service started exactly as an operator starts it (the task, from
 * the repository, in its own process group, configured by its environment only), each timing also as a ratio
 * inside the same run:
 *
 * 1. a bare `Deno.serve` script timed to its first 200, then `deno task serve` on an empty PGlite data
 *    directory (or a fresh PostgreSQL schema) timed to its first 200 from /readyz; the ratio (target ≤ 8×);
 * 2. the device farm's 200 devices (bench/_farm.ts, replaying the vendor simulators) registered through
 *    the HTTP API, three manual snapshots of each (`POST /api/admin/dut/devices/{id}/snapshot`, 8 at a time),
 *    the service left idle for 15 s and the resident memory of the server process read: the `deno run -A
 *    server.ts` child of the task runner, found in the task's process group (not the runner's own RSS, given
 *    beside it), with its peak (VmHWM) (target on PGlite: ≤ 150 MiB idle);
 * 3. autocannon (`npx -y autocannon@9.0.0 -c 50`) on the paged device list (`limit=100`, of 200 devices), the
 *    unfiltered snapshot listing (latest 100) and the snapshots of one device and label; each snapshot listing's
 *    requests/s ÷ the paged list's (target ≥ 0.3 with p99 ≤ 100 ms, as the api scenario);
 * 4. SIGTERM to the process group (the time until every process of it has exited), a bare start timed again
 *    and the task restarted on the same data, timed to /readyz; the ratio (target ≤ 6×).
 *
 * The service runs with its defaults (poller on: its scan every 30 s may poll devices during the load). Back
 * ends: PGlite, and PostgreSQL (`DATABASE_URL` with `search_path` on a fresh, migrated schema) in the full run;
 * `--quick`: PGlite only and 3 s instead of 15 s of load per endpoint. `BENCH_BLACKBOX_BACKENDS=pglite,postgres`
 * chooses the back ends.
 *
 * @module
 */
import {
  BARE_SERVE,
  bareStart,
  commandLine,
  type Figure,
  freePort,
  groupProcesses,
  PG_URL,
  round,
  serverEnv,
  startGroup,
  statusMiB,
  stopGroup,
  waitFor200,
} from "../_util.ts";
import { startFarm } from "../_farm_proc.ts";
import { counted, LATEST, loadRead, ONE, oneDevicePath, readRatios } from "../_reads.ts";
import { largestMappings, manualPolls, registerFarmDevices } from "../_idle_polls.ts";
import { type BenchDb, freshDb } from "../_db.ts";
import type { Ctx } from "../main.ts";
import { FLOOR_NOTE, floorFigures, pgliteFloor, pgliteFloorCommand } from "../_floors.ts";

/** Issue 53: the restart of `serve` with `DUT_PGLITE_WORKER=off` (its figures' names begin with it). */
export const MAIN_THREAD_RESTART =
  "restart of `deno task serve` on the same data with PGlite in the main thread";
import { PGLITE_SHARED_BUFFERS } from "../../core/harness/core.ts";

type Backend = "pglite" | "postgres";
type Farm = Awaited<ReturnType<typeof startFarm>>;

const DEVICES = 200;
const POLLS = 3;
const CONNECTIONS = 50;
const IDLE_MS = 15_000;
/** The command, as an operator types it. */
const SERVE = ["task", "serve"];

const PAGED = `GET /api/admin/dut/devices?limit=100 (first page of ${DEVICES} devices)`;

function backendsOf(quick: boolean): Backend[] {
  const env = Deno.env.get("BENCH_BLACKBOX_BACKENDS");
  if (!env) return quick ? ["pglite"] : ["pglite", "postgres"];
  const list = env.split(",").map((s) => s.trim()).filter(Boolean);
  for (const b of list) {
    if (b !== "postgres" && b !== "pglite") {
      throw new Error(`BENCH_BLACKBOX_BACKENDS: unknown back end "${b}"`);
    }
  }
  return list as Backend[];
}

/** A running `deno task serve`: its process group, stopped once (later calls return the first result). */
interface Serve {
  child: Deno.ChildProcess;
  stop(): Promise<number | null>;
}

/** `deno task serve` in its own process group, from the repository. */
function startServe(env: Record<string, string>, logFile: string): Serve {
  const { child, logs } = startGroup([Deno.execPath(), ...SERVE], env, logFile);
  let stopped: Promise<number | null> | null = null;
  return {
    child,
    stop: () => stopped ??= stopAll(child, logs),
  };
}

/**
 * SIGTERM the group; resolves to the ms until no process of it is left (the task runner may exit before the
 * server it started), or null when the group had to be killed after 15 s.
 */
async function stopAll(child: Deno.ChildProcess, logs: Promise<unknown>): Promise<number | null> {
  const t0 = performance.now();
  const leader = await stopGroup(child, 15_000);
  const alive = () => groupProcesses(child.pid).filter((p) => p.state !== "Z");
  let killed = leader === null;
  while (alive().length && performance.now() - t0 < 30_000) {
    if (performance.now() - t0 > 15_000) {
      try {
        Deno.kill(-child.pid, "SIGKILL");
      } catch { /* gone */ }
      killed = true;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  await logs;
  return killed ? null : performance.now() - t0;
}

/** The server process under the task runner: the `deno run … server.ts` child in the task's process group. */
async function serverProcess(serve: Serve): Promise<number> {
  const t0 = performance.now();
  while (performance.now() - t0 < 5_000) {
    const p = groupProcesses(serve.child.pid).find((p) =>
      p.ppid === serve.child.pid && p.cmdline.includes("run") && p.cmdline.includes("server.ts")
    );
    if (p) return p.pid;
    await new Promise((r) => setTimeout(r, 20));
  }
  const seen = groupProcesses(serve.child.pid).map((p) => `${p.pid}/${p.ppid}: ${p.cmdline.join(" ")}`);
  throw new Error(`No \`deno run … server.ts\` under the task runner ${serve.child.pid}: ${seen.join("; ")}`);
}

/** The loaded endpoints (name, path); one device and label is the newest snapshot's. */
async function endpoints(base: string): Promise<[string, string][]> {
  return [
    [PAGED, "/api/admin/dut/devices?limit=100"],
    [LATEST, "/api/admin/dut/snapshots"],
    [ONE, await oneDevicePath(base)],
  ];
}

export async function run(ctx: Ctx): Promise<Figure[]> {
  const bareScript = `${ctx.tmp}/bare_serve.ts`;
  await Deno.writeTextFile(bareScript, BARE_SERVE);
  const farm = await startFarm(ctx, DEVICES);
  ctx.log(`farm of ${DEVICES} devices ready in ${round(farm.setupMs)} ms`);
  const figures: Figure[] = [];
  try {
    for (const backend of backendsOf(ctx.quick)) {
      figures.push(...await runBackend(ctx, backend, farm, bareScript));
    }
  } finally {
    await farm.stop();
  }
  return figures;
}

async function runBackend(
  ctx: Ctx,
  backend: Backend,
  farm: Farm,
  bareScript: string,
): Promise<Figure[]> {
  const seconds = ctx.quick ? 3 : 15;
  let db: BenchDb | null = null;
  let dir: string | null = null;
  let where: Record<string, string>;
  /** The data's place as the recorded command line shows it, at the cold start and at the restart. */
  let shownWhere: (phase: "cold" | "restart") => Record<string, string>;
  if (backend === "postgres") {
    db = await freshDb("postgres");
    where = { DATABASE_URL: `${PG_URL}?search_path=${db.where}` };
    shownWhere = (phase) => ({
      DATABASE_URL: `${PG_URL}?search_path=${
        phase === "cold" ? "<fresh migrated schema>" : "<the same schema>"
      }`,
    });
  } else {
    dir = await Deno.makeTempDir({ dir: ctx.tmp, prefix: "data-" });
    where = { DUT_DATA_DIR: dir };
    shownWhere = (phase) => ({ DUT_DATA_DIR: phase === "cold" ? "<empty temp dir>" : "<the same data dir>" });
  }
  const figures: Figure[] = [];
  const serves: Serve[] = [];
  try {
    const launch = (phase: "cold" | "restart", extra: Record<string, string> = {}) => {
      const port = freePort();
      const env = serverEnv(port, { ...where, ...extra });
      const command = commandLine("deno", SERVE, {
        HOST: env.HOST!,
        PORT: env.PORT!,
        ...shownWhere(phase),
        ...extra,
        ADMIN_TOKEN: "<token>",
        DUT_CRED_ENC_KEY: "<key>",
        DUT_REPORT_SIGNING_KEY: "<key>",
        DUT_PDF_SIGNING_CERT: "<pem>",
        DUT_PDF_SIGNING_KEY: "<pem>",
      });
      const t0 = performance.now();
      const serve = startServe(
        env,
        `${ctx.tmp}/serve-${backend}-${phase}${extra.DUT_PGLITE_WORKER ?? ""}.log`,
      );
      serves.push(serve);
      return { serve, t0, base: `http://127.0.0.1:${port}`, command };
    };
    const bareCommand = "deno run -A bare_serve.ts";
    const bareNote = "one Deno.serve answering 200, timed just before the start it divides";

    // 1. Cold start.
    const bareCold = await bareStart(bareScript);
    // The PGlite floor (issue 53): PGlite's own first open of a data dir made from the same template.
    const floorCold = backend === "pglite" ? await pgliteFloor(`${ctx.tmp}/floor-cold-data`, true) : null;
    if (floorCold) await Deno.remove(`${ctx.tmp}/floor-cold-data`, { recursive: true });
    const cold = launch("cold");
    const coldMs = await waitFor200(`${cold.base}/readyz`, cold.t0, 120_000, cold.serve.child);
    ctx.log(
      `${backend} cold start ${round(coldMs)} ms (bare ${round(bareCold)}, floor ${
        round(floorCold?.ms ?? NaN)
      } ms)`,
    );
    const serverPid = await serverProcess(cold.serve);
    /** A figure of this back end; `command` defaults to the service's command line. */
    const fig = (f: Omit<Figure, "scenario" | "command"> & { command?: string }): Figure => ({
      ...f,
      scenario: "blackbox",
      command: f.command ?? cold.command,
      params: { backend, ...f.params },
      note: f.note ?? `bench: ${ctx.command}`,
    });
    const coldRatio = coldMs / bareCold;
    figures.push(
      fig({
        name: "bare Deno.serve script to first 200, before the cold start",
        value: round(bareCold),
        unit: "ms",
        command: bareCommand,
        note: bareNote,
      }),
      fig({
        name: "cold start of `deno task serve` to first 200 from /readyz",
        value: round(coldMs),
        unit: "ms",
      }),
      fig({
        name: "cold start ÷ bare Deno.serve start",
        value: round(coldRatio, 2),
        unit: "×",
        ...(backend === "postgres" ? { target: "<= 8", pass: coldRatio <= 8 } : {}),
      }),
    );
    if (floorCold) figures.push(...floorFigures(fig, "cold", coldMs, floorCold.ms));

    // 2. 200 devices registered through the API, 3 manual snapshots each; idle; memory of the server process.
    const t1 = performance.now();
    const ids = await registerFarmDevices(cold.base, farm.devices);
    ctx.log(`${backend}: ${ids.length} devices registered in ${round(performance.now() - t1)} ms`);
    const t2 = performance.now();
    const failed = await manualPolls(ctx, cold.base, ids, POLLS);
    const pollSeconds = (performance.now() - t2) / 1000;
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const rss = statusMiB("VmRSS", serverPid);
    const hwm = statusMiB("VmHWM", serverPid);
    const runnerRss = statusMiB("VmRSS", cold.serve.child.pid);
    ctx.log(
      `${backend}: server ${serverPid} idle RSS ${round(rss)} MiB, peak ${round(hwm)} MiB; ` +
        `task runner ${cold.serve.child.pid} ${round(runnerRss)} MiB`,
    );
    ctx.log(`largest resident mappings: ${largestMappings(serverPid).join("; ")}`);
    const memParams = {
      devices: ids.length,
      polls: POLLS,
      idleSeconds: IDLE_MS / 1000,
      rssOf: "the `deno run -A server.ts` child of the task runner (its process group, /proc/<pid>/status)",
      measured: { failedPolls: failed, pollSeconds: round(pollSeconds), taskRunnerRssMiB: round(runnerRss) },
    };
    const memNote = `${ctx.command}; ${DEVICES} farm devices registered through the API, ${POLLS} manual ` +
      `snapshots each (8 at a time), then ${IDLE_MS / 1000} s idle`;
    figures.push(
      fig({
        name: `idle server RSS after ${DEVICES} devices × ${POLLS} manual polls`,
        value: round(rss),
        unit: "MiB",
        params: memParams,
        note: memNote,
      }),
      fig({
        name: `peak server RSS (VmHWM) through ${DEVICES} devices × ${POLLS} manual polls`,
        value: round(hwm),
        unit: "MiB",
        params: memParams,
        note: memNote,
      }),
      fig({
        name: "idle RSS of the task runner itself (`deno task serve`, beside the server)",
        value: round(runnerRss),
        unit: "MiB",
        params: { ...memParams, rssOf: "the process group's leader, the task runner (/proc/<pid>/status)" },
        note: memNote,
      }),
    );
    if (failed) ctx.log(`${backend}: ${failed} manual polls failed`);
    if (floorCold) {
      const over = rss - floorCold.rssMiB;
      figures.push(
        fig({
          name: "PGlite floor: RSS idle after one query",
          value: round(floorCold.rssMiB),
          unit: "MiB",
          command: pgliteFloorCommand(true),
          note: FLOOR_NOTE,
        }),
        fig({
          name: `idle server RSS after ${DEVICES} devices × ${POLLS} manual polls − PGlite floor RSS`,
          value: round(over),
          unit: "MiB",
          params: memParams,
          target: "<= 0 MiB",
          pass: over <= 0,
        }),
      );
    }

    // 3. Reads under load: autocannon, 50 connections, one endpoint after the other.
    const rps = new Map<string, { value: number; p99: number }>();
    await farm.stats(); // resets the farm's counters: what the service's own poller asks during the load
    for (const [name, path] of await endpoints(cold.base)) {
      const { ac, command, bytes } = await loadRead(`${cold.base}${path}`, seconds, CONNECTIONS);
      ctx.log(
        `${backend} ${path}: ${ac.requests.average} req/s, p99 ${ac.latency.p99} ms, ${ac.non2xx} non-2xx, ` +
          `${ac.errors} errors`,
      );
      rps.set(name, { value: ac.requests.average, p99: ac.latency.p99 });
      const params = {
        connections: CONNECTIONS,
        seconds,
        responseBytes: bytes,
        measured: { ...counted(ac), p50: ac.latency.p50 },
      };
      const note = `server: ${cold.command}; bench: ${ctx.command}`;
      figures.push(
        fig({
          name: `${name}: requests/s`,
          value: round(ac.requests.average),
          unit: "req/s",
          params,
          command,
          note,
        }),
        fig({
          name: `${name}: p99 latency`,
          value: round(ac.latency.p99),
          unit: "ms",
          params,
          command,
          note,
        }),
      );
    }
    const farmDuringLoad = (await farm.stats()).requests;
    ctx.log(`${backend}: the service's poller sent ${farmDuringLoad} requests to the farm during the load`);
    figures.push(
      ...readRatios({
        scenario: "blackbox",
        rps,
        paged: PAGED,
        reads: [[LATEST, "latest 100"], [ONE, "one device and label"]],
        params: { backend, connections: CONNECTIONS, seconds },
        measured: { farmRequestsDuringLoad: farmDuringLoad },
        command: cold.command,
        log: (line) => ctx.log(`${backend} ${line}`),
      }).map((f) => ({ ...f, note: `bench: ${ctx.command}` })),
    );

    // 4. SIGTERM to the process group, then a restart on the same data.
    // Let the requests autocannon left in flight finish first (as the api scenario does).
    await new Promise((r) => setTimeout(r, 3000));
    const exitMs = await cold.serve.stop();
    ctx.log(
      `${backend}: process group gone ${
        exitMs === null ? "only after SIGKILL" : `${round(exitMs)} ms`
      } after SIGTERM`,
    );
    figures.push(fig({
      name: "process group of `deno task serve` gone after SIGTERM (after the load)",
      value: exitMs === null ? null : round(exitMs),
      unit: "ms",
      note: exitMs === null ? "did not exit within 15 s: SIGKILL" : undefined,
    }));
    const bareRestart = await bareStart(bareScript);
    // The PGlite floor opens the service's own PGlite directory (`$DUT_DATA_DIR/pglite`), then the service.
    const floorRestart = dir ? await pgliteFloor(`${dir}/pglite`, false, PGLITE_SHARED_BUFFERS) : null;
    const again = launch("restart");
    const restartMs = await waitFor200(`${again.base}/readyz`, again.t0, 120_000, again.serve.child);
    ctx.log(
      `${backend} restart ${round(restartMs)} ms (bare ${round(bareRestart)}, floor ${
        floorRestart?.ms ?? "—"
      } ms)`,
    );
    const restartRatio = restartMs / bareRestart;
    figures.push(
      fig({
        name: "bare Deno.serve script to first 200, before the restart",
        value: round(bareRestart),
        unit: "ms",
        command: bareCommand,
        note: bareNote,
      }),
      fig({
        name: "restart of `deno task serve` on the same data to first 200 from /readyz",
        value: round(restartMs),
        unit: "ms",
        command: again.command,
      }),
      fig({
        name: "restart ÷ bare Deno.serve start",
        value: round(restartRatio, 2),
        unit: "×",
        ...(backend === "postgres" ? { target: "<= 6", pass: restartRatio <= 6 } : {}),
        command: again.command,
      }),
    );
    if (floorRestart) {
      figures.push(
        ...floorFigures((f) => fig({ command: again.command, ...f }), "restart", restartMs, floorRestart.ms),
      );
    }
    await again.serve.stop();
    if (dir) {
      // Issue 53: the default runs PGlite in its worker, which opens early while the service loads
      // (runtime/early_open.ts); beside it, the same restart with PGlite in the main thread, against a floor
      // measured just before it.
      const floorM = await pgliteFloor(`${dir}/pglite`, false, PGLITE_SHARED_BUFFERS);
      const m = launch("restart", { DUT_PGLITE_WORKER: "off" });
      const mMs = await waitFor200(`${m.base}/readyz`, m.t0, 120_000, m.serve.child);
      ctx.log(
        `${backend} restart, PGlite in the main thread, ${round(mMs)} ms (floor ${round(floorM.ms)} ms)`,
      );
      figures.push(
        fig({
          name: `${MAIN_THREAD_RESTART} to first 200 from /readyz`,
          value: round(mMs),
          unit: "ms",
          command: m.command,
        }),
        ...floorFigures(
          (f) => fig({ command: m.command, ...f }),
          "restart",
          mMs,
          floorM.ms,
          MAIN_THREAD_RESTART,
        ),
      );
      await m.serve.stop();
    }
    return figures;
  } finally {
    for (const s of serves) await s.stop();
    if (db) await db.close();
    if (dir) await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
