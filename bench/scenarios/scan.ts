/**
 * Scenario scan (issue 53): p99 of the paged device list (`GET /api/admin/dut/devices?limit=100`, 10
 * connections) during the poll worker's first scan of N farm devices ÷ the same load on the idle service,
 * embedded (PGlite), with PGlite in the main thread (`DUT_PGLITE_WORKER=off`) and in a Web Worker (`on`),
 * rounds interleaved against one device farm.
 *
 * The N devices are registered first with the poller off (`DUT_API_POLLER_DISABLE=1`, through the HTTP API),
 * so that no device is polled while they are registered; the service stops and each round starts it again on
 * a copy of that data directory with the poller on: its first scan finds all N due at once. The load starts
 * at the first 200 from `/readyz`; the scan's window is read from the polls counter of `/metrics` (every 250
 * ms): from the first read counting a poll to the read counting N. Requests started inside it count as
 * "during the scan"; 5 s of the same load 1 s after it as "idle". `pollsBeforeLoad` in a figure's note says how
 * many polls were counted at the load's start.
 *
 * N = 300 and 1,000 (`--quick`: 300, one round); `BENCH_SCAN_DEVICES=300,1000`, `BENCH_SCAN_ROUNDS=2` and
 * `BENCH_SCAN_WORKER=off,on` choose. The figure per N and mode is the median over rounds of the ratio, with
 * the rounds' ratios and both p99s in its note; the machine's load (1 min) at each round's start is there too.
 *
 * @module
 */
import {
  type Figure,
  freePort,
  pct,
  serverEnv,
  startServer,
  stopChild,
  TOKEN,
  waitFor200,
} from "../_util.ts";
import { startFarm } from "../_farm_proc.ts";
import { registerFarmDevices } from "../_idle_polls.ts";
import type { Ctx } from "../main.ts";

const headers = { authorization: `Bearer ${TOKEN}` };
const list = (v: string | undefined, d: string) => (v ?? d).split(",").map((s) => s.trim()).filter(Boolean);

/** 10 connections loading the paged list until `until()`; each request's start (epoch ms) and latency. */
async function load(base: string, until: () => boolean): Promise<Array<[number, number]>> {
  const out: Array<[number, number]> = [];
  await Promise.all(Array.from({ length: 10 }, async () => {
    while (!until()) {
      const t = performance.now();
      const at = Date.now();
      const r = await fetch(`${base}/api/admin/dut/devices?limit=100`, { headers });
      await r.arrayBuffer();
      if (r.status !== 200) throw new Error(`paged list: ${r.status}`);
      out.push([at, performance.now() - t]);
    }
  }));
  return out;
}

/** The service's polls so far (the sum of `dutlab_polls_total`). */
async function polled(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`, { headers })).text();
  let sum = 0;
  for (const m of text.matchAll(/^dutlab_polls_total\{[^}]*\} (\d+)$/gm)) sum += Number(m[1]);
  return sum;
}

const load1 = () => Number(Deno.readTextFileSync("/proc/loadavg").split(" ")[0]);

/** Starts `server.ts` on `dir` with `extra`; its base URL and stop. */
async function serve(ctx: Ctx, dir: string, extra: Record<string, string>, logName: string) {
  const port = freePort();
  const env = serverEnv(port, { DUT_DATA_DIR: dir, DUT_LOG_LEVEL: "info", DUT_LOG_FORMAT: "json", ...extra });
  const { child, logs } = startServer(env, `${ctx.tmp}/${logName}.log`);
  const base = `http://127.0.0.1:${port}`;
  await waitFor200(`${base}/readyz`, performance.now(), 120_000, child);
  return {
    base,
    stop: async () => {
      await stopChild(child);
      await logs.catch(() => {});
    },
  };
}

/** One round: a copy of `seed`, the service with the poller on, the load during its first scan and after. */
async function round(ctx: Ctx, seed: string, n: number, worker: string, r: number) {
  const dir = `${ctx.tmp}/data-${n}-${worker}-${r}`;
  await new Deno.Command("cp", { args: ["-a", seed, dir] }).output();
  const loadAvg = load1();
  const svc = await serve(
    ctx,
    dir,
    { DUT_PGLITE_WORKER: worker, DUT_POLL_SCAN_SECONDS: "30" },
    `serve-${n}-${worker}-${r}`,
  );
  try {
    let scanned = false;
    let first = Infinity;
    let last = Infinity;
    let atStart = -1;
    const watcher = (async () => {
      const t0 = performance.now();
      while (performance.now() - t0 < 300_000) {
        const c = await polled(svc.base);
        if (atStart < 0) atStart = c;
        if (c > 0 && first === Infinity) first = Date.now();
        if (c >= n) break;
        await new Promise((s) => setTimeout(s, 250));
      }
    })().finally(() => {
      last = Date.now();
      scanned = true;
    });
    watcher.catch(() => {}); // awaited below, after the load
    const during = await load(svc.base, () => scanned);
    await watcher;
    const idleFrom = Date.now() + 1000;
    await new Promise((s) => setTimeout(s, 1000));
    const t1 = performance.now();
    const idle = await load(svc.base, () => performance.now() - t1 > 5_000);
    const inScan = during.filter(([at]) => at >= first && at <= last).map(([, ms]) => ms);
    const idleMs = idle.filter(([at]) => at >= idleFrom).map(([, ms]) => ms);
    return {
      load: loadAvg,
      pollsBeforeLoad: atStart,
      scanS: (last - first) / 1000,
      duringReqs: inScan.length,
      duringP99: pct(inScan, 99),
      idleReqs: idleMs.length,
      idleP99: pct(idleMs, 99),
      ratio: pct(inScan, 99) / pct(idleMs, 99),
    };
  } catch (e) {
    await svc.stop();
    const log = await Deno.readTextFile(`${ctx.tmp}/serve-${n}-${worker}-${r}.log`).catch(() => "");
    ctx.log(`scan: the service's log ends:\n${log.slice(-3000)}`);
    throw e;
  } finally {
    await svc.stop();
    // BENCH_SCAN_LOGS=<dir>: keep the service's logs there, for diagnosis.
    const keep = Deno.env.get("BENCH_SCAN_LOGS");
    if (keep) {
      await Deno.copyFile(
        `${ctx.tmp}/serve-${n}-${worker}-${r}.log`,
        `${keep}/serve-${n}-${worker}-${r}.log`,
      );
    }
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const r1 = (x: number) => Math.round(x * 10) / 10;

export async function run(ctx: Ctx): Promise<Figure[]> {
  const sizes = list(Deno.env.get("BENCH_SCAN_DEVICES"), ctx.quick ? "300" : "300,1000").map(Number);
  const rounds = Number(Deno.env.get("BENCH_SCAN_ROUNDS") ?? (ctx.quick ? 1 : 2));
  const modes = list(Deno.env.get("BENCH_SCAN_WORKER"), "off,on");
  const farm = await startFarm(ctx, Math.max(...sizes));
  const figures: Figure[] = [];
  try {
    for (const n of sizes) {
      // The devices, registered once with the poller off; every round starts from a copy.
      const seed = `${ctx.tmp}/seed-${n}`;
      const reg = await serve(ctx, seed, { DUT_API_POLLER_DISABLE: "1" }, `register-${n}`);
      try {
        await registerFarmDevices(reg.base, farm.devices.slice(0, n));
      } finally {
        await reg.stop();
      }
      ctx.log(`scan: ${n} devices registered`);
      const rows: Record<string, Awaited<ReturnType<typeof round>>[]> = {};
      for (let r = 0; r < rounds; r++) {
        for (const worker of modes) {
          const row = await round(ctx, seed, n, worker, r);
          ctx.log(`scan: n=${n} worker=${worker} round ${r}: ${JSON.stringify(row)}`);
          (rows[worker] ??= []).push(row);
        }
      }
      for (const worker of modes) {
        const rs = rows[worker]!;
        const ratio = median(rs.map((x) => x.ratio));
        figures.push({
          scenario: "scan",
          name: "paged device list p99 during the first scan ÷ idle",
          value: Math.round(ratio * 100) / 100,
          unit: "×",
          params: { n, backend: "pglite", pgliteWorker: worker },
          target: "<= 2",
          pass: ratio <= 2,
          command: ctx.command,
          note:
            `median of ${rs.length} round(s); per round p99 during ÷ idle (ms), scan s, requests during, ` +
            `polls before the load, load: ` +
            rs.map((x) =>
              `${r1(x.duringP99)} ÷ ${r1(x.idleP99)} = ${x.ratio.toFixed(2)} (${
                r1(x.scanS)
              } s, ${x.duringReqs} req, ` +
              `${x.pollsBeforeLoad} before, load ${x.load})`
            ).join("; "),
        });
      }
    }
  } finally {
    await farm.stop();
  }
  return figures;
}
