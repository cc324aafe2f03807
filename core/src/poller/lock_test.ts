/**
 * Multi-instance safety inside one process (PostgreSQL only): two workers on two connections to one
 * schema stand for two instances; the test drives their scans one by one (leases: leases.ts).
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest, tearDown } from "../../harness/db.ts";
import { type Db, openDatabase } from "../db/open.ts";
import { POLL_LOCK_CLASS, pollLockKey, PollWorker } from "./worker.ts";
import { DEVICE_LOCK_CLASS, deviceLockKey } from "./device_locks.ts";
import type { Services } from "../runtime/services.ts";
import { addDevice, count, fixtureDevice, makeDue, setup, until, view } from "../../harness/poller_lab.ts";

const only = { only: ["postgres" as const] };

/** A second instance: its own connections to the test schema, services and worker. */
async function instance(db: Db, concurrency = 8) {
  const { url, schema } = db as Db & { url: string; schema: string };
  const own = await openDatabase({ url, schema, poolSize: 3 });
  const { svc, app, auth } = await setup(own);
  const worker = new PollWorker(own, svc.poller, svc.metrics, { scanSeconds: 3600, concurrency });
  return {
    svc,
    app,
    auth,
    worker,
    async [Symbol.asyncDispose]() {
      await worker.stop(0);
      await tearDown(own); // the services built over `own` (setup's), before their database closes
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
  "two instances share the due devices through leases; the singular lock stays with one of them",
  async (db) => {
    await using dev = await fixtureDevice();
    // Three places each: neither instance can claim every due device in its first round trip.
    await using a = await instance(db, 3);
    await using b = await instance(db, 3);
    const ids = [];
    for (let i = 0; i < 6; i++) ids.push(await addDevice(a.svc, dev.sim.url));
    dev.sim.faults.latencyMs = 100;
    for (let round = 1; round <= 3; round++) {
      await makeDue(db);
      await Promise.all([a.worker.scan(), b.worker.scan()]);
      assert.equal(await count(db, "snapshots"), 18 * round, "every device polled once per round");
    }
    assert.equal(await polls(a.svc) + await polls(b.svc), 18);
    assert.ok(await polls(a.svc) > 0 && await polls(b.svc) > 0, "both instances polled");
    // One holder of the singular lock (compaction, re-marking, retention stay singular).
    assert.equal([a.worker.holdsLock, b.worker.holdsLock].filter(Boolean).length, 1);
    assert.ok(await lockHolder(db));
    // Every lease was given back after its poll.
    const held = await sql<
      { n: number }
    >`select count(*)::int as n from device_leases where owner is not null`
      .execute(db.kysely);
    assert.equal(held.rows[0]!.n, 0);
    assert.match(await a.svc.metrics.render(), /^dutlab_poll_lease_claims_total [1-9]\d*$/m);
    assert.match(await a.svc.metrics.render(), /^dutlab_poll_leases_held 0$/m);
  },
  only,
);

dbTest(
  "an instance that lost its lease mid-poll writes nothing; an expired lease is taken over",
  async (db) => {
    await using dev = await fixtureDevice();
    await using a = await instance(db);
    await using b = await instance(db);
    const id = await addDevice(a.svc, dev.sim.url);
    await a.worker.scan();
    assert.equal(await count(db, "snapshots", id), 3);
    const before = (await view(a.svc, id)).lastPollAt;

    // a's poll is talking to the device when its lease expires and b takes the device over.
    dev.sim.faults.latencyMs = 400;
    await makeDue(db, [id]);
    const scan = a.worker.scan();
    await until("a's poll runs", () => a.svc.poller.isPolling(id));
    await sql`update device_leases set expires_at = now() - interval '1 second' where device_id = ${id}`
      .execute(db.kysely);
    await b.worker.scan();
    await scan;
    assert.equal(await count(db, "snapshots", id), 6, "b's poll stored; a's stale poll stored nothing");
    assert.match(await a.svc.metrics.render(), /^dutlab_poll_fenced_writes_total 1$/m);
    assert.match(await b.svc.metrics.render(), /^dutlab_poll_lease_takeovers_total 1$/m);
    const lease = await sql<{ epoch: string }>`select epoch from device_leases where device_id = ${id}`
      .execute(db.kysely);
    assert.ok(Number(lease.rows[0]!.epoch) >= 3, "each claim bumped the epoch");
    assert.notEqual((await view(a.svc, id)).lastPollAt, before);

    // A dead holder's lease (never released) is taken over once it expires, not before.
    await makeDue(db, [id]);
    await sql`update device_leases set owner = 'dead:1:x', expires_at = now() + interval '1 hour'
      where device_id = ${id}`.execute(db.kysely);
    await a.worker.scan();
    assert.equal(await count(db, "snapshots", id), 6, "a live lease is respected");
    await sql`update device_leases set expires_at = now() - interval '1 second' where device_id = ${id}`
      .execute(db.kysely);
    await a.worker.scan();
    assert.equal(await count(db, "snapshots", id), 9);
  },
  only,
);

dbTest(
  "rolling upgrade: a device polled by an instance of a version before leases is skipped, not polled beside it",
  async (db) => {
    await using dev = await fixtureDevice();
    await using a = await instance(db);
    const id = await addDevice(a.svc, dev.sim.url);
    const other = await addDevice(a.svc, dev.sim.url);
    // An old instance holds the singular lock and, while it polls `id`, that device's advisory lock.
    const old = await db.reserve();
    const key = pollLockKey((db as Db & { schema: string }).schema);
    await old.query("select pg_advisory_lock($1, $2)", [POLL_LOCK_CLASS, key]);
    await old.query("select pg_advisory_lock($1, $2)", [DEVICE_LOCK_CLASS, deviceLockKey(id)]);
    await a.worker.scan();
    assert.equal(await count(db, "snapshots", id), 0, "not polled beside the old instance");
    assert.equal(await count(db, "snapshots", other), 3, "the new instance polls without the singular lock");
    assert.equal(a.worker.holdsLock, false);
    // The old instance's poll is over: the device (still due) is polled by the next scan.
    await old.query("select pg_advisory_unlock($1, $2)", [DEVICE_LOCK_CLASS, deviceLockKey(id)]);
    await a.worker.scan();
    assert.equal(await count(db, "snapshots", id), 3);
    await old.release();
  },
  only,
);

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
