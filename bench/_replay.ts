/**
 * In-process replay adapters for the storage-side scenarios (ingest, storage growth, reports): the real
 * adapters' vendor keys, labels and facts, whose `collectAll` returns the payloads the real adapter
 * collected from its real simulator (see _capture.ts), varied per device, with a chosen share of
 * payloads changing from one poll to the next. No network: what is measured is the poll cycle's own
 * work and the store path (hash, transaction, inserts).
 *
 * @module
 */
import process from "node:process";
import { sql } from "kysely";
import type { AdapterDefinition, CollectedSnapshot } from "../core/harness/core.ts";
import type { Db } from "../core/harness/core.ts";
import { PollWorker } from "../core/harness/core.ts";
import type { LoadedModules } from "../core/harness/core.ts";
import type { Services } from "../core/harness/core.ts";
import { modules } from "../modules.gen.ts";
import { substitute, variedIdentity, type VendorCapture, VENDORS } from "./_capture.ts";
import { postgresCpuSeconds } from "./_util.ts";

export interface ReplayOptions {
  /** Share of payloads (per device and label) that differ from the previous poll, 0..1. */
  changeRate: number;
  /** PRNG seed. */
  seed?: number;
}

/** Deterministic PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Replay modules plus the knob to change the share of changing payloads between phases. */
export function replayModules(captures: VendorCapture[], opts: ReplayOptions) {
  const rand = prng(opts.seed ?? 42);
  const state = { changeRate: opts.changeRate };
  const byVendor = new Map(captures.map((c) => [c.vendor, c]));
  // Per device: the base payload text of each label (identity varied) and a revision per label.
  const devices = new Map<string, { texts: string[]; revisions: number[] }>();
  let nextIndex = 1;
  const wrap = (real: AdapterDefinition): AdapterDefinition => {
    const cap = byVendor.get(real.vendorKey);
    if (!cap) return real;
    return {
      ...real,
      release: undefined,
      create(ctx) {
        return {
          testConnection: () => Promise.resolve({ cpuDetail: "replay", cpuPercent: 0 }),
          collectAll(): Promise<CollectedSnapshot[]> {
            let d = devices.get(ctx.device.id);
            if (!d) {
              const i = nextIndex++;
              const pairs: Array<[string, string]> = cap.identity.map((s) => [s, variedIdentity(s, i)]);
              d = {
                texts: cap.snapshots.map((s) => substitute(JSON.stringify(s.payload), pairs)),
                revisions: cap.snapshots.map(() => 0),
              };
              devices.set(ctx.device.id, d);
            } else {
              for (let k = 0; k < d.revisions.length; k++) if (rand() < state.changeRate) d.revisions[k]!++;
            }
            const dev = d;
            return Promise.resolve(cap.snapshots.map((s, k) => {
              const payload = JSON.parse(dev.texts[k]!);
              const revision = dev.revisions[k]!;
              if (revision > 0) payload.benchRevision = revision;
              return { label: s.label, payload };
            }));
          },
          close: () => Promise.resolve(),
        };
      },
    };
  };
  const loaded: LoadedModules = {
    ...modules,
    adapters: modules.adapters.map((m) => ({ ...m, module: wrap(m.module as AdapterDefinition) })),
  };
  return { modules: loaded, state };
}

/** Register `n` devices, vendors round-robin, pointing at a closed port (replay adapters do no I/O). */
export async function registerDevices(svc: Services, n: number, prefix = "bench"): Promise<string[]> {
  const ids: string[] = [];
  for (let k = 0; k < n; k += 32) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(32, n - k) }, (_, j) => {
        const i = k + j;
        const vendor = VENDORS[i % VENDORS.length]!;
        return svc.devices.create({
          hostname: `${prefix}-${vendor}-${String(i).padStart(5, "0")}`,
          vendor,
          baseUrl: `https://127.0.0.${10 + (i % 16)}:9`,
          username: "admin",
          password: `bench-password-${i}`,
          tlsVerifyMode: "self-signed",
          pollIntervalSeconds: 300,
          enabled: true,
        });
      }),
    );
    ids.push(...batch);
  }
  return ids;
}

/** Labels per poll of each vendor (from the capture). */
export function labelsPerVendor(captures: VendorCapture[]): Record<string, number> {
  return Object.fromEntries(captures.map((c) => [c.vendor, c.snapshots.length]));
}

/**
 * The real worker over replay devices: each `round()` makes every enabled device due and runs one scan
 * (the worker's own selection, concurrency, lock guard and store path), timing only the scan.
 */
export async function replayWorker(db: Db, svc: Services) {
  // Not due yet, so the scan `start()` runs right away finds nothing; rounds make them due.
  await db.kysely.updateTable("devices").set({ last_poll_at: new Date() }).execute();
  const worker = new PollWorker(db, svc.poller, svc.metrics, {
    scanSeconds: 3600,
    concurrency: svc.config.DUT_POLL_CONCURRENCY,
  });
  await worker.start();
  await new Promise((r) => setTimeout(r, 300));
  return {
    worker,
    async round(): Promise<{ ms: number; cpuMs: number; pgCpuMs: number }> {
      await db.kysely.updateTable("devices").set({ last_poll_at: null }).execute();
      const pg0 = db.kind === "postgres" ? postgresCpuSeconds() : 0;
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await worker.scan();
      const ms = performance.now() - t0;
      const c = process.cpuUsage(c0);
      return {
        ms,
        cpuMs: (c.user + c.system) / 1000,
        pgCpuMs: db.kind === "postgres" ? (postgresCpuSeconds() - pg0) * 1000 : 0,
      };
    },
    stop: () => worker.stop(5000),
  };
}

/** Number of rows of a table. */
export async function countRows(db: Db, table: "snapshots" | "snapshot_payloads"): Promise<number> {
  const r = await sql<{ n: string }>`select count(*)::text as n from ${sql.table(table)}`.execute(db.kysely);
  return Number(r.rows[0]!.n); // count(*): exactly one row
}
