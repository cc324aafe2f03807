import assert from "node:assert/strict";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";
import {
  cloudEventErrors,
  startReceiver,
  testWorker,
  until,
  verifyDelivery,
} from "../../harness/webhook_receiver.ts";
import { enqueueEvent } from "./outbox.ts";
import { backoffMs } from "./worker.ts";

type App = Awaited<ReturnType<typeof testServices>>["app"];
type Auth = Record<string, string>;

async function subscribe(app: App, auth: Auth, body: Record<string, unknown>) {
  const res = await app.request("/api/admin/webhooks", jsonReq("POST", { allowHttp: true, ...body }, auth));
  const json = await res.json();
  assert.equal(res.status, 201, JSON.stringify(json));
  return json as { id: string; secret: string };
}

async function deliveries(app: App, auth: Auth, id: string) {
  const res = await app.request(`/api/admin/webhooks/${id}/deliveries`, { headers: auth });
  assert.equal(res.status, 200);
  return (await res.json()).deliveries as Array<Record<string, unknown> & { attemptLog: unknown[] }>;
}

async function runOnce(app: App, auth: Auth) {
  const start = await app.request(
    "/api/test-runs",
    jsonReq("POST", { planIdentifier: "fixture-plan" }, auth),
  );
  const run = await start.json();
  assert.equal(start.status, 201, JSON.stringify(run));
  const fin = await app.request(
    `/api/test-runs/${run.executionId}/finish`,
    jsonReq("POST", { outcome: "passed", results: { latencySamplesMs: [10, 12, 14] } }, auth),
  );
  assert.equal(fin.status, 200);
  return await fin.json() as { executionId: string; reportSha256: string; verdict: { value: string } };
}

dbTest(
  "a finished run reaches its subscriber as a signed CloudEvent the outside judges accept",
  async (db) => {
    const { app, auth, svc } = await testServices(db, fixtureModules());
    const rx = startReceiver();
    const worker = testWorker(svc);
    try {
      const sub = await subscribe(app, auth, {
        name: "ci",
        url: rx.url("/hook"),
        eventTypes: ["dutlab.run.finished"],
      });
      assert.match(sub.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      // The secret is shown once: never in a read.
      const read = await (await app.request(`/api/admin/webhooks/${sub.id}`, { headers: auth })).text();
      assert.ok(!read.includes(sub.secret.slice(6)));
      const run = await runOnce(app, auth);
      worker.start();
      await until(() => rx.got.length === 1, 10_000, "the delivery");
      const r = rx.got[0]!;
      assert.equal(r.headers["content-type"], "application/cloudevents+json; charset=utf-8");
      const event = verifyDelivery(r, sub.secret);
      assert.equal(cloudEventErrors(event), null);
      assert.equal(event.specversion, "1.0");
      assert.equal(event.type, "dutlab.run.finished");
      assert.equal(event.id, r.headers["webhook-id"]);
      assert.equal(event.subject, run.executionId);
      const data = event.data as Record<string, string>;
      assert.equal(data.reportSha256, run.reportSha256);
      assert.equal(data.verdict, run.verdict.value);
      assert.equal(data.reportUrl, `http://localhost/api/test-runs/${run.executionId}/report.json`);
      // A wrong secret is refused by the same library (the judge can fail).
      assert.throws(() => verifyDelivery(r, `whsec_${btoa("x".repeat(32))}`));
      await until(
        async () => (await deliveries(app, auth, sub.id))[0]?.state === "delivered",
        5000,
        "the log",
      );
      const [d] = await deliveries(app, auth, sub.id);
      assert.equal(d!.statusCode, 204);
      assert.equal(d!.attempts, 1);
    } finally {
      await worker.stop();
      await rx.close();
    }
  },
);

dbTest("a receiver answering 500 five times then 200 gets the event, the attempts in the log", async (db) => {
  const { app, auth, svc } = await testServices(db, fixtureModules());
  const rx = startReceiver({
    "/flaky": (n) => n < 5 ? { status: 500 } : { status: 200 },
  });
  const worker = testWorker(svc, { failingAfter: 5 });
  try {
    const sub = await subscribe(app, auth, {
      name: "flaky",
      url: rx.url("/flaky"),
      eventTypes: ["dutlab.run.finished"],
    });
    await runOnce(app, auth);
    worker.start();
    await until(
      async () => (await deliveries(app, auth, sub.id))[0]?.state === "delivered",
      15_000,
      "delivery",
    );
    const [d] = await deliveries(app, auth, sub.id);
    assert.equal(d!.attempts, 6);
    const log = d!.attemptLog as Array<{ statusCode: number; response: string }>;
    assert.deepEqual(log.map((a) => a.statusCode), [500, 500, 500, 500, 500, 200]);
    assert.equal(log[0]!.response, "receiver says 500");
    // Every attempt carried the same event id, each one verifiable.
    assert.equal(new Set(rx.got.map((g) => g.headers["webhook-id"])).size, 1);
    for (const g of rx.got) assert.equal(cloudEventErrors(verifyDelivery(g, sub.secret)), null);
    const view = await (await app.request(`/api/admin/webhooks/${sub.id}`, { headers: auth })).json();
    assert.equal(view.failing, false, "a success clears the failing mark");
    assert.equal(view.consecutiveFailures, 0);
  } finally {
    await worker.stop();
    await rx.close();
  }
});

dbTest("a hanging receiver does not delay other subscriptions; Retry-After is honoured", async (db) => {
  const { app, auth, svc } = await testServices(db, fixtureModules());
  const rx = startReceiver({
    "/hang": () => "hang",
    "/later": (n) => n === 0 ? { status: 429, headers: { "retry-after": "1" } } : { status: 200 },
  });
  const worker = testWorker(svc, { timeoutMs: 30_000 });
  try {
    const hang = await subscribe(app, auth, {
      name: "hang",
      url: rx.url("/hang"),
      eventTypes: ["dutlab.run.finished"],
    });
    await subscribe(app, auth, { name: "ok", url: rx.url("/ok"), eventTypes: ["dutlab.run.finished"] });
    await subscribe(app, auth, { name: "later", url: rx.url("/later"), eventTypes: ["dutlab.run.finished"] });
    await runOnce(app, auth);
    await runOnce(app, auth);
    worker.start();
    await until(() => rx.got.filter((g) => g.path === "/ok").length === 2, 10_000, "both events at /ok");
    await until(() => rx.got.filter((g) => g.path === "/later").length === 3, 10_000, "/later retried");
    const later = rx.got.filter((g) => g.path === "/later");
    assert.ok(
      later[1]!.at - later[0]!.at >= 950,
      `Retry-After: 1 honoured (${later[1]!.at - later[0]!.at} ms)`,
    );
    // In order per subscription: the first event's id comes first at each endpoint.
    const ok = rx.got.filter((g) => g.path === "/ok").map((g) => JSON.parse(g.body).id);
    assert.deepEqual(later.slice(1).map((g) => JSON.parse(g.body).id), ok);
    // The hanging one got only its first event (the second waits behind it).
    assert.equal(rx.got.filter((g) => g.path === "/hang").length, 1);
    assert.equal((await deliveries(app, auth, hang.id)).filter((d) => d.state === "pending").length, 2);
  } finally {
    await rx.close();
    await worker.stop();
  }
});

dbTest(
  "a rolled-back change writes no event; rotation signs with both secrets during the overlap",
  async (db) => {
    const { app, auth, svc } = await testServices(db, fixtureModules());
    const rx = startReceiver();
    const worker = testWorker(svc);
    try {
      const sub = await subscribe(app, auth, {
        name: "rot",
        url: rx.url("/r"),
        eventTypes: ["dutlab.lab.synced"],
      });
      await assert.rejects(
        db.kysely.transaction().execute(async (tx) => {
          const id = await enqueueEvent(tx, "dutlab.lab.synced", "lab", {
            labName: "lab",
            generation: 1,
            created: ["fw1"],
            updated: [],
            deleted: [],
          }, { severity: "info" });
          assert.ok(id);
          throw new Error("roll back");
        }),
      );
      const n = await db.kysely.selectFrom("webhook_events").select((e) => e.fn.countAll<string>().as("n"))
        .executeTakeFirstOrThrow();
      assert.equal(Number(n.n), 0);
      const rot = await app.request(
        `/api/admin/webhooks/${sub.id}/rotate-secret`,
        jsonReq("POST", { overlapSeconds: 600 }, auth),
      );
      assert.equal(rot.status, 200);
      const rotated = await rot.json();
      assert.notEqual(rotated.secret, sub.secret);
      assert.ok(rotated.previousSecretUntil);
      const ping = await app.request(`/api/admin/webhooks/${sub.id}/ping`, jsonReq("POST", undefined, auth));
      assert.equal(ping.status, 202);
      worker.start();
      await until(() => rx.got.length === 1, 10_000, "the ping");
      const r = rx.got[0]!;
      assert.equal(r.headers["webhook-signature"]!.split(" ").length, 2);
      verifyDelivery(r, rotated.secret);
      verifyDelivery(r, sub.secret);
      assert.equal((verifyDelivery(r, rotated.secret) as { type: string }).type, "dutlab.webhook.ping");
      await until(
        async () => (await deliveries(app, auth, sub.id))[0]?.state === "delivered",
        5000,
        "logged",
      );
      const [d] = await deliveries(app, auth, sub.id);
      const again = await app.request(
        `/api/admin/webhooks/${sub.id}/deliveries/${d!.id}/redeliver`,
        jsonReq("POST", undefined, auth),
      );
      assert.equal(again.status, 202);
      await until(() => rx.got.length === 2, 10_000, "the redelivery");
      assert.equal(rx.got[1]!.headers["webhook-id"], r.headers["webhook-id"]);
    } finally {
      await worker.stop();
      await rx.close();
    }
  },
);

dbTest("webhook URLs: https by default, http only when allowed, guarded addresses refused", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const post = (body: Record<string, unknown>) =>
    app.request(
      "/api/admin/webhooks",
      jsonReq("POST", { name: "x", eventTypes: ["dutlab.run.finished"], ...body }, auth),
    );
  const plain = await post({ url: "http://127.0.0.1:9/h" });
  assert.equal(plain.status, 400);
  assert.equal((await plain.json()).errors[0].field, "url");
  const meta = await post({ url: "https://169.254.169.254/latest" });
  assert.equal(meta.status, 400);
  assert.match((await meta.json()).errors[0].message, /link-local|DUT_DEVICE_NETWORKS/);
  const badType = await post({ url: "https://hooks.example/x", eventTypes: ["nope"] });
  assert.equal(badType.status, 400);
  assert.equal((await post({ url: "https://hooks.example/x" })).status, 201);
});

Deno.test("backoff doubles up to its ceiling, with jitter in the upper half", () => {
  assert.equal(backoffMs(1, 1000, 60_000, () => 0), 500);
  assert.equal(backoffMs(1, 1000, 60_000, () => 1), 1000);
  assert.equal(backoffMs(4, 1000, 60_000, () => 1), 8000);
  assert.equal(backoffMs(20, 1000, 60_000, () => 1), 60_000);
});
