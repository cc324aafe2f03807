/**
 * Scenario 2, snapshot ingest: snapshots stored per second (1) through the real worker and poll cycle
 * (PollWorker → PollService → PollStore) with replay adapters (realistic payloads captured from the real
 * simulators, no network), into PostgreSQL and into PGlite (on-disk data dir), and (2) through the store
 * alone (PollStore fed by 64 concurrent writers with pre-hashed payloads), against the one-transaction-
 * per-poll store it replaced.
 *
 * @module
 */
import { type Figure, round } from "../_util.ts";
import type { Ctx } from "../main.ts";
import { captureVendors } from "../_capture.ts";
import { benchServices, freshDb } from "../_db.ts";
import { countRows, registerDevices, replayModules, replayWorker } from "../_replay.ts";
import { makePolls, storePerPoll, storeWithPollStore } from "../_store_sql.ts";
import { PollStore } from "../../core/harness/core.ts";
import { decryptAlertWriter } from "../../core/harness/core.ts";
import { pollStoreOptions } from "../../core/harness/core.ts";
import type { DeviceRow } from "../../core/harness/core.ts";
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
  // The store alone (no cycle), fed by 64 concurrent writers: the production PollStore (group commit),
  // and the one-transaction-per-poll store it replaced (baseline).
  for (const backend of ctx.quick ? ["postgres"] as const : ["postgres", "pglite"] as const) {
    for (
      const variant of [
        "PollStore, group commit (production)",
        "one transaction per poll (before group commit)",
      ]
    ) {
      await using db = await freshDb(backend);
      const { svc } = await benchServices(db, replayModules(captures, { changeRate: 0.05 }).modules);
      const ids = await registerDevices(svc, devices);
      const devs = ids.map((id, i) => ({ id, vendor: VENDORS[i % VENDORS.length]! }));
      const polls = makePolls(captures, devs, rounds + 1, 0.05);
      const rows = new Map<string, DeviceRow>();
      for (const id of ids) rows.set(id, await svc.devices.get(id));
      const store = new PollStore(db.kysely, {
        ...pollStoreOptions(db),
        hooks: [decryptAlertWriter(svc.registry)],
      });
      const storeAll = (r: typeof polls[number]) =>
        variant.startsWith("PollStore")
          ? storeWithPollStore(store, rows, r)
          : storePerPollConcurrently(db.kysely, r);
      // Round 0 (all payloads new) warms up; then steady state at 95% unchanged.
      await storeAll(polls[0]!);
      const before = await countRows(db, "snapshots");
      const t0 = performance.now();
      for (const r of polls.slice(1)) await storeAll(r);
      const ms = performance.now() - t0;
      const stored = (await countRows(db, "snapshots")) - before;
      const perSec = stored / (ms / 1000);
      ctx.log(`${backend} store SQL ${variant}: ${stored} snapshots in ${round(ms)} ms = ${round(perSec)}/s`);
      figures.push({
        scenario: "ingest",
        name: `store only, ${variant} (95% unchanged)`,
        value: round(perSec),
        unit: "snapshots/s",
        params: { backend, devices, rounds, snapshots: stored, writers: 64 },
        ...(backend === "postgres" && variant.startsWith("PollStore")
          ? { target: "≥ 5,000/s on PostgreSQL", pass: perSec >= 5000 }
          : {}),
        command: ctx.command,
      });
    }
  }
  return figures;
}

/** The baseline: 64 concurrent writers, one transaction per poll. */
async function storePerPollConcurrently(
  db: Parameters<typeof storePerPoll>[0],
  polls: ReturnType<typeof makePolls>[number],
) {
  const queue = [...polls];
  await Promise.all(Array.from({ length: 64 }, async () => {
    while (queue.length) await storePerPoll(db, queue.shift()!);
  }));
}
