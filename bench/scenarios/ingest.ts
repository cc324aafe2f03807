/**
 * Scenario 2, snapshot ingest: snapshots stored per second through the real worker and store path
 * (PollWorker → PollService → #store) with replay adapters (realistic payloads captured from the real
 * simulators, no network), into PostgreSQL and into PGlite (on-disk data dir).
 *
 * @module
 */
import { type Figure, round } from "../_util.ts";
import type { Ctx } from "../main.ts";
import { captureVendors } from "../_capture.ts";
import { benchServices, freshDb } from "../_db.ts";
import { countRows, registerDevices, replayModules, replayWorker } from "../_replay.ts";
import { makePolls, storeBatched, storePerPoll } from "../_store_sql.ts";
import { VENDORS } from "../_capture.ts";

export async function run(ctx: Ctx): Promise<Figure[]> {
  const captures = await captureVendors();
  const devices = ctx.quick ? 96 : 250;
  const rounds = ctx.quick ? 2 : 6;
  const figures: Figure[] = [];
  for (const backend of ["postgres", "pglite"] as const) {
    const modes = [{ name: "every payload new", rate: 1 }, { name: "95% unchanged", rate: 0.05 }];
    for (const mode of ctx.quick && backend === "pglite" ? modes.slice(1) : modes) {
      await using db = await freshDb(backend);
      const replay = replayModules(captures, { changeRate: mode.rate });
      const { svc } = await benchServices(db, replay.modules);
      await registerDevices(svc, devices);
      const w = await replayWorker(db, svc);
      // Round 1 stores every device's first payloads (all new); it is the warm-up in the 95% mode.
      if (mode.rate < 1) await w.round();
      const before = await countRows(db, "snapshots");
      const payloadsBefore = await countRows(db, "snapshot_payloads");
      let ms = 0, cpuMs = 0, pgCpuMs = 0;
      for (let r = 0; r < rounds; r++) {
        const x = await w.round();
        ms += x.ms;
        cpuMs += x.cpuMs;
        pgCpuMs += x.pgCpuMs;
      }
      await w.stop();
      const stored = (await countRows(db, "snapshots")) - before;
      const newPayloads = (await countRows(db, "snapshot_payloads")) - payloadsBefore;
      const polls = devices * rounds;
      const perSec = stored / (ms / 1000);
      ctx.log(`${backend} ${mode.name}: ${stored} snapshots in ${round(ms)} ms = ${round(perSec)}/s`);
      const p = { backend, payloads: mode.name, devices, rounds, polls, snapshots: stored, newPayloads };
      figures.push(
        {
          scenario: "ingest",
          name: `snapshots stored per second (${mode.name})`,
          value: round(perSec),
          unit: "snapshots/s",
          params: p,
          target: backend === "postgres" ? "≥ 5,000/s on PostgreSQL" : undefined,
          pass: backend === "postgres" ? perSec >= 5000 : undefined,
          command: ctx.command,
        },
        {
          scenario: "ingest",
          name: `polls stored per second (${mode.name})`,
          value: round(polls / (ms / 1000)),
          unit: "polls/s",
          params: p,
          command: ctx.command,
        },
        {
          scenario: "ingest",
          name: `service CPU per snapshot (${mode.name})`,
          value: round((cpuMs / stored) * 1000),
          unit: "µs",
          params: {
            ...p,
            ...(backend === "postgres" ? { postgresCpuUsPerSnapshot: round((pgCpuMs / stored) * 1000) } : {}),
          },
          command: ctx.command,
        },
      );
    }
  }
  // The store SQL alone (no cycle): one transaction per poll as PollService#store, and batched (what-if).
  for (const backend of ctx.quick ? ["postgres"] as const : ["postgres", "pglite"] as const) {
    for (
      const variant of ["per-poll transaction (as #store)", "batched, 64 polls per transaction (what-if)"]
    ) {
      await using db = await freshDb(backend);
      const { svc } = await benchServices(db, replayModules(captures, { changeRate: 0.05 }).modules);
      const ids = await registerDevices(svc, devices);
      const devs = ids.map((id, i) => ({ id, vendor: VENDORS[i % VENDORS.length] }));
      const polls = makePolls(captures, devs, rounds + 1, 0.05);
      // Round 0 (all payloads new) warms up; then steady state at 95% unchanged.
      await storeAll(db.kysely, polls[0], variant);
      const before = await countRows(db, "snapshots");
      const t0 = performance.now();
      for (const r of polls.slice(1)) await storeAll(db.kysely, r, variant);
      const ms = performance.now() - t0;
      const stored = (await countRows(db, "snapshots")) - before;
      const perSec = stored / (ms / 1000);
      ctx.log(`${backend} store SQL ${variant}: ${stored} snapshots in ${round(ms)} ms = ${round(perSec)}/s`);
      figures.push({
        scenario: "ingest",
        name: `store SQL only, ${variant} (95% unchanged)`,
        value: round(perSec),
        unit: "snapshots/s",
        params: { backend, devices, rounds, snapshots: stored },
        command: ctx.command,
      });
    }
  }
  return figures;
}

async function storeAll(
  db: Parameters<typeof storePerPoll>[0],
  polls: ReturnType<typeof makePolls>[number],
  variant: string,
) {
  if (variant.startsWith("batched")) {
    for (let k = 0; k < polls.length; k += 64) await storeBatched(db, polls.slice(k, k + 64));
    return;
  }
  const queue = [...polls];
  await Promise.all(Array.from({ length: 64 }, async () => {
    while (queue.length) await storePerPoll(db, queue.shift()!);
  }));
}
