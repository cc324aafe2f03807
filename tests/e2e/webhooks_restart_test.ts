/**
 * Issue 51 "Done when": the service is killed (SIGKILL) between the commit of a run's finish and the event's
 * delivery; after the restart the event is delivered exactly as committed (same id, time and data, the
 * report's SHA-256), verified by the published `standardwebhooks` library and valid against the CloudEvents
 * schema. A `serve` child process over the test database (embedded data directory, or the PostgreSQL schema).
 */
import assert from "node:assert/strict";
import { dbTest } from "../../core/harness/db.ts";
import { ServeProcess } from "../../core/harness/serve.ts";
import { TEST_ADMIN_TOKEN } from "../../core/harness/app.ts";
import {
  cloudEventErrors,
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
