/**
 * Multi-instance safety inside one process (PostgreSQL only): two workers on two connections to one
 * schema stand for two instances; the test drives their scans one by one.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest } from "@dutlab/core/testing";
import { type Db, openDatabase } from "../db/open.ts";
import { POLL_LOCK_CLASS, pollLockKey, PollWorker } from "./worker.ts";
import type { Services } from "../runtime/services.ts";
import { addDevice, count, fixtureDevice, makeDue, setup, until, view } from "../../testing/poller_lab.ts";

const only = { only: ["postgres" as const] };

/** A second instance: its own connections to the test schema, services and worker. */
async function instance(db: Db) {
  const { url, schema } = db as Db & { url: string; schema: string };
  const own = await openDatabase({ url, schema, poolSize: 3 });
  const { svc, app, auth } = await setup(own);
  const worker = new PollWorker(own, svc.poller, svc.metrics, { scanSeconds: 3600, concurrency: 8 });
  return {
    svc,
    app,
    auth,
    worker,
    async [Symbol.asyncDispose]() {
      await worker.stop(0);
      await own.close();
    },
  };
}

/** The backend holding this schema's poll lock, if any. */
async function lockHolder(db: Db): Promise<number | null> {
  const { schema } = db as Db & { schema: string };
  const r = await sql<{ pid: number }>`select pid from pg_locks where locktype = 'advisory'
    and classid = ${POLL_LOCK_CLASS} and objid = ${pollLockKey(schema)} and objsubid = 2 and granted`
    .execute(db.kysely);
  return r.rows[0]?.pid ?? null;
}

const polls = async (svc: Services) =>
  (await svc.metrics.polls.get()).values.reduce((a, v) => a + v.value, 0);

dbTest(
  "the lock holder keeps polling every scan; another instance retries each scan and polls nothing",
  async (db) => {
    await using dev = await fixtureDevice();
    await using a = await instance(db);
    await using b = await instance(db);
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await addDevice(a.svc, dev.sim.url));
    await a.worker.scan();
    assert.equal(a.worker.holdsLock, true);
    for (let round = 1; round <= 3; round++) {
      await makeDue(db);
      await b.worker.scan(); // b scans first after the devices became due, and cannot poll them
      assert.equal(b.worker.holdsLock, false);
      assert.equal(await count(db, "snapshots"), 9 * round, "b wrote nothing");
      await a.worker.scan(); // the holder's next scan polls every due device
      assert.equal(await count(db, "snapshots"), 9 * (round + 1));
    }
    assert.equal(await polls(a.svc), 12);
    assert.equal(await polls(b.svc), 0);
    assert.equal(b.worker.scans, 0);
    assert.equal(a.worker.scans, 4);
    assert.match(await b.svc.metrics.render(), /^dutlab_poll_lock_held 0$/m);
    assert.match(await a.svc.metrics.render(), /^dutlab_poll_lock_held 1$/m);
    // the holder stops: the other instance's next scan takes over and polls what is due
    await a.worker.stop(1000);
    assert.equal(await lockHolder(db), null, "stop released the lock");
    await makeDue(db);
    await b.worker.scan();
    assert.equal(b.worker.holdsLock, true);
    assert.equal(await polls(b.svc), 3);
  },
  only,
);

dbTest("a killed lock session stops writing poll results until the lock is taken again", async (db) => {
  await using dev = await fixtureDevice();
  await using a = await instance(db);
  await using b = await instance(db);
  const id = await addDevice(a.svc, dev.sim.url);
  await a.worker.scan();
  assert.equal(await count(db, "snapshots", id), 3);
  const before = (await view(a.svc, id)).lastPollAt;

  // A poll is running when the lock session dies and another session takes the lock.
  dev.sim.faults.latencyMs = 300;
  await makeDue(db, [id]);
  const scan = a.worker.scan();
  await until("the poll runs", () => a.svc.poller.isPolling(id));
  const pid = await lockHolder(db);
  assert.ok(pid);
  await sql`select pg_terminate_backend(${pid})`.execute(db.kysely);
  await until("the lock is free", async () => (await lockHolder(db)) === null);
  const thief = await db.reserve();
  const key = pollLockKey((db as Db & { schema: string }).schema);
  const [row] = await thief.query<{ ok: boolean }>("select pg_try_advisory_lock($1, $2) as ok", [
    POLL_LOCK_CLASS,
    key,
  ]);
  assert.equal(row?.ok, true);
  await scan;
  assert.equal(await count(db, "snapshots", id), 3, "the lost lock's poll wrote no snapshot");
  const v = await view(a.svc, id);
  assert.notEqual(v.lastPollAt, before, "makeDue moved the last poll back");
  assert.ok(Date.parse(v.lastPollAt!) < Date.parse(before!), "and the lost poll did not write it");
  assert.equal(a.worker.holdsLock, false);
  assert.match(await a.svc.metrics.render(), /^dutlab_poll_lock_held 0$/m);

  // While someone else holds the lock, scans poll nothing.
  const hits = dev.sim.requests.length;
  await a.worker.scan();
  assert.equal(a.worker.holdsLock, false);
  assert.equal(dev.sim.requests.length, hits, "no device contacted without the lock");

  // The holder dies: the next scan of either instance takes the lock and polls the due device.
  await thief.release();
  await until("the lock is free", async () => (await lockHolder(db)) === null);
  await b.worker.scan();
  assert.equal(b.worker.holdsLock, true);
  assert.equal(await count(db, "snapshots", id), 6);
  // and the first instance takes it again once b is gone
  await b.worker.stop(1000);
  await makeDue(db, [id]);
  await a.worker.scan();
  assert.equal(a.worker.holdsLock, true);
  assert.equal(await count(db, "snapshots", id), 9);

  // The lock session dies while idle and someone else takes the lock: the next scan finds out before
  // contacting any device.
  await sql`select pg_terminate_backend(${await lockHolder(db)})`.execute(db.kysely);
  await until("the lock is free", async () => (await lockHolder(db)) === null);
  const thief2 = await db.reserve();
  await thief2.query("select pg_advisory_lock($1, $2)", [POLL_LOCK_CLASS, key]);
  await makeDue(db, [id]);
  const seen = dev.sim.requests.length;
  await a.worker.scan();
  assert.equal(a.worker.holdsLock, false);
  assert.equal(dev.sim.requests.length, seen, "no device contacted after the lock was lost");
  await thief2.release();
}, only);

dbTest(
  "across instances a device is polled once at a time: manual snapshots wait, scans skip",
  async (db) => {
    await using dev = await fixtureDevice();
    dev.sim.faults.latencyMs = 200;
    await using a = await instance(db);
    await using b = await instance(db);
    const id = await addDevice(a.svc, dev.sim.url);
    const ntpHits = () => dev.sim.requests.filter((r) => r.path === "/api/ntp").length;
    const snapshot = (x: typeof b) =>
      x.app.request(`/api/admin/dut/devices/${id}/snapshot`, { method: "POST", headers: x.auth });

    // a's scheduled poll is talking to the device when b gets a manual snapshot: b waits and reuses it
    const scan = a.worker.scan();
    await until("a's poll reached the device", () => dev.sim.requests.length > 0);
    const res = await (await snapshot(b)).json();
    await scan;
    assert.equal(ntpHits(), 1, "one poll");
    assert.equal(await count(db, "snapshots", id), 3);
    const v = await view(a.svc, id);
    assert.deepEqual(res, {
      ok: true,
      lastPollStatus: "ok",
      lastPollError: v.lastPollError,
      lastPollAt: v.lastPollAt,
    });
    assert.equal(await polls(b.svc), 0, "b did not poll");

    // b's manual snapshot is talking to the device when a's scan finds it due: a skips it
    await makeDue(db, [id]);
    const seen = dev.sim.requests.length;
    const manual = snapshot(b);
    await until("b's poll reached the device", () => dev.sim.requests.length > seen);
    await a.worker.scan();
    assert.equal((await (await manual).json()).ok, true);
    assert.equal(ntpHits(), 2);
    assert.equal(await polls(a.svc), 1, "a's scan skipped the device");
    assert.equal(await count(db, "snapshots", id), 6);
  },
  only,
);
