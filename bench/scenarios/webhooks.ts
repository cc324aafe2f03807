/**
 * Scenario webhooks (issue 51): delivery latency from commit to receipt with 10 subscriptions (each event
 * written to the outbox in its own transaction, the service's delivery worker with its default timing, a
 * receiver on 127.0.0.1), p50 and p99; and the outbox's cost in a write transaction: one event enqueued for
 * 10 matching subscriptions, and the check alone when no subscription matches (what a status-changing poll
 * pays; a poll whose status does not become auth_failed or tls_error issues no outbox statement at all); and a
 * whole poll scan (the real worker over in-process replay devices, bench/_replay.ts) without subscriptions and
 * with 10 subscriptions to `dutlab.device.status_changed`, rounds alternated, the median with its spread
 * (min–max) of each, so the outbox's cost on the poll write path is read against the scan's own spread.
 *
 * @module
 */
import type { Figure } from "../_util.ts";
import type { Ctx } from "../main.ts";
import { benchServices, freshDb } from "../_db.ts";
import { modules } from "../../modules.gen.ts";
import { enqueueEvent } from "../../core/harness/core.ts";
import { webhookWorker } from "../../core/harness/core.ts";
import { captureVendors } from "../_capture.ts";
import { registerDevices, replayModules, replayWorker } from "../_replay.ts";
import type { VendorCapture } from "../_capture.ts";

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p / 100 * s.length))]!;
};
const DATA = { labName: "bench", generation: 1, created: ["fw1"], updated: [], deleted: [] };

/**
 * Poll scans of `devices` replay devices, `rounds` per mode, alternating no subscription and 10 enabled
 * subscriptions to device status changes (what the poll store's outbox hook reads). Median and spread (ms).
 */
async function pollScans(
  backend: "pglite" | "postgres",
  captures: VendorCapture[],
  devices: number,
  rounds: number,
) {
  await using db = await freshDb(backend);
  const replay = replayModules(captures, { changeRate: 1 });
  const { svc } = await benchServices(db, replay.modules);
  await registerDevices(svc, devices);
  for (let i = 0; i < 10; i++) {
    await svc.webhooks.create({
      name: `poll${i}`,
      url: `http://127.0.0.1:9/p${i}`,
      allowHttp: true,
      eventTypes: ["dutlab.device.status_changed"],
    });
  }
  const w = await replayWorker(db, svc);
  const ms: Record<"without" | "with", number[]> = { without: [], with: [] };
  try {
    await w.round(); // warm-up (first payloads of every device), not counted
    for (let r = 0; r < rounds * 2; r++) {
      const mode = r % 2 === 0 ? "without" : "with";
      await db.kysely.updateTable("webhook_subscriptions").set({ enabled: mode === "with" }).execute();
      ms[mode].push((await w.round()).ms);
    }
  } finally {
    await w.stop();
  }
  const stat = (xs: number[]) => ({ p50: pct(xs, 50), min: Math.min(...xs), max: Math.max(...xs) });
  return { without: stat(ms.without), with: stat(ms.with) };
}

export async function run(ctx: Ctx): Promise<Figure[]> {
  const events = ctx.quick ? 50 : 200;
  const devices = ctx.quick ? 50 : 250;
  const rounds = ctx.quick ? 3 : 6;
  const figures: Figure[] = [];
  const captures = await captureVendors();
  for (const backend of ["pglite", "postgres"] as const) {
    ctx.log(`${backend}: poll scans of ${devices} devices, ${rounds} rounds without and with subscriptions`);
    const scans = await pollScans(backend, captures, devices, rounds);
    for (const mode of ["without", "with"] as const) {
      const s = scans[mode];
      figures.push({
        scenario: "webhooks",
        name: `poll scan of ${devices} devices, ${
          mode === "with" ? "10 subscriptions to device status changes" : "no subscription"
        }, median`,
        value: Math.round(s.p50),
        unit: "ms",
        params: { backend, devices, rounds, subscriptions: mode === "with" ? 10 : 0 },
        command: ctx.command,
        note: `spread ${Math.round(s.min)}–${Math.round(s.max)} ms over ${rounds} rounds (modes alternated)`,
        ...(mode === "with"
          ? {
            target: `not worse beyond the spread of the scans without (${Math.round(scans.without.min)}–${
              Math.round(scans.without.max)
            } ms); with: ${Math.round(s.min)}–${Math.round(s.max)} ms`,
            pass: s.p50 <= scans.without.max,
          }
          : {}),
      });
    }
  }
  for (const backend of ["pglite", "postgres"] as const) {
    await using db = await freshDb(backend);
    const { svc } = await benchServices(db, modules);
    const sent = new Map<string, number>();
    const lat: number[] = [];
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
      const id = req.headers.get("webhook-id")!;
      await req.text();
      lat.push(performance.now() - sent.get(id)!);
      return new Response(null, { status: 204 });
    });
    for (let i = 0; i < 10; i++) {
      await svc.webhooks.create({
        name: `s${i}`,
        url: `http://127.0.0.1:${server.addr.port}/s${i}`,
        allowHttp: true,
        eventTypes: ["dutlab.lab.synced"],
      });
    }
    const fig = (name: string, value: number, unit: string, extra: Partial<Figure> = {}): Figure => ({
      scenario: "webhooks",
      name,
      value: Math.round(value * 100) / 100,
      unit,
      params: { backend, subscriptions: 10, events },
      command: ctx.command,
      ...extra,
    });
    // The outbox's cost in a transaction: enqueue (10 matching subscriptions) vs the same empty transaction.
    const tx = async (enqueue: boolean) => {
      const t0 = performance.now();
      await db.kysely.transaction().execute(async (t) => {
        if (enqueue) await enqueueEvent(t, "dutlab.lab.synced", "bench", DATA, { severity: "info" });
        else await enqueueEvent(t, "dutlab.run.finished", "bench", {} as never, { severity: "info" });
      });
      return performance.now() - t0;
    };
    const withEvent: number[] = [];
    const noMatch: number[] = [];
    for (let i = 0; i < events; i++) {
      withEvent.push(await tx(true));
      noMatch.push(await tx(false));
    }
    await db.kysely.deleteFrom("webhook_deliveries").execute();
    const worker = webhookWorker(svc);
    worker.start();
    ctx.log(`${backend}: ${events} events to 10 subscriptions`);
    for (let i = 0; i < events; i++) {
      const t = performance.now();
      const id = await db.kysely.transaction().execute((t) =>
        enqueueEvent(t, "dutlab.lab.synced", "bench", DATA, { severity: "info" })
      );
      sent.set(id!, t);
      await new Promise((r) => setTimeout(r, 20));
    }
    const end = Date.now() + 60_000;
    while (lat.length < events * 10 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    await worker.stop();
    await server.shutdown();
    figures.push(
      fig("commit to receipt, 10 subscriptions: p50 (p99)", pct(lat, 50), "ms", {
        note: `${lat.length} of ${events * 10} received; worker reads every DUT_WEBHOOK_POLL_MS (250 ms)`,
      }),
      fig("commit to receipt, 10 subscriptions: p99", pct(lat, 99), "ms"),
      fig("write transaction enqueueing one event for 10 subscriptions, p50", pct(withEvent, 50), "ms"),
      fig(
        "write transaction with the outbox check only (no subscription matches), p50",
        pct(noMatch, 50),
        "ms",
      ),
    );
  }
  return figures;
}
