/**
 * Issue 21 point 3: GET /api/events. A dashboard-style client follows the stream across a service restart
 * (and, on PostgreSQL, events of another instance arrive through LISTEN/NOTIFY) and misses nothing.
 */
import assert from "node:assert/strict";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";
import { openDatabase } from "../db/open.ts";
import { fixtureDevice } from "../../harness/poller_lab.ts";

interface Received {
  id: string | null;
  event: string;
  data: { id?: string; type: string; data: Record<string, unknown> };
}

/** A dashboard's EventSource: follows `url()`, reconnects with Last-Event-ID after any end or error. */
class Follower {
  received: Received[] = [];
  lastId: string | null = null;
  connections = 0;
  #stop = new AbortController();
  #done: Promise<void>;
  constructor(private url: () => string, private auth: Record<string, string>) {
    this.#done = this.#run();
  }
  async #run() {
    while (!this.#stop.signal.aborted) {
      try {
        const headers: Record<string, string> = { ...this.auth };
        if (this.lastId) headers["last-event-id"] = this.lastId;
        const res = await fetch(this.url(), { headers, signal: this.#stop.signal });
        assert.equal(res.status, 200);
        assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
        this.connections++;
        let buf = "";
        for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
          buf += chunk;
          let end: number;
          while ((end = buf.indexOf("\n\n")) >= 0) {
            const block = buf.slice(0, end);
            buf = buf.slice(end + 2);
            const f: Record<string, string> = {};
            for (const line of block.split("\n")) {
              if (line.startsWith(":")) continue;
              const i = line.indexOf(":");
              f[line.slice(0, i)] = line.slice(i + 1).replace(/^ /, "");
            }
            if (!f.event) continue;
            this.received.push({ id: f.id ?? null, event: f.event, data: JSON.parse(f.data!) });
            if (f.id) this.lastId = f.id;
          }
        }
      } catch (e) {
        if (this.#stop.signal.aborted) return;
        if (!(e instanceof TypeError) && !(e as Error).message?.includes("connection")) {
          // connection refused / reset while the service restarts: retry
        }
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  events() {
    return this.received.filter((r) => r.id !== null);
  }
  async waitFor(n: number, what: string) {
    for (let i = 0; i < 400 && this.events().length < n; i++) await new Promise((r) => setTimeout(r, 25));
    assert.equal(this.events().length, n, `${what}: ${JSON.stringify(this.events().map((e) => e.event))}`);
  }
  async stop() {
    this.#stop.abort();
    await this.#done;
  }
}

const device = (hostname: string, url = "https://127.0.0.1:9") => ({
  hostname,
  vendor: "fixture-fw",
  baseUrl: url,
  username: "admin",
  password: "fixture-pass",
  tlsVerifyMode: "insecure",
});

dbTest("a client follows /api/events across a restart (and instances) and misses no event", async (db) => {
  const a = await testServices(db, fixtureModules());
  let serverA = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, a.app.fetch);
  let url = `http://127.0.0.1:${serverA.addr.port}/api/events`;
  const client = new Follower(() => url, a.auth);
  try {
    for (let i = 0; i < 20 && client.connections === 0; i++) await new Promise((r) => setTimeout(r, 50));
    for (let i = 0; i < 3; i++) {
      assert.equal(
        (await a.app.request("/api/admin/dut/devices", jsonReq("POST", device(`ev-a${i}`), a.auth))).status,
        201,
      );
    }
    await client.waitFor(3, "live events of instance A");

    // Restart: A stops (its streams end), events happen meanwhile, B starts on the same database.
    await a.svc.events.close();
    await serverA.shutdown();
    const b = await testServices(db, fixtureModules());
    for (let i = 0; i < 4; i++) {
      await b.app.request("/api/admin/dut/devices", jsonReq("POST", device(`ev-b${i}`), b.auth));
    }
    serverA = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, b.app.fetch);
    url = `http://127.0.0.1:${serverA.addr.port}/api/events`;
    await client.waitFor(7, "replayed after the restart");
    await b.app.request("/api/admin/dut/devices", jsonReq("POST", device("ev-b-live"), b.auth));
    await client.waitFor(8, "live again");

    // Another instance on the same PostgreSQL: its events reach B's clients through LISTEN/NOTIFY.
    const pg = db as typeof db & { url?: string; schema?: string };
    let expected = 8;
    if (pg.url) {
      const other = await openDatabase({ url: pg.url, schema: pg.schema, poolSize: 2 });
      try {
        const c = await testServices(other, fixtureModules());
        await c.app.request("/api/admin/dut/devices", jsonReq("POST", device("ev-c"), c.auth));
        await c.app.request("/api/admin/dut/devices", jsonReq("POST", device("ev-c2"), c.auth));
        expected = 10;
        await client.waitFor(expected, "events of another instance");
      } finally {
        await other.close();
      }
    }
    const stored = await db.kysely.selectFrom("events").select(["id", "type"]).orderBy("id").execute();
    const got = client.events();
    assert.deepEqual(
      got.map((e) => e.id),
      stored.map((s) => String(s.id)),
      "every stored event, once, in order",
    );
    assert.equal(stored.length, expected);
    assert.deepEqual(
      got.map((e) => e.data.data.hostname),
      ["ev-a0", "ev-a1", "ev-a2", "ev-b0", "ev-b1", "ev-b2", "ev-b3", "ev-b-live", "ev-c", "ev-c2"].slice(
        0,
        expected,
      ),
    );
    assert.ok(got.every((e) => e.event === "device.changed" && e.data.type === "device.changed"));
    assert.ok(client.connections >= 2);
    await b.svc.events.close();
  } finally {
    await client.stop();
    await serverA.shutdown();
  }
});

dbTest("poll, status, snapshot, run and alert events; resume and bad Last-Event-ID", async (db) => {
  const { app, auth, svc } = await testServices(db, fixtureModules(), {
    DUT_POLL_DEVICE_TIMEOUT_SECONDS: "5",
  });
  await using dev = await fixtureDevice();
  const res = await app.request(
    "/api/admin/dut/devices",
    jsonReq("POST", device("fw-ev", dev.sim.url), auth),
  );
  const { deviceId } = await res.json();
  const snap = () =>
    app.request(`/api/admin/dut/devices/${deviceId}/snapshot`, jsonReq("POST", undefined, auth));
  assert.equal((await snap()).status, 200);
  const run =
    await (await app.request("/api/test-runs", jsonReq("POST", { planIdentifier: "fixture-plan" }, auth)))
      .json();
  dev.state.decryptRules = 0;
  assert.equal((await snap()).status, 200);
  await app.request(
    `/api/test-runs/${run.executionId}/finish`,
    jsonReq("POST", { outcome: "passed", results: { latencySamplesMs: [1] } }, auth),
  );

  // Replay from the beginning through the API (Last-Event-ID 0), read until run.finished.
  const r = await app.request("/api/events", { headers: { ...auth, "last-event-id": "0" } });
  assert.equal(r.status, 200);
  const reader = r.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("event: run.finished")) text += (await reader.read()).value ?? "";
  const clients = async () => (await svc.metrics.eventClients.get()).values[0]?.value;
  assert.equal(await clients(), 1);
  await reader.cancel();
  for (let i = 0; i < 100 && await clients() !== 0; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(await clients(), 0, "a client that leaves is no longer counted");
  const events = text.split("\n\n").filter((b) => b.includes("\nid: ") || b.startsWith("id: ")).map((b) => {
    const data = JSON.parse(b.split("\n").find((l) => l.startsWith("data: "))!.slice(6));
    return data as { type: string; data: Record<string, unknown> };
  });
  assert.deepEqual(events.map((e) => e.type), [
    "device.changed",
    "poll.finished",
    "device.status_changed",
    "snapshot.stored",
    "run.started",
    "poll.finished",
    "snapshot.stored",
    "alert.raised",
    "run.finished",
  ]);
  const byType = (t: string) => events.filter((e) => e.type === t);
  assert.deepEqual(byType("device.status_changed")[0]!.data.from, null);
  assert.equal(byType("device.status_changed")[0]!.data.to, "ok");
  assert.equal(byType("poll.finished")[0]!.data.summary, "collected 3 snapshot(s)");
  const stored = byType("snapshot.stored")[1]!.data as {
    snapshots: Array<{ id: string }>;
    testRunExecutionId: string;
  };
  assert.equal(stored.testRunExecutionId, run.executionId);
  const listed = await (await app.request(`/api/admin/dut/snapshots?testRunExecutionId=${run.executionId}`, {
    headers: auth,
  })).json();
  assert.deepEqual(
    stored.snapshots.map((s) => s.id).sort(),
    listed.snapshots.map((s: { id: string }) => s.id).sort(),
  );
  assert.deepEqual(
    [
      byType("alert.raised")[0]!.data.name,
      byType("alert.raised")[0]!.data.from,
      byType("alert.raised")[0]!.data.to,
    ],
    ["TLSDecryptModeChanged", "on", "off"],
  );
  assert.equal(byType("run.finished")[0]!.data.outcome, "passed");

  for (const bad of ["abc", "-1", "1e3"]) {
    const b = await app.request("/api/events", { headers: { ...auth, "last-event-id": bad } });
    assert.equal(b.status, 400, bad);
  }
  assert.equal((await app.request("/api/events")).status, 401);
  await svc.events.close();
});
