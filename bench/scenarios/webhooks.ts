/**
 * Scenario webhooks (issue 51): delivery latency from commit to receipt with 10 subscriptions (each event
 * written to the outbox in its own transaction, the service's delivery worker with its default timing, a
 * receiver on 127.0.0.1), p50 and p99; and the outbox's cost in a write transaction: one event enqueued for
 * 10 matching subscriptions, and the check alone when no subscription matches (what a status-changing poll
 * pays; a poll whose status does not become auth_failed or tls_error issues no outbox statement at all).
 *
 * @module
 */
import type { Figure } from "../_util.ts";
import type { Ctx } from "../main.ts";
import { benchServices, freshDb } from "../_db.ts";
import { modules } from "../../modules.gen.ts";
import { enqueueEvent } from "../../core/harness/core.ts";
import { webhookWorker } from "../../core/harness/core.ts";

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p / 100 * s.length))]!;
};
const DATA = { labName: "bench", generation: 1, created: ["fw1"], updated: [], deleted: [] };

export async function run(ctx: Ctx): Promise<Figure[]> {
  const events = ctx.quick ? 50 : 200;
  const figures: Figure[] = [];
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
      fig("commit to receipt p50 (10 subscriptions)", pct(lat, 50), "ms", {
        note: `${lat.length} of ${events * 10} received; worker reads every DUT_WEBHOOK_POLL_MS (250 ms)`,
      }),
      fig("commit to receipt p99 (10 subscriptions)", pct(lat, 99), "ms"),
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
