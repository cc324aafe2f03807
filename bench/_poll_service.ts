/**
 * The service side of the poll benchmark, as its own process: the real services (buildServices), real
 * adapters (modules.gen.ts) and the real PollWorker with its default concurrency, on a fresh database.
 * Registers every farm device (`self-signed`, so each certificate is pinned on first use), starts the
 * worker and times its first scan until every device has been polled.
 *
 * `deno run -A bench/_poll_service.ts --devices <farm-devices.jsonl> --db postgres|pglite`
 *
 * Prints one JSON line with the figures.
 *
 * @module
 */
import { parseArgs } from "node:util";
import process from "node:process";
import { sql } from "kysely";
import { modules } from "../modules.gen.ts";
import { setupLogging } from "../core/harness/core.ts";
import { PollWorker } from "../core/harness/core.ts";
import { type PollResult, PollService } from "../core/harness/core.ts";
import { decryptAlertWriter } from "../core/harness/core.ts";
import { pollStoreOptions } from "../core/harness/core.ts";
import { type Backend, benchServices, freshDb } from "./_db.ts";
import { cpuSeconds, pct, postgresCpuSeconds, rssSampler, statusMiB } from "./_util.ts";

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    devices: { type: "string" },
    db: { type: "string", default: "postgres" },
    concurrency: { type: "string" },
    "log-level": { type: "string", default: "info" },
    // Diagnosis only: the poll service without the per-device advisory locks (PostgreSQL).
    "no-device-locks": { type: "boolean", default: false },
  },
});

interface FarmDevice {
  i: number;
  vendor: string;
  url: string;
  fingerprint: string;
  username: string;
  password: string;
}
const devices: FarmDevice[] = (await Deno.readTextFile(args.devices!)).trim().split("\n").map((l) =>
  JSON.parse(l)
);
const backend = args.db as Backend;

// The service's own logging (one info line per poll), as `deno task serve` configures it.
await setupLogging({ format: "text", level: args["log-level"] as "info" });
await using db = await freshDb(backend);
const env: Record<string, string> = args.concurrency ? { DUT_POLL_CONCURRENCY: args.concurrency } : {};
// DUT_POLL_WORKERS from the bench's environment (hash workers, BENCHMARKS.md section 1x).
const hashWorkers = Deno.env.get("DUT_POLL_WORKERS");
if (hashWorkers !== undefined) env.DUT_POLL_WORKERS = hashWorkers;
const { svc } = await benchServices(db, modules, env);
if (args["no-device-locks"]) {
  // The production poll service but without per-device locks (its decrypt-alert hook included).
  svc.poller = new PollService({
    db: db.kysely,
    devices: svc.devices,
    registry: svc.registry,
    metrics: svc.metrics,
    limits: svc.limits,
    deviceTimeoutMs: svc.config.DUT_POLL_DEVICE_TIMEOUT_SECONDS * 1000,
    writeHooks: [decryptAlertWriter(svc.registry)],
    store: pollStoreOptions(db),
  });
}
const concurrency = svc.config.DUT_POLL_CONCURRENCY;

const ids = new Map<string, FarmDevice>();
for (let k = 0; k < devices.length; k += 16) {
  await Promise.all(
    devices.slice(k, k + 16).map(async (d) => {
      const id = await svc.devices.create({
        hostname: `bench-${d.vendor}-${String(d.i).padStart(5, "0")}`,
        vendor: d.vendor,
        baseUrl: d.url,
        username: d.username,
        password: d.password,
        tlsVerifyMode: "self-signed",
        pollIntervalSeconds: 300,
        enabled: true,
      });
      ids.set(id, d);
    }),
  );
}

// Time each poll as the worker sees it (connect, collect, store).
const durations: number[] = [];
const statuses: Record<string, number> = {};
const errors: string[] = [];
let done = 0;
let allDone!: () => void;
const finished = new Promise<void>((r) => (allDone = r));
const orig = svc.poller.poll.bind(svc.poller);
svc.poller.poll = (id, opts) => {
  const t = performance.now();
  const p: Promise<PollResult> = orig(id, opts);
  p.then((r) => {
    durations.push(performance.now() - t);
    statuses[r.lastPollStatus] = (statuses[r.lastPollStatus] ?? 0) + 1;
    if (!r.ok && errors.length < 5) errors.push(`${ids.get(id)?.vendor}: ${r.lastPollError}`);
  }, (e) => {
    statuses.exception = (statuses.exception ?? 0) + 1;
    if (errors.length < 5) errors.push(String(e));
  }).finally(() => {
    if (++done === devices.length) allDone();
  });
  return p;
};

const rssBefore = statusMiB("VmRSS");
const rss = rssSampler("self", 250);
const pg0 = backend === "postgres" ? postgresCpuSeconds() : 0;
const cpu0 = process.cpuUsage();
// The main thread's own CPU (the event loop; hash workers excluded), /proc/thread-self read from it.
const main0 = cpuSeconds("thread-self");
const t0 = performance.now();
const worker = new PollWorker(db, svc.poller, svc.metrics, {
  scanSeconds: svc.config.DUT_POLL_SCAN_SECONDS,
  concurrency,
});
await worker.start();
const timeout = setTimeout(() => allDone(), 600_000);
await finished;
clearTimeout(timeout);
const wallMs = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
const mainCpuMs = (cpuSeconds("thread-self") - main0) * 1000;
const pgCpu = backend === "postgres" ? postgresCpuSeconds() - pg0 : null;
const mem = rss.stop();
// The first scan's figures, before the second scan reuses the counters.
const first = {
  polled: done,
  statuses: { ...statuses },
  p50Ms: pct(durations, 50),
  p95Ms: pct(durations, 95),
};
const firstMaxMs = Math.max(...durations);
const firstSnapshots = // count(*): exactly one row
  (await sql<{ n: string }>`select count(*)::text as n from snapshots`.execute(db.kysely)).rows[0]!.n;

// A second scan of the same devices: the steady state (certificates already pinned, the database warm).
const steady = await (async () => {
  durations.length = 0;
  done = 0;
  for (const k of Object.keys(statuses)) delete statuses[k];
  const again = new Promise<void>((r) => (allDone = r));
  await db.kysely.updateTable("devices").set({ last_poll_at: null }).execute();
  const pgS = backend === "postgres" ? postgresCpuSeconds() : 0;
  const cpuS = process.cpuUsage();
  const mainS = cpuSeconds("thread-self");
  const tS = performance.now();
  void worker.scan();
  const t = setTimeout(() => allDone(), 600_000);
  await again;
  clearTimeout(t);
  const ms = performance.now() - tS;
  const c = process.cpuUsage(cpuS);
  const mainMs = (cpuSeconds("thread-self") - mainS) * 1000;
  return {
    wallMs: ms,
    polled: done,
    statuses: { ...statuses },
    p95Ms: pct(durations, 95),
    cpuMsPerPoll: (c.user + c.system) / 1000 / done,
    mainCpuMsPerPoll: mainMs / done,
    postgresCpuMsPerPoll: backend === "postgres" ? ((postgresCpuSeconds() - pgS) * 1000) / done : null,
  };
})();
await worker.stop(10_000);

const snapshots = // count(*): exactly one row
  (await sql<{ n: string }>`select count(*)::text as n from snapshots`.execute(db.kysely)).rows[0]!.n;
const payloads = // count(*): exactly one row
  (await sql<{ n: string }>`select count(*)::text as n from snapshot_payloads`.execute(db.kysely)).rows[0]!.n;
const pinned = // count(*): exactly one row
  (await sql<{ n: string }>`select count(*)::text as n from devices where pinned_cert_sha256 is not null`
    .execute(db.kysely)).rows[0]!.n;
const cpuMs = (cpu.user + cpu.system) / 1000;
console.log(JSON.stringify({
  backend,
  n: devices.length,
  concurrency,
  polled: first.polled,
  statuses: first.statuses,
  errors,
  wallMs,
  pollsPerSecond: first.polled / (wallMs / 1000),
  p50Ms: first.p50Ms,
  p95Ms: first.p95Ms,
  maxMs: firstMaxMs,
  cpuMs,
  cpuMsPerPoll: cpuMs / done,
  mainCpuMsPerPoll: mainCpuMs / done,
  hashWorkers: svc.config.DUT_POLL_WORKERS,
  postgresCpuMs: pgCpu === null ? null : pgCpu * 1000,
  snapshots: Number(firstSnapshots),
  snapshotsAfterSecondScan: Number(snapshots),
  payloads: Number(payloads),
  pinned: Number(pinned),
  overruns: worker.overruns,
  rssBeforeMiB: rssBefore,
  rssPeakMiB: mem.peakMiB,
  rssMeanMiB: mem.meanMiB,
  hwmMiB: statusMiB("VmHWM"),
  steady,
}));
