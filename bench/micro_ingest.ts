/**
 * Micro-benchmark of the whole poll cycle (issue 34 point 4): the ingest scenario's first figure alone, through
 * the real worker, poll cycle and store with replay adapters (no network), 250 devices, `ROUNDS` rounds
 * (default 6), into a fresh PostgreSQL schema (`BACKEND=pglite` for PGlite). `RATE` is the share of payloads
 * that change per poll (default 1: every payload new). Prints snapshots/s and CPU per snapshot; alternate it
 * with a checkout of another commit to compare (the VM's speed drifts between minutes).
 *
 *   deno run -A --lock=deno.dev.lock bench/micro_ingest.ts
 *
 * @module
 */
import { captureVendors } from "./_capture.ts";
import { benchServices, freshDb } from "./_db.ts";
import { countRows, registerDevices, replayModules, replayWorker } from "./_replay.ts";
const captures = await captureVendors();
const rate = Number(Deno.env.get("RATE") ?? 1);
await using db = await freshDb((Deno.env.get("BACKEND") ?? "postgres") as "postgres");
const replay = replayModules(captures, { changeRate: rate });
const { svc } = await benchServices(db, replay.modules);
await registerDevices(svc, 250);
const w = await replayWorker(db, svc);
const before = await countRows(db, "snapshots");
let ms = 0, cpu = 0, pg = 0;
for (let r = 0; r < Number(Deno.env.get("ROUNDS") ?? 6); r++) {
  const x = await w.round();
  ms += x.ms;
  cpu += x.cpuMs;
  pg += x.pgCpuMs;
}
await w.stop();
const stored = (await countRows(db, "snapshots")) - before;
console.log(
  `${stored} snapshots, ${(stored / ms * 1000).toFixed(0)}/s, service CPU ${
    (cpu / stored * 1000).toFixed(1)
  } µs/snapshot, PG ${(pg / stored * 1000).toFixed(1)} µs`,
);
