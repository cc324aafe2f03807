/**
 * Scenario 5, HTTP API: requests/s and latency of `GET /api/admin/dut/devices` (1,000 devices, unpaged and
 * `limit=100`), of the unfiltered snapshot listing (latest 100, payloads included) and of the snapshots of one
 * device and label, against `deno run -A server.ts` started by the benchmark (poller disabled), loaded by
 * autocannon (`npx -y autocannon@9.0.0`, its own Node process) with 50 connections. The snapshot listings are
 * also given as a ratio of the paged device list's requests/s in the same run (issue 34: ≥ 0.3).
 *
 * `BENCH_API_BACKENDS=pglite,postgres` chooses the back ends (default: PostgreSQL with `--quick`, both
 * without); `BENCH_API_READS_ONLY=1` loads only the paged list and the two snapshot listings (no unpaged list,
 * no event-stream rounds), for the snapshot-read work of issue 34.
 *
 * @module
 */
import {
  commandLine,
  cpuSeconds,
  type Figure,
  freePort,
  PG_URL,
  round,
  serverEnv,
  startServer,
  statusMiB,
  stopChild,
  TOKEN,
  waitFor200,
} from "../_util.ts";
import type { Ctx } from "../main.ts";
import { captureVendors, VENDORS } from "../_capture.ts";
import { benchServices, freshDb } from "../_db.ts";
import { registerDevices, replayModules } from "../_replay.ts";
import { makePolls, storeRound } from "../_store_sql.ts";
import { followEvents } from "../_sse.ts";
import { counted, LATEST, loadRead, ONE, oneDevicePath, readRatios } from "../_reads.ts";
import { migrate, openDatabase } from "../../core/harness/core.ts";
import type { Db } from "../../core/harness/core.ts";

async function populate(db: Db, captures: Awaited<ReturnType<typeof captureVendors>>) {
  const { svc } = await benchServices(db, replayModules(captures, { changeRate: 0.05 }).modules);
  const ids = await registerDevices(svc, 1000);
  const polls = makePolls(
    captures,
    ids.map((id, i) => ({ id, vendor: VENDORS[i % VENDORS.length]! })),
    2,
    0.05,
  );
  for (const round of polls) await storeRound(db.kysely, svc.registry, round);
}

/**
 * Server CPU while events are published at a steady rate (a device PATCH every 50 ms: about 20
 * `device.changed` events/s), with no SSE client and with 100 clients following `GET /api/events`: the
 * difference is what the streams cost. The server's CPU moves by a few points from one window to the next (its
 * garbage collector after the list loads above), so rounds alternate a window without clients and one with
 * them, and the figures are the means over the rounds. Every client must receive every event of its window
 * (checked).
 */
async function sseOverhead(
  ctx: Ctx,
  port: number,
  pid: number,
  client: Deno.HttpClient,
  quick: boolean,
): Promise<Figure[]> {
  const rounds = quick ? 2 : 3;
  const seconds = quick ? 5 : 15;
  const clients = 100;
  const base = `http://127.0.0.1:${port}`;
  const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
  const list = await (await fetch(`${base}/api/admin/dut/devices?limit=1`, { headers, client })).json();
  const id = list.devices[0].id as string;
  let n = 0;
  const publishFor = async (ms: number) => {
    const end = performance.now() + ms;
    let k = 0;
    while (performance.now() < end) {
      const t = performance.now();
      const r = await fetch(`${base}/api/admin/dut/devices/${id}`, {
        method: "PATCH",
        headers,
        body: JSON.stringify({ notes: `bench ${n++}` }),
        client,
        signal: AbortSignal.timeout(10_000),
      });
      await r.arrayBuffer();
      k++;
      await new Promise((r) => setTimeout(r, Math.max(0, 50 - (performance.now() - t))));
    }
    return k;
  };
  const measure = async () => {
    const c0 = cpuSeconds(pid);
    const t0 = performance.now();
    const events = await publishFor(seconds * 1000);
    const s = (performance.now() - t0) / 1000;
    return { cpuPct: ((cpuSeconds(pid) - c0) / s) * 100, events, rate: events / s };
  };
  /** 100 streams; `counts[i]` is how many device.changed events stream i received. */
  const connect = () => {
    const abort = new AbortController();
    const counts = new Array<number>(clients).fill(0);
    const readers = Array.from({ length: clients }, (_, i) =>
      followEvents(base, abort.signal, (event) => {
        if (event === "device.changed") counts[i] = (counts[i] ?? 0) + 1;
      }));
    return {
      counts,
      async close() {
        abort.abort();
        await Promise.race([Promise.all(readers), new Promise((r) => setTimeout(r, 10_000))]);
      },
    };
  };
  const without: number[] = [];
  const withClients: number[] = [];
  const rates: number[] = [];
  let missing = 0;
  for (let round = 1; round <= rounds; round++) {
    ctx.log(`SSE round ${round}/${rounds}: ${seconds} s without clients`);
    without.push((await measure()).cpuPct);
    const streams = connect();
    await new Promise((r) => setTimeout(r, 2000));
    ctx.log(`SSE round ${round}/${rounds}: ${clients} clients connected; ${seconds} s with them`);
    const w = await measure();
    withClients.push(w.cpuPct);
    rates.push(w.rate);
    await new Promise((r) => setTimeout(r, 1000)); // the last flush window
    await streams.close();
    missing += streams.counts.filter((c) => c < w.events).length;
    await new Promise((r) => setTimeout(r, 1000));
  }
  const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
  const added = mean(withClients) - mean(without);
  ctx.log(
    `SSE: ${round(mean(without))} % CPU without clients, ${round(mean(withClients))} % with ${clients} ` +
      `(rounds: ${without.map((v) => round(v)).join(", ")} / ${
        withClients.map((v) => round(v)).join(", ")
      } %; ` +
      `${round(mean(rates))} events/s; ${missing} client(s) missed events)`,
  );
  const params = {
    clients,
    eventsPerSecond: round(mean(rates)),
    rounds,
    secondsPerWindow: seconds,
    withoutPerRound: without.map((v) => round(v)),
    withPerRound: withClients.map((v) => round(v)),
    clientsMissingEvents: missing,
    DUT_EVENTS_FLUSH_MS: Deno.env.get("DUT_EVENTS_FLUSH_MS") ?? "100 (default)",
  };
  const note = "server CPU while a device is PATCHed every 50 ms (one device.changed event each); means of " +
    "alternating windows";
  const fig = (name: string, value: number, extra: Partial<Figure> = {}): Figure => ({
    scenario: "api",
    name,
    value: round(value),
    unit: "%",
    params,
    command: ctx.command,
    note,
    ...extra,
  });
  return [
    fig("SSE: server CPU, no client", mean(without)),
    fig(`SSE: server CPU, ${clients} clients following /api/events`, mean(withClients)),
    fig(`SSE: CPU added by ${clients} clients`, added, {
      unit: "% of one core",
      target: "<= 5",
      pass: added <= 5,
    }),
  ];
}

const PAGED = "GET /api/admin/dut/devices?limit=100 (first page of 1,000 devices)";
const OMIT = "GET /api/admin/dut/snapshots?payload=omit (latest 100 without payloads)";

/** The back ends to load: `BENCH_API_BACKENDS` (comma-separated), else PostgreSQL only when quick. */
function backendsOf(quick: boolean): ("postgres" | "pglite")[] {
  const env = Deno.env.get("BENCH_API_BACKENDS");
  if (!env) return quick ? ["postgres"] : ["postgres", "pglite"];
  const list = env.split(",").map((s) => s.trim()).filter(Boolean);
  for (const b of list) {
    if (b !== "postgres" && b !== "pglite") throw new Error(`BENCH_API_BACKENDS: unknown back end "${b}"`);
  }
  return list as ("postgres" | "pglite")[];
}

/** The loaded endpoints (name, path); one device and label is the newest snapshot's. */
async function endpoints(port: number, client: Deno.HttpClient, readsOnly: boolean) {
  const one = await oneDevicePath(`http://127.0.0.1:${port}`, client);
  return [
    ...(readsOnly ? [] : [["GET /api/admin/dut/devices (1,000 devices)", "/api/admin/dut/devices"]]),
    [PAGED, "/api/admin/dut/devices?limit=100"],
    [LATEST, "/api/admin/dut/snapshots"],
    [OMIT, "/api/admin/dut/snapshots?payload=omit"],
    [ONE, one],
  ] as [string, string][];
}

export async function run(ctx: Ctx): Promise<Figure[]> {
  const captures = await captureVendors();
  const seconds = ctx.quick ? 3 : 15;
  const figures: Figure[] = [];
  const readsOnly = Deno.env.get("BENCH_API_READS_ONLY") === "1";
  for (const backend of backendsOf(ctx.quick)) {
    const port = freePort();
    const env = serverEnv(port, { DUT_API_POLLER_DISABLE: "1" });
    let cleanup: () => Promise<void>;
    if (backend === "postgres") {
      const db = await freshDb("postgres");
      await populate(db, captures);
      env.DATABASE_URL = `${PG_URL}?search_path=${db.where}`;
      cleanup = () => db.close();
    } else {
      const dir = `${ctx.tmp}/data`;
      await Deno.mkdir(dir, { recursive: true });
      const db = await openDatabase({ dataDir: `${dir}/pglite` });
      await migrate(db.kysely);
      await populate(db, captures);
      await db.close();
      env.DUT_DATA_DIR = dir;
      cleanup = () => Deno.remove(dir, { recursive: true }).catch(() => {});
    }
    const shownEnv = {
      ...env,
      ADMIN_TOKEN: "<token>",
      DUT_CRED_ENC_KEY: "<key>",
      DUT_REPORT_SIGNING_KEY: "<key>",
    };
    const serverCmd = commandLine("deno", ["run", "-A", "server.ts"], shownEnv);
    const { child: server, logs } = startServer(env, `${ctx.tmp}/server-${backend}.log`);
    // Our own client, closed before the server is stopped (idle keep-alive connections delay its shutdown).
    const client = Deno.createHttpClient({});
    try {
      await waitFor200(`http://127.0.0.1:${port}/readyz`, performance.now(), 60_000, server);
      const rps = new Map<string, { value: number; p99: number }>();
      for (const [name, path] of await endpoints(port, client, readsOnly)) {
        const url = `http://127.0.0.1:${port}${path}`;
        const cpu0 = cpuSeconds(server.pid);
        const { ac, command, bytes } = await loadRead(url, seconds, 50, client);
        const serverCpu = cpuSeconds(server.pid) - cpu0;
        // What the run measured beside the figure sits under `measured`, so that `--compare` pairs figures by
        // their identity (scalar params) and not by these.
        const p = {
          backend,
          connections: 50,
          seconds,
          responseBytes: bytes,
          measured: {
            ...counted(ac),
            serverCpuPct: round((serverCpu / seconds) * 100),
            serverRssMiB: round(statusMiB("VmRSS", server.pid)),
          },
        };
        ctx.log(
          `${backend} ${path}: ${ac.requests.average} req/s, p99 ${ac.latency.p99} ms, ${ac.non2xx} non-2xx`,
        );
        rps.set(name, { value: ac.requests.average, p99: ac.latency.p99 });
        const note = `${command}; server: ${serverCmd}`;
        figures.push(
          {
            scenario: "api",
            name: `${name}: requests/s`,
            value: round(ac.requests.average),
            unit: "req/s",
            params: p,
            command: ctx.command,
            note,
          },
          {
            scenario: "api",
            name: `${name}: p50 latency`,
            value: round(ac.latency.p50),
            unit: "ms",
            params: p,
            command: ctx.command,
            note,
          },
          {
            scenario: "api",
            name: `${name}: p99 latency`,
            value: round(ac.latency.p99),
            unit: "ms",
            params: p,
            command: ctx.command,
            note,
          },
        );
      }
      figures.push(...readRatios({
        scenario: "api",
        rps,
        paged: PAGED,
        reads: [[LATEST, "latest 100"], [OMIT, "latest 100, payload=omit"], [ONE, "one device and label"]],
        params: { backend },
        command: ctx.command,
        log: (line) => ctx.log(`${backend} ${line}`),
      }));
      if (backend === "postgres" && !readsOnly) {
        figures.push(...await sseOverhead(ctx, port, server.pid, client, ctx.quick));
      }
    } finally {
      client.close();
      // Let the requests autocannon left in flight finish: a SIGTERM while responses are still being
      // written to closed connections left server.ts hanging in shutdown (BENCHMARKS.md, scenario 5).
      await new Promise((r) => setTimeout(r, 3000));
      const exitMs = await stopChild(server, 15_000);
      if (exitMs === null) ctx.log(`${backend}: server did not exit within 15 s of SIGTERM; killed`);
      figures.push({
        scenario: "api",
        name: "server exit after SIGTERM (after the load)",
        value: exitMs === null ? null : round(exitMs),
        unit: "ms",
        params: { backend },
        command: ctx.command,
        note: exitMs === null ? "did not exit within 15 s: SIGKILL" : undefined,
      });
      await logs;
      await cleanup();
    }
  }
  return figures;
}
