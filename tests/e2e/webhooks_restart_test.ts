/**
 * Issue 51 "Done when": the service is killed (SIGKILL) between the commit of a run's finish and the event's
 * delivery; after the restart the event is delivered exactly as committed (same id, time and data, the
 * report's SHA-256), verified by the published `standardwebhooks` library and valid against the CloudEvents
 * schema. A `serve` child process over the test database (embedded data directory, or the PostgreSQL schema).
 *
 * Issue 51 point 3, "with several service instances, each event is delivered by one of them": two `serve`
 * processes over one PostgreSQL schema, both running the delivery worker against one subscription. Events are
 * queued through both instances until each instance has sent at least one delivery; every event then reached
 * the receiver exactly once (by `webhook-id`), each verified by the published `standardwebhooks` library. The
 * receiver tells which process sent a request from the connection's socket (/proc/net/tcp and the processes'
 * file descriptors: Linux).
 */
import assert from "node:assert/strict";
import { dbTest } from "../../core/harness/db.ts";
import { ServeProcess } from "../../core/harness/serve.ts";
import { TEST_ADMIN_TOKEN } from "../../core/harness/app.ts";
import {
  cloudEventErrors,
  type Received,
  startReceiver,
  until,
  verifyDelivery,
} from "../../core/harness/webhook_receiver.ts";

const auth = { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, "content-type": "application/json" };

async function call(base: string, method: string, path: string, body?: unknown) {
  const r = await fetch(base + path, {
    method,
    headers: auth,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await r.json();
  assert.ok(r.ok, `${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
  return json;
}

dbTest(
  "an event committed before a SIGKILL is delivered after the restart exactly as committed",
  async (db) => {
    const work = await Deno.makeTempDir({ prefix: "dutlab-webhooks-" });
    const rx = startReceiver();
    // The first instance's worker reads the outbox at its start, then only a minute later: the kill comes first.
    const first = ServeProcess.overTestDb(db, work, {
      DUT_WEBHOOK_POLL_MS: "60000",
      DUT_API_POLLER_DISABLE: "1",
    });
    let second: ServeProcess | null = null;
    try {
      await first.ready();
      const sub = await call(first.base, "POST", "/api/admin/webhooks", {
        name: "restart",
        url: rx.url("/r"),
        allowHttp: true,
        eventTypes: ["dutlab.run.finished"],
      });
      const run = await call(first.base, "POST", "/api/test-runs", {
        planIdentifier: "ngfw-throughput-decrypt-on",
      });
      const finished = await call(first.base, "POST", `/api/test-runs/${run.executionId}/finish`, {
        outcome: "passed",
        results: { latencySamplesMs: [10, 11, 12] },
      });
      const [pending] =
        (await call(first.base, "GET", `/api/admin/webhooks/${sub.id}/deliveries`)).deliveries;
      assert.equal(pending.state, "pending");
      first.child.kill("SIGKILL");
      await first.child.status;
      const killedAt = Date.now();
      assert.equal(rx.got.length, 0, "nothing was sent before the kill");

      second = ServeProcess.overTestDb(db, work, { DUT_WEBHOOK_POLL_MS: "50", DUT_API_POLLER_DISABLE: "1" });
      await second.ready();
      await until(() => rx.got.length > 0, 30_000, "the delivery after the restart");
      const r = rx.got[0]!;
      const event = verifyDelivery(r, sub.secret) as Record<string, unknown> & {
        data: Record<string, string>;
      };
      assert.equal(cloudEventErrors(event), null);
      assert.equal(event.id, pending.eventId, "the committed event, not a new one");
      assert.equal(event.type, "dutlab.run.finished");
      assert.equal(event.subject, run.executionId);
      assert.ok(Date.parse(event.time as string) < killedAt, "its time is the commit's, before the kill");
      assert.equal(event.data.reportSha256, finished.reportSha256);
      assert.equal(event.data.verdict, finished.verdict.value);
      assert.equal(event.data.reportUrl, `${first.base}/api/test-runs/${run.executionId}/report.json`);
      await until(
        async () =>
          (await call(second!.base, "GET", `/api/admin/webhooks/${sub.id}/deliveries`)).deliveries[0]
            .state ===
            "delivered",
        10_000,
        "the log",
      );
      assert.equal(rx.got.length, 1);
    } finally {
      if (second) await second.stop();
      await first.stop().catch(() => {});
      await rx.close();
      await Deno.remove(work, { recursive: true }).catch(() => {});
    }
  },
);

/** The pid (of `pids`) holding the loopback TCP socket whose local port is `port` and peer port `peer`. */
async function socketOwner(port: number, peer: number, pids: number[]): Promise<number | null> {
  const hex = (p: number) => p.toString(16).toUpperCase().padStart(4, "0");
  const line = (await Deno.readTextFile("/proc/net/tcp")).split("\n").map((l) => l.trim().split(/\s+/))
    .find((f) => f[1]?.endsWith(`:${hex(port)}`) && f[2]?.endsWith(`:${hex(peer)}`));
  if (!line) return null;
  const link = `socket:[${line[9]}]`;
  for (const pid of pids) {
    for await (const fd of Deno.readDir(`/proc/${pid}/fd`)) {
      if (await Deno.readLink(`/proc/${pid}/fd/${fd.name}`).catch(() => "") === link) return pid;
    }
  }
  return null;
}

dbTest(
  "two instances over one database deliver each event exactly once",
  async (db) => {
    const work = await Deno.makeTempDir({ prefix: "dutlab-webhooks-2-" });
    const env = { DUT_WEBHOOK_POLL_MS: "20", DUT_API_POLLER_DISABLE: "1" };
    const a = ServeProcess.overTestDb(db, work, env);
    const b = ServeProcess.overTestDb(db, work, env);
    const got: Array<Received & { pid: number | null }> = [];
    let pids: number[] = [];
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req, info) => {
      const body = await req.text();
      const pid = await socketOwner((info.remoteAddr as Deno.NetAddr).port, server.addr.port, pids);
      got.push({
        path: new URL(req.url).pathname,
        at: Date.now(),
        headers: Object.fromEntries(req.headers),
        body,
        pid,
      });
      return new Response(null, { status: 204 });
    });
    try {
      await Promise.all([a.ready(), b.ready()]);
      pids = [a.child.pid, b.child.pid];
      const sub = await call(a.base, "POST", "/api/admin/webhooks", {
        name: "two",
        url: `http://127.0.0.1:${server.addr.port}/two`,
        allowHttp: true,
        eventTypes: ["dutlab.run.finished"],
      });
      const queued: string[] = [];
      // Batches of pings, half through each instance, until both instances have delivered (at most 10).
      for (let batch = 0; batch < 10; batch++) {
        for (let i = 0; i < 10; i++) {
          const via = i % 2 === 0 ? a : b;
          queued.push((await call(via.base, "POST", `/api/admin/webhooks/${sub.id}/ping`)).eventId);
        }
        await until(() => got.length >= queued.length, 30_000, `batch ${batch} delivered`);
        if (pids.every((p) => got.some((g) => g.pid === p))) break;
      }
      // Every delivery is logged as delivered, and a while later nothing more has arrived.
      await until(
        async () =>
          (await call(b.base, "GET", `/api/admin/webhooks/${sub.id}/deliveries?limit=200`)).deliveries
            .every((d: { state: string }) => d.state === "delivered"),
        10_000,
        "the log",
      );
      await new Promise((r) => setTimeout(r, 500));
      const ids = got.map((g) => (verifyDelivery(g, sub.secret) as { id: string }).id);
      assert.equal(ids.length, queued.length, "as many requests as events");
      assert.deepEqual(new Set(ids), new Set(queued), "each event once");
      assert.deepEqual(ids, queued, "in the order they were queued (one subscription)");
      const split = pids.map((p) => got.filter((g) => g.pid === p).length);
      assert.ok(
        split.every((n) => n > 0),
        `both instances delivered: ${split.join(" + ")} of ${queued.length}`,
      );
      assert.equal(split[0]! + split[1]!, queued.length, "every request's sender is one of the two");
      console.log(`deliveries by instance: ${split.join(" + ")} of ${queued.length} events`);
    } finally {
      await Promise.all([a.stop(), b.stop()]).catch(() => {});
      await server.shutdown();
      await Deno.remove(work, { recursive: true }).catch(() => {});
    }
  },
  { only: ["postgres"] },
);
