/**
 * Device leases (leases.ts, issue 48) on both back ends, one instance (N = 1, as in embedded mode): claims,
 * release, fencing of a write whose lease or slot moved on, the instance list and the lease-length check.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest } from "../../harness/db.ts";
import { PollWorker } from "./worker.ts";
import { listPollInstances, PollLeases } from "./leases.ts";
import { hashSnapshot, LostLockError, PollStore } from "./store.ts";
import { DeviceBusyError } from "./cycle.ts";
import { parseEnv } from "../runtime/config.ts";
import { StartupError } from "../errors.ts";
import { addDevice, count, fixtureDevice, makeDue, setup, until, view } from "../../harness/poller_lab.ts";

const leaseRows = async (db: { kysely: import("kysely").Kysely<never> }) =>
  (await sql<{ owner: string | null; epoch: string }>`select owner, epoch from device_leases`
    .execute(db.kysely)).rows;

dbTest(
  "one instance claims due devices in batches, polls each once and gives every lease back",
  async (db) => {
    const { svc, app } = await setup(db, { DUT_POLL_CLAIM_BATCH: "2" });
    await using dev = await fixtureDevice();
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await addDevice(svc, dev.sim.url));
    const w = new PollWorker(svc.db, svc.poller, svc.metrics, { scanSeconds: 3600, concurrency: 8 });
    try {
      await w.scan();
      assert.equal(await count(db, "snapshots"), 15, "every device polled once");
      assert.equal(w.holdsLock, true);
      const rows = await leaseRows(db as never);
      assert.equal(rows.length, 5);
      assert.ok(rows.every((r) => r.owner === null && Number(r.epoch) === 1), JSON.stringify(rows));
      await w.scan();
      assert.equal(await count(db, "snapshots"), 15, "nothing due, nothing claimed");
      await makeDue(db);
      await w.scan();
      assert.equal(await count(db, "snapshots"), 30);
      assert.ok((await leaseRows(db as never)).every((r) => Number(r.epoch) === 2));
      const m = await (await app.request("/metrics")).text();
      assert.match(m, /^dutlab_poll_lease_claims_total 10$/m);
      assert.match(m, /^dutlab_poll_leases_held 0$/m);
      assert.match(m, /^dutlab_poll_lease_takeovers_total 0$/m);
      // lateness is observed for the polls that had a due time (the second round: about an hour late)
      assert.match(m, /^dutlab_poll_lateness_seconds_count 5$/m);
      assert.match(m, /^dutlab_poll_lateness_seconds_bucket\{le="300"\} 0$/m);
    } finally {
      await w.stop(0);
    }
  },
);

dbTest(
  "a write whose lease moved on, or whose slot was polled already, is dropped and counted",
  async (db) => {
    const { svc, app } = await setup(db);
    await using dev = await fixtureDevice();
    const id = await addDevice(svc, dev.sim.url);
    const w = new PollWorker(svc.db, svc.poller, svc.metrics, { scanSeconds: 3600, concurrency: 8 });
    try {
      await w.scan();
      const first = (await view(svc, id)).lastPollAt;
      // The lease changes hands while the poll talks to the device (another instance took it over).
      dev.sim.faults.latencyMs = 300;
      await makeDue(db, [id]);
      const moved = (await view(svc, id)).lastPollAt;
      let scan = w.scan();
      await until("the poll runs", () => svc.poller.isPolling(id));
      await sql`update device_leases set owner = 'other:1:x', epoch = epoch + 1,
      expires_at = now() + interval '1 minute' where device_id = ${id}`.execute(db.kysely);
      await scan;
      assert.equal(await count(db, "snapshots", id), 3, "the stale poll stored no snapshot");
      assert.equal((await view(svc, id)).lastPollAt, moved, "nor its lastPoll* update");
      assert.notEqual(moved, first);
      assert.equal((await leaseRows(db as never))[0]!.owner, "other:1:x", "the new owner's lease is kept");

      // The same due slot was polled meanwhile (lastPollAt moved on): the repeat is a no-op.
      await sql`update device_leases set owner = null, expires_at = null where device_id = ${id}`
        .execute(db.kysely);
      scan = w.scan();
      await until("the poll runs", () => svc.poller.isPolling(id));
      await sql`update devices set last_poll_at = now() - interval '30 minutes' where id = ${id}`
        .execute(db.kysely);
      await scan;
      assert.equal(await count(db, "snapshots", id), 3, "the slot's repeat stored nothing");
      const m = await (await app.request("/metrics")).text();
      assert.match(m, /^dutlab_poll_fenced_writes_total 2$/m);
      assert.match(
        m,
        /^dutlab_polls_total\{vendor="fixture-fw",status="ok"\} 1$/m,
        "only the first poll counted",
      );
    } finally {
      await w.stop(0);
    }
  },
);

dbTest(
  "a replayed write of the same (device, due slot) is a no-op, whether it races the first write or follows it",
  async (db) => {
    const { svc, app } = await setup(db);
    const id = await addDevice(svc, "https://192.0.2.1");
    const [lease] = await svc.poller.leases.claimDue(1);
    assert.equal(lease?.deviceId, id);
    assert.equal(lease.slotAt, null, "the first slot: never polled");
    const row = await svc.devices.get(id);
    const outcome = {
      status: "ok" as const,
      error: "collected 1 snapshot(s)",
      snapshots: [await hashSnapshot("deploy_status", { slot: "first" })],
    };
    const module = { name: "@dutlab/adapter-fixture", version: "0.0.1" };
    const guard = svc.poller.leases.guard(lease);
    // Two stores: on PostgreSQL two transactions on two connections at once, the second waiting for the
    // first's locks (one session on PGlite: one after the other).
    const both = await Promise.allSettled(
      [new PollStore(db.kysely), new PollStore(db.kysely)].map((s) => s.write(row, module, outcome, guard)),
    );
    const stored = both.filter((r) => r.status === "fulfilled");
    const refused = both.filter((r) => r.status === "rejected" && r.reason instanceof LostLockError);
    assert.equal(stored.length, 1, `one write stored: ${JSON.stringify(both)}`);
    assert.equal(refused.length, 1, "the other refused as fenced");
    assert.equal(await count(db, "snapshots", id), 1);
    const at = (await view(svc, id)).lastPollAt;
    assert.ok(at !== null);
    // The same write once more, later (a retry after a lost commit acknowledgement): refused too.
    await assert.rejects(new PollStore(db.kysely).write(row, module, outcome, guard), LostLockError);
    assert.equal(await count(db, "snapshots", id), 1, "still one snapshot for the slot");
    assert.equal((await view(svc, id)).lastPollAt, at, "lastPollAt unchanged by the replays");
    assert.match(await (await app.request("/metrics")).text(), /^dutlab_poll_fenced_writes_total 2$/m);
    await svc.poller.leases.release(lease);
  },
);

dbTest("a manual snapshot takes the device's lease: a scan leaves the device to it", async (db) => {
  const { svc, app, auth } = await setup(db);
  await using dev = await fixtureDevice();
  const id = await addDevice(svc, dev.sim.url);
  const w = new PollWorker(svc.db, svc.poller, svc.metrics, { scanSeconds: 3600, concurrency: 8 });
  try {
    dev.sim.faults.latencyMs = 300;
    const manual = app.request(`/api/admin/dut/devices/${id}/snapshot`, { method: "POST", headers: auth });
    await until(
      "the manual poll runs",
      async () => (await leaseRows(db as never)).some((r) => r.owner !== null),
    );
    await w.scan(); // the device is due (never polled) but leased
    assert.equal((await manual).status, 200);
    assert.equal(await count(db, "snapshots", id), 3, "polled once, by the manual snapshot");
    assert.ok((await leaseRows(db as never)).every((r) => r.owner === null), "released");
  } finally {
    await w.stop(0);
  }
});

dbTest(
  "a queued scheduled poll that starts while a manual snapshot waits for its lease steps aside",
  async (db) => {
    const { svc, app, auth } = await setup(db);
    await using dev = await fixtureDevice();
    const id = await addDevice(svc, dev.sim.url);
    // The worker claimed the device (its lease is held) but has not started polling it yet.
    const lease = await svc.poller.leases.claimDevice(id);
    assert.ok(lease);
    const manual = app.request(`/api/admin/dut/devices/${id}/snapshot`, { method: "POST", headers: auth });
    await until("the manual snapshot waits", () => Promise.resolve(svc.poller.isPolling(id)));
    // Now the worker starts the queued poll: it must not join the manual one, which waits for its lease.
    await assert.rejects(
      svc.poller.poll(id, { guard: svc.poller.leases.guard(lease) }),
      DeviceBusyError,
    );
    await svc.poller.leases.release(lease); // what the worker does once the poll is over
    const r = await manual;
    assert.equal(r.status, 200, await r.clone().text());
    assert.equal((await r.json()).lastPollStatus, "ok");
    assert.equal(await count(db, "snapshots", id), 3, "polled once, by the manual snapshot");
  },
);

dbTest("a claim round running beside a manual snapshot's claim never takes that lease over", async (db) => {
  const { svc } = await setup(db);
  await using dev = await fixtureDevice();
  const id = await addDevice(svc, dev.sim.url); // never polled: due
  const leases = svc.poller.leases;
  for (let i = 0; i < 20; i++) {
    // The scan's claim round starts while the manual snapshot's claim is in flight (both of this instance).
    const [manual, round] = await Promise.all([leases.claimDevice(id), leases.claimDue()]);
    const mine = manual ?? round.find((l) => l.deviceId === id);
    assert.ok(mine, "one of them holds the device");
    assert.ok(!(manual && round.some((l) => l.deviceId === id)), `round ${i}: the lease was claimed twice`);
    const ok = await db.kysely.transaction().execute((tx) => leases.guard(mine)(tx));
    assert.equal(ok, true, `round ${i}: the holder's write is not fenced`);
    await leases.release(mine);
  }
});

dbTest(
  "a manual snapshot whose lease another instance took over mid-poll answers 503, storing nothing",
  async (db) => {
    const { svc, app, auth } = await setup(db);
    await using dev = await fixtureDevice();
    const id = await addDevice(svc, dev.sim.url);
    dev.sim.faults.latencyMs = 400;
    const manual = app.request(`/api/admin/dut/devices/${id}/snapshot`, { method: "POST", headers: auth });
    await until(
      "the manual poll holds the lease",
      async () => (await leaseRows(db as never)).some((r) => r.owner),
    );
    // This instance paused past its lease: it expired and another instance took the device.
    await sql`update device_leases set expires_at = now() - interval '1 second'`.execute(db.kysely);
    const other = new PollLeases(db.kysely, svc.metrics, {
      leaseSeconds: 60,
      batch: 8,
      id: "other-instance",
    });
    assert.ok(await other.claimDevice(id), "the other instance took the lease");
    const r = await manual;
    assert.equal(r.status, 503, await r.clone().text());
    assert.equal(r.headers.get("retry-after"), "5");
    assert.match((await r.json()).detail, /taken over by another poll instance/);
    assert.equal(await count(db, "snapshots", id), 0, "the fenced write stored nothing");
  },
);

dbTest("the instance list shows a started worker with its leases; stop removes it", async (db) => {
  const { svc } = await setup(db);
  const w = new PollWorker(svc.db, svc.poller, svc.metrics, { scanSeconds: 3600, concurrency: 8 });
  await w.start();
  try {
    await until("the instance reported", async () => (await listPollInstances(db.kysely)).length === 1);
    const [me] = await listPollInstances(db.kysely);
    assert.equal(me!.id, svc.poller.leases.id);
    assert.equal(me!.pid, Deno.pid);
    assert.equal(me!.leases, 0);
  } finally {
    await w.stop(0);
  }
  assert.deepEqual(await listPollInstances(db.kysely), []);
});

Deno.test("a lease not longer than a poll's time limit, or a bad batch size, is refused at start", () => {
  const bad = (env: Record<string, string>, re: RegExp) =>
    assert.throws(() => parseEnv(env), (e) => e instanceof StartupError && re.test(e.message));
  bad(
    { DUT_POLL_LEASE_SECONDS: "25" },
    /^DUT_POLL_LEASE_SECONDS: must be longer than DUT_POLL_DEVICE_TIMEOUT/m,
  );
  bad({ DUT_POLL_LEASE_SECONDS: "30", DUT_POLL_DEVICE_TIMEOUT_SECONDS: "30" }, /DUT_POLL_LEASE_SECONDS/);
  bad({ DUT_POLL_CLAIM_BATCH: "0" }, /^DUT_POLL_CLAIM_BATCH:/m);
  bad({ DUT_POLL_LEASE_SECONDS: "soon" }, /^DUT_POLL_LEASE_SECONDS:/m);
  assert.equal(parseEnv({ DUT_POLL_LEASE_SECONDS: "26" }).DUT_POLL_LEASE_SECONDS, 26);
});
