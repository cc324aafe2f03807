/**
 * Issue 53: p99 of the paged device list (`GET /api/admin/dut/devices?limit=100`, 10 connections) during the
 * poll worker's first scan of N farm devices ÷ on the idle service, embedded, with PGlite in the main thread
 * (`DUT_PGLITE_WORKER=off`) and in a Web Worker (`on`), in interleaved rounds against one device farm. The
 * scan's window is read from the service's polls counter (`/metrics`, every 250 ms); requests started inside
 * it count as "during the scan", and 5 s of the same load after it as "idle". The scan period (third argument,
 * default 30 s) is longer than the registration takes, so the scan after it finds all N devices due at once
 * (`pollsBeforeLoad` says how many polls ran before the load started: 0 when so).
 *
 *     deno run -A --lock=deno.dev.lock bench/micro_paged_during_scan.ts 300 2 30   # N devices, rounds, scan s
 *
 * @module
 */
import { startFarm } from "./_farm_proc.ts";
import { freePort, pct, serverEnv, TOKEN, waitFor200 } from "./_util.ts";
import { registerFarmDevices } from "./_idle_polls.ts";

const n = Number(Deno.args[0] ?? 300);
const rounds = Number(Deno.args[1] ?? 2);
// The scan period: longer than registering the devices takes, so the scan after it finds all N due at once.
const scanSeconds = Deno.args[2] ?? "30";
const tmp = await Deno.makeTempDir({ prefix: "h53-paged-" });
const ctx = { quick: true, tmp, log: (m: string) => console.error(m), command: "paged" };
const farm = await startFarm(ctx, n);
const headers = { authorization: `Bearer ${TOKEN}` };

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

for (let r = 0; r < rounds; r++) {
  for (const worker of ["off", "on"]) {
    const dir = await Deno.makeTempDir({ prefix: "h53-paged-data-" });
    const port = freePort();
    const logFile = `${tmp}/serve-${r}-${worker}.log`;
    const env = serverEnv(port, {
      DUT_DATA_DIR: dir,
      DUT_PGLITE_WORKER: worker,
      DUT_POLL_SCAN_SECONDS: scanSeconds,
      DUT_LOG_LEVEL: "info",
      DUT_LOG_FORMAT: "json",
    });
    const file = await Deno.open(logFile, { write: true, create: true, truncate: true });
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "server.ts"],
      env,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const logs = child.stderr.pipeTo(file.writable);
    const base = `http://127.0.0.1:${port}`;
    await waitFor200(`${base}/readyz`, performance.now(), 120_000, child);
    const load1 = (await Deno.readTextFile("/proc/loadavg")).split(" ")[0];
    await registerFarmDevices(base, farm.devices.slice(0, n));
    // Load until every device has been polled once (the polls counter of /metrics, read every 250 ms), then
    // 5 s more. The scan's window: from the first read that counts a poll to the read that counts all.
    const polled = async (): Promise<number> => {
      const text = await (await fetch(`${base}/metrics`, { headers })).text();
      let sum = 0;
      for (const m of text.matchAll(/^dutlab_polls_total\{[^}]*\} (\d+)$/gm)) sum += Number(m[1]);
      return sum;
    };
    let scanned = false;
    let first = Infinity;
    let last = Infinity;
    let atStart = -1;
    const watcher = (async () => {
      const t0 = performance.now();
      for (let k = 0; performance.now() - t0 < 300_000; k++) {
        const c = await polled();
        if (atStart < 0) atStart = c;
        if (c > 0 && first === Infinity) first = Date.now();
        if (c >= n) break;
        await new Promise((s) => setTimeout(s, 250));
      }
      last = Date.now();
      scanned = true;
    })();
    const during = await load(base, () => scanned);
    await watcher;
    const idleFrom = Date.now() + 1000;
    await new Promise((s) => setTimeout(s, 1000));
    const t1 = performance.now();
    const idle = await load(base, () => performance.now() - t1 > 5_000);
    const inScan = during.filter(([at]) => at >= first && at <= last).map(([, ms]) => ms);
    const idleMs = idle.filter(([at]) => at >= idleFrom && at > last).map(([, ms]) => ms);
    const row = {
      round: r,
      worker,
      n,
      load: load1,
      pollsBeforeLoad: atStart,
      scanS: +((last - first) / 1000).toFixed(1),
      duringReqs: inScan.length,
      duringP50: +pct(inScan, 50).toFixed(1),
      duringP99: +pct(inScan, 99).toFixed(1),
      idleReqs: idleMs.length,
      idleP50: +pct(idleMs, 50).toFixed(1),
      idleP99: +pct(idleMs, 99).toFixed(1),
      ratioP99: +(pct(inScan, 99) / pct(idleMs, 99)).toFixed(2),
    };
    console.log(JSON.stringify(row));
    child.kill("SIGTERM");
    await child.status;
    await logs.catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
await farm.stop();
