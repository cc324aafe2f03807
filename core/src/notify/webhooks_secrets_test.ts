import assert from "node:assert/strict";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";
import { startReceiver, testWorker, until, verifyDelivery } from "../../harness/webhook_receiver.ts";
import { buildKeyRing, secretCipher } from "../runtime/services.ts";
import { reencryptWebhookSecrets } from "./secrets.ts";

type App = Awaited<ReturnType<typeof testServices>>["app"];
type Auth = Record<string, string>;

async function subscribe(app: App, auth: Auth, body: Record<string, unknown>) {
  const res = await app.request("/api/admin/webhooks", jsonReq("POST", { allowHttp: true, ...body }, auth));
  const json = await res.json();
  assert.equal(res.status, 201, JSON.stringify(json));
  return json as { id: string; secret: string };
}

const ping = async (app: App, auth: Auth, id: string) =>
  assert.equal(
    (await app.request(`/api/admin/webhooks/${id}/ping`, jsonReq("POST", undefined, auth))).status,
    202,
  );

const failingGauge = async (app: App) => {
  const text = await (await app.request("/metrics")).text();
  const line = text.split("\n").find((l) => l.startsWith("dutlab_webhook_subscriptions_failing "));
  assert.ok(line, "the gauge is exposed");
  return Number(line.split(" ")[1]);
};

dbTest(
  "signing secrets are encrypted at rest with the credential key; a plain row of before still signs",
  async (db) => {
    const { app, auth, svc } = await testServices(db, fixtureModules());
    const rx = startReceiver();
    const worker = testWorker(svc);
    try {
      const sub = await subscribe(app, auth, {
        name: "enc",
        url: rx.url("/e"),
        eventTypes: ["dutlab.lab.synced"],
      });
      const row = await db.kysely.selectFrom("webhook_subscriptions").select(["secret", "previous_secret"])
        .where("id", "=", sub.id).executeTakeFirstOrThrow();
      assert.match(
        row.secret,
        new RegExp(`^v1\\.${svc.keys.current.id}\\.`),
        "AES-GCM, the credential key's id",
      );
      assert.ok(!row.secret.includes(sub.secret.slice(6)), "no plain secret in the row");
      // The whole table's text holds no secret (neither does a read of the subscription).
      const dump = JSON.stringify(await db.kysely.selectFrom("webhook_subscriptions").selectAll().execute());
      assert.ok(!dump.includes(sub.secret.slice(6)));
      const audit = JSON.stringify(await db.kysely.selectFrom("audit_log").selectAll().execute());
      assert.ok(
        audit.includes(sub.id) && !audit.includes(sub.secret.slice(6)),
        "audited, without the secret",
      );
      const read = await (await app.request(`/api/admin/webhooks/${sub.id}`, { headers: auth })).text();
      assert.ok(!read.includes(sub.secret.slice(6)) && !read.includes(row.secret));
      // A ciphertext copied to another subscription does not decrypt there (the id is associated data).
      const other = await subscribe(app, auth, {
        name: "other",
        url: rx.url("/o"),
        eventTypes: ["dutlab.lab.synced"],
      });
      worker.start();
      await ping(app, auth, sub.id);
      await until(() => rx.got.length === 1, 10_000, "the ping");
      verifyDelivery(rx.got[0]!, sub.secret);
      // A row written before encryption (plain `whsec_`): still signs, then encrypted by the start-up pass.
      const legacy = "whsec_" + btoa(String.fromCharCode(...new Uint8Array(32).fill(7)));
      await db.kysely.updateTable("webhook_subscriptions").set({ secret: legacy }).where("id", "=", other.id)
        .execute();
      await ping(app, auth, other.id);
      await until(() => rx.got.length === 2, 10_000, "the legacy ping");
      verifyDelivery(rx.got[1]!, legacy);
      assert.deepEqual(await reencryptWebhookSecrets(db.kysely, secretCipher(svc.keys)), {
        rotated: 1,
        undecryptable: 0,
      });
      const after = await db.kysely.selectFrom("webhook_subscriptions").select("secret")
        .where("id", "=", other.id).executeTakeFirstOrThrow();
      assert.match(after.secret, /^v1\./);
      await ping(app, auth, other.id);
      await until(() => rx.got.length === 3, 10_000, "the ping after re-encryption");
      verifyDelivery(rx.got[2]!, legacy);
      // A credential key rotation: secrets (current and previous) move to the new key and still sign.
      const rot = await app.request(
        `/api/admin/webhooks/${sub.id}/rotate-secret`,
        jsonReq("POST", { overlapSeconds: 600 }, auth),
      );
      const rotated = await rot.json() as { secret: string };
      const next = await buildKeyRing("cd".repeat(32), svc.config.DUT_CRED_ENC_KEY);
      assert.deepEqual(await reencryptWebhookSecrets(db.kysely, secretCipher(next)), {
        rotated: 2,
        undecryptable: 0,
      });
      const moved = await db.kysely.selectFrom("webhook_subscriptions").select(["secret", "previous_secret"])
        .where("id", "=", sub.id).executeTakeFirstOrThrow();
      assert.ok(moved.secret.startsWith(`v1.${next.current.id}.`));
      assert.ok(moved.previous_secret!.startsWith(`v1.${next.current.id}.`));
      await worker.stop();
      const worker2 = testWorker({ db: svc.db, keys: next });
      worker2.start();
      try {
        await ping(app, auth, sub.id);
        await until(() => rx.got.length === 4, 10_000, "the ping after the key rotation");
        verifyDelivery(rx.got[3]!, rotated.secret);
        verifyDelivery(rx.got[3]!, sub.secret);
      } finally {
        await worker2.stop();
      }
    } finally {
      await worker.stop();
      await rx.close();
    }
  },
);

dbTest("GET /metrics counts the failing subscriptions, and a success clears them", async (db) => {
  const { app, auth, svc } = await testServices(db, fixtureModules());
  let healthy = false;
  const rx = startReceiver({ "/down": () => healthy ? { status: 204 } : { status: 500 } });
  const worker = testWorker(svc, { failingAfter: 3 });
  try {
    const down = await subscribe(app, auth, {
      name: "down",
      url: rx.url("/down"),
      eventTypes: ["dutlab.lab.synced"],
    });
    await subscribe(app, auth, { name: "up", url: rx.url("/up"), eventTypes: ["dutlab.lab.synced"] });
    assert.equal(await failingGauge(app), 0);
    worker.start();
    await ping(app, auth, down.id);
    await until(
      async () =>
        (await (await app.request(`/api/admin/webhooks/${down.id}`, { headers: auth })).json()).failing,
      10_000,
      "failing after 3 attempts",
    );
    assert.equal(await failingGauge(app), 1);
    healthy = true;
    await until(async () => await failingGauge(app) === 0, 10_000, "the gauge back to 0 after a success");
  } finally {
    await worker.stop();
    await rx.close();
  }
});
