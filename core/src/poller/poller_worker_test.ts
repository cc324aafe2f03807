/**
 * The polling worker (spec 1.1, issue 8 points 2, 4, 8, 9): due rule, scans, the disable switch,
 * suspended devices, per-device time limits, overruns, one poll per device at a time, metrics, shutdown.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest } from "../../harness/db.ts";
import { jsonReq } from "../../harness/app.ts";
import { startWorker } from "../runtime/bootstrap.ts";
import { dueDevices, PollWorker, RAMP_MS, RAMP_POLLS } from "./worker.ts";
import { Foreground, QUIET_MS } from "../util/foreground.ts";
import type { Services } from "../runtime/services.ts";
import {
  addDevice,
  captureLogs,
  count,
  fixtureDevice,
  makeDue,
  messageOf,
  runtimeOf,
  setup,
  until,
  view,
} from "../../harness/poller_lab.ts";

const logs = await captureLogs();

/** A worker over test services that scans only when the test calls `scan()`. */
function manualWorker(svc: Services, concurrency = 8) {
  return new PollWorker(svc.db, svc.poller, svc.metrics, { scanSeconds: 3600, concurrency });
}

/**
 * What the worker sees of the poll service, standing for the poll cycle: `cycle` is one device's poll (it
 * calls `deviceDone` when the device's part is over); the device counts as polled until it resolves.
 */
function stubPoller(svc: Services, cycle: (opts: { deviceDone?: () => void }) => Promise<void>) {
  const polling = new Set<string>();
  return {
    isPolling: (id: string) => polling.has(id),
    get inflightCount() {
      return polling.size;
    },
    drain: async () => {},
    close: () => {},
    leases: svc.poller.leases,
    async poll(id: string, opts: { deviceDone?: () => void }) {
      polling.add(id);
      try {
        await cycle(opts);
      } finally {
        polling.delete(id);
      }
    },
  } as never;
}

const ntpHits = (d: { sim: { requests: Array<{ path: string }> } }) =>
  d.sim.requests.filter((r) => r.path === "/api/ntp").length;

dbTest(
  "the due rule selects enabled devices never polled or polled longer ago than their interval",
  async (db) => {
    const { svc } = await setup(db);
    const ago = async (id: string, seconds: number | null, interval: number, enabled = true) => {
      await db.kysely.updateTable("devices").set({
        last_poll_at: seconds === null ? null : sql`now() - ${seconds} * interval '1 second'`,
        poll_interval_seconds: interval,
        enabled,
      } as never).where("id", "=", id).execute();
      return id;
    };
    const add = () => addDevice(svc, "https://127.0.0.1:1");
    const never = await ago(await add(), null, 300);
    const over30 = await ago(await add(), 31, 30);
    await ago(await add(), 20, 30); // polled 20 s ago, interval 30: not due
    await ago(await add(), 299, 300); // not due
    const over300 = await ago(await add(), 301, 300);
    await ago(await add(), null, 30, false); // suspended, never polled
    await ago(await add(), 3600, 30, false); // suspended, long overdue
    assert.deepEqual(await dueDevices(db.kysely), [never, over300, over30]);
  },
);

dbTest("a scan polls exactly the due devices and records each poll on the device", async (db) => {
  const { svc } = await setup(db);
  await using dev = await fixtureDevice();
  const a = await addDevice(svc, dev.sim.url);
  const b = await addDevice(svc, dev.sim.url);
  const c = await addDevice(svc, dev.sim.url, { enabled: false });
  const w = manualWorker(svc);
  await w.scan();
  for (const id of [a, b]) {
    const v = await view(svc, id);
    assert.equal(v.lastPollStatus, "ok");
    assert.equal(v.lastPollError, "collected 3 snapshot(s)");
    assert.ok(v.lastPollAt);
  }
  assert.equal((await view(svc, c)).lastPollAt, null);
  assert.equal(ntpHits(dev), 2);
  // nothing is due now: the next scan polls nothing
  await w.scan();
  assert.equal(ntpHits(dev), 2);
  // b's interval elapses: only b is polled, and its status and time are updated
  const before = (await view(svc, b)).lastPollAt!;
  await makeDue(db, [b]);
  dev.state.password = "changed";
  await w.scan();
  assert.equal(ntpHits(dev), 2);
  const vb = await view(svc, b);
  assert.equal(vb.lastPollStatus, "auth_failed");
  assert.match(vb.lastPollError!, /HTTP 401/);
  assert.ok(Date.parse(vb.lastPollAt!) > Date.parse(before));
  assert.equal((await view(svc, a)).lastPollStatus, "ok");
  assert.equal(w.scans, 3);
  await w.stop(0);
});

dbTest(
  "DUT_API_POLLER_DISABLE=1 starts no worker, says so once, and manual snapshots still work",
  async (db) => {
    const { svc, app, auth } = await setup(db, { DUT_API_POLLER_DISABLE: "1", DUT_POLL_SCAN_SECONDS: "1" });
    await using dev = await fixtureDevice();
    const id = await addDevice(svc, dev.sim.url);
    logs.length = 0;
    assert.equal(await startWorker(runtimeOf(svc)), null);
    const notices = logs.filter((r) => /DUT_API_POLLER_DISABLE=1/.test(messageOf(r)));
    assert.equal(notices.length, 1);
    assert.equal(notices[0]!.level, "info");
    assert.match(await (await app.request("/metrics")).text(), /^dutlab_poll_lock_held 0$/m);
    await new Promise((r) => setTimeout(r, 1500)); // more than one scan period: still never polled
    assert.equal((await view(svc, id)).lastPollAt, null);
    assert.equal(dev.sim.requests.length, 0);
    const res = await app.request(`/api/admin/dut/devices/${id}/snapshot`, { method: "POST", headers: auth });
    const body = await res.json();
    assert.equal(body.ok, true);
    assert.equal(body.lastPollError, "collected 3 snapshot(s)");
    assert.equal(await count(db, "snapshots", id), 3);
  },
);

dbTest("without the disable switch startWorker polls due devices on its own", async (db) => {
  const { svc, app } = await setup(db, { DUT_POLL_SCAN_SECONDS: "1" });
  await using dev = await fixtureDevice();
  const id = await addDevice(svc, dev.sim.url);
  const rt = runtimeOf(svc);
  const w = await startWorker(rt);
  assert.ok(w);
  try {
    await until("the worker polled the device", async () => (await view(svc, id)).lastPollStatus === "ok");
    assert.match(await (await app.request("/metrics")).text(), /^dutlab_poll_lock_held 1$/m);
  } finally {
    await rt.close(); // the runtime's one shutdown path stops the worker it started
  }
  assert.equal(w.holdsLock, false);
  assert.match(await (await app.request("/metrics")).text(), /^dutlab_poll_lock_held 0$/m);
});

dbTest("PATCH enabled false suspends scheduled polls; manual snapshots still work", async (db) => {
  const { svc, app, auth } = await setup(db);
  await using dev = await fixtureDevice();
  const id = await addDevice(svc, dev.sim.url);
  const w = manualWorker(svc);
  await w.scan();
  assert.equal(ntpHits(dev), 1);
  const patch = await app.request(`/api/admin/dut/devices/${id}`, jsonReq("PATCH", { enabled: false }, auth));
  assert.equal((await patch.json()).enabled, false);
  await makeDue(db, [id]);
  await w.scan();
  assert.equal(ntpHits(dev), 1, "a suspended device is not polled by the scan");
  const res = await app.request(`/api/admin/dut/devices/${id}/snapshot`, { method: "POST", headers: auth });
  assert.equal((await res.json()).lastPollStatus, "ok");
  assert.equal(ntpHits(dev), 2);
  assert.equal((await view(svc, id)).enabled, false);
  await app.request(`/api/admin/dut/devices/${id}`, jsonReq("PATCH", { enabled: true }, auth));
  await makeDue(db, [id]);
  await w.scan();
  assert.equal(ntpHits(dev), 3, "polling resumes once enabled");
  await w.stop(0);
});

dbTest("a hung device times out alone: its scan and the next scan poll the other devices", async (db) => {
  const { svc } = await setup(db, { DUT_POLL_DEVICE_TIMEOUT_SECONDS: "3" });
  await using dev = await fixtureDevice();
  await using hung = await fixtureDevice();
  hung.sim.faults.hang = true;
  const h = await addDevice(svc, hung.sim.url);
  const a = await addDevice(svc, dev.sim.url);
  const b = await addDevice(svc, dev.sim.url);
  const w = manualWorker(svc, 4);
  const first = w.scan();
  await until(
    "a and b polled",
    async () => (await view(svc, a)).lastPollStatus === "ok" && (await view(svc, b)).lastPollStatus === "ok",
  );
  assert.ok(svc.poller.isPolling(h), "the hung device is still being polled");
  const c = await addDevice(svc, dev.sim.url);
  await w.scan(); // the next scan is not held up either
  assert.equal((await view(svc, c)).lastPollStatus, "ok");
  assert.ok(svc.poller.isPolling(h), "the next scan finished while the hung device was still polling");
  await first;
  const vh = await view(svc, h);
  assert.equal(vh.lastPollStatus, "timeout");
  assert.equal(vh.lastPollError, "Poll exceeded its time limit of 3000 ms");
  for (const id of [a, b, c]) {
    assert.ok(Date.parse((await view(svc, id)).lastPollAt!) < Date.parse(vh.lastPollAt!));
  }
  assert.equal(await count(db, "snapshots", h), 0);
  await w.stop(0);
});

dbTest(
  "due devices a scan could not start before the next scan are counted and logged as an overrun",
  async (db) => {
    const { svc, app } = await setup(db, { DUT_POLL_DEVICE_TIMEOUT_SECONDS: "10" });
    await using hung = await fixtureDevice();
    hung.sim.faults.hang = true;
    const ids = [await addDevice(svc, hung.sim.url), await addDevice(svc, hung.sim.url)];
    logs.length = 0;
    const w = new PollWorker(svc.db, svc.poller, svc.metrics, { scanSeconds: 1, concurrency: 1 });
    await w.start();
    try {
      await until("an overrun", () => w.overruns >= 1);
    } finally {
      await w.stop(0); // grace 0: the hung poll is cancelled and records nothing
    }
    assert.ok(
      logs.some((r) =>
        r.level === "warning" && /^Poll overrun: the previous scan still has due devices/.test(messageOf(r))
      ),
    );
    assert.match(await (await app.request("/metrics")).text(), /^dutlab_poll_overruns_total [1-9]\d*$/m);
    for (const id of ids) {
      assert.equal(
        (await view(svc, id)).lastPollAt,
        null,
        "a cancelled poll records nothing",
      );
    }
  },
);

dbTest("a manual snapshot during a scheduled poll returns that poll instead of polling twice", async (db) => {
  const { svc, app, auth } = await setup(db);
  await using dev = await fixtureDevice();
  dev.sim.faults.latencyMs = 300;
  const id = await addDevice(svc, dev.sim.url);
  const w = manualWorker(svc);
  const scan = w.scan();
  await until("the scheduled poll runs", () => svc.poller.isPolling(id));
  const res = await app.request(`/api/admin/dut/devices/${id}/snapshot`, { method: "POST", headers: auth });
  const body = await res.json();
  await scan;
  assert.equal(ntpHits(dev), 1, "one poll");
  assert.equal(await count(db, "snapshots", id), 3);
  assert.equal(body.lastPollAt, (await view(svc, id)).lastPollAt);
  assert.equal(body.lastPollStatus, "ok");
  // and a scan during a manual snapshot leaves the device alone
  await makeDue(db, [id]);
  const manual = app.request(`/api/admin/dut/devices/${id}/snapshot`, { method: "POST", headers: auth });
  await until("the manual poll runs", () => svc.poller.isPolling(id));
  await w.scan();
  assert.equal((await (await manual).json()).ok, true);
  assert.equal(ntpHits(dev), 2);
  assert.equal(await count(db, "snapshots", id), 6);
  await w.stop(0);
});

dbTest(
  "/metrics shows polls by vendor and status, durations, snapshots, scans, overruns and the lock",
  async (db) => {
    const { svc, app } = await setup(db);
    await using dev = await fixtureDevice();
    await addDevice(svc, dev.sim.url);
    await addDevice(svc, dev.sim.url);
    await addDevice(svc, dev.sim.url, { password: "wrong" });
    const w = manualWorker(svc);
    await w.scan();
    const text = await (await app.request("/metrics")).text();
    const lines = text.split("\n");
    const has = (line: string) => assert.ok(lines.includes(line), `metrics has ${line}\n${text}`);
    has('dutlab_polls_total{vendor="fixture-fw",status="ok"} 2');
    has('dutlab_polls_total{vendor="fixture-fw",status="auth_failed"} 1');
    has('dutlab_poll_duration_seconds_count{vendor="fixture-fw"} 3');
    has('dutlab_poll_duration_seconds_bucket{le="+Inf",vendor="fixture-fw"} 3');
    has("dutlab_snapshots_stored_total 6");
    has("dutlab_snapshot_payloads_stored_total 3"); // two identical devices: three distinct payloads
    has("dutlab_scan_duration_seconds_count 1");
    has("dutlab_poll_overruns_total 0");
    has("dutlab_poll_lock_held 1");
    for (const t of ["counter", "histogram", "gauge"]) {
      assert.match(
        text,
        new RegExp(`^# TYPE dutlab_\\w+ ${t}$`, "m"),
      );
    }
    await w.stop(0);
    assert.match(await (await app.request("/metrics")).text(), /^dutlab_poll_lock_held 0$/m);
  },
);

dbTest(
  "stop lets a running poll finish and write, then releases the lock to the next instance",
  async (db) => {
    const { svc } = await setup(db);
    await using dev = await fixtureDevice();
    dev.sim.faults.latencyMs = 300;
    const id = await addDevice(svc, dev.sim.url);
    const w = manualWorker(svc);
    const scan = w.scan();
    await until("the poll runs", () => svc.poller.isPolling(id));
    await w.stop(30_000);
    assert.equal(svc.poller.isPolling(id), false);
    assert.equal(
      (await view(svc, id)).lastPollStatus,
      "ok",
      "the in-flight poll was written before stop returned",
    );
    assert.equal(await count(db, "snapshots", id), 3);
    assert.equal(w.holdsLock, false);
    await scan;
    // another worker (instance) takes the lock at once
    const { svc: svc2 } = await setup(db);
    const w2 = manualWorker(svc2);
    await makeDue(db, [id]);
    await w2.scan();
    assert.equal(w2.holdsLock, true);
    assert.equal(ntpHits(dev), 2);
    await w2.stop(0);
  },
);

dbTest("stop cancels a poll still running after the grace period and records nothing", async (db) => {
  const { svc } = await setup(db, { DUT_POLL_DEVICE_TIMEOUT_SECONDS: "30" });
  await using hung = await fixtureDevice();
  hung.sim.faults.hang = true;
  const id = await addDevice(svc, hung.sim.url);
  const w = manualWorker(svc);
  const scan = w.scan();
  await until("the poll runs", () => svc.poller.isPolling(id));
  await w.stop(200);
  await scan;
  assert.equal(svc.poller.isPolling(id), false);
  assert.equal((await view(svc, id)).lastPollAt, null, "the device stays due for the next instance");
  assert.deepEqual(await dueDevices(db.kysely), [id]);
});

dbTest(
  "at most `concurrency` devices are polled at once; results waiting for the store free the device's place, twice `concurrency` polls in flight at most",
  async (db) => {
    const { svc } = await setup(db);
    for (let i = 0; i < 12; i++) await addDevice(svc, "https://127.0.0.1:1");
    // A poller that stands for the poll cycle: each device's part ends at once, the store's write waits for
    // the test (a slow group commit).
    let devices = 0, storing = 0, maxDevices = 0, maxStoring = 0, started = 0;
    let commit!: () => void;
    let committed = new Promise<void>((r) => commit = r);
    const poller = stubPoller(svc, async (opts) => {
      started++;
      maxDevices = Math.max(maxDevices, ++devices);
      await new Promise((r) => setTimeout(r, 5));
      devices--;
      opts.deviceDone?.();
      maxStoring = Math.max(maxStoring, ++storing);
      await committed;
      storing--;
    });
    const w = new PollWorker(svc.db, poller, svc.metrics, { scanSeconds: 3600, concurrency: 4 });
    const scan = w.scan();
    // Nothing is written yet: 4 devices polled at a time, 8 results waiting for the store; then no more.
    await until("8 results waiting", () => storing === 8);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(started, 8);
    assert.equal(maxDevices, 4);
    assert.equal(maxStoring, 8);
    commit(); // every waiting write is stored: the rest are polled
    committed = Promise.resolve();
    await scan;
    assert.equal(started, 12);
    assert.ok(maxDevices <= 4 && maxStoring <= 8, `${maxDevices} / ${maxStoring}`);
    await w.stop(0);
  },
);

dbTest(
  "while the API is busy at most busyConcurrency devices are polled at once; once it is quiet, concurrency again",
  async (db) => {
    const { svc } = await setup(db);
    for (let i = 0; i < 30; i++) await addDevice(svc, "https://127.0.0.1:1");
    let devices = 0, max = 0, started = 0;
    const poller = stubPoller(svc, async (opts) => {
      started++;
      max = Math.max(max, ++devices);
      await new Promise((r) => setTimeout(r, 10));
      devices--;
      opts.deviceDone?.();
    });
    const foreground = new Foreground(20);
    const done = foreground.enter(); // a request being answered
    const w = new PollWorker(svc.db, poller, svc.metrics, {
      scanSeconds: 3600,
      concurrency: 8,
      foreground,
      busyConcurrency: 2,
    });
    const scan = w.scan();
    await until("10 polls started", () => started >= 10);
    assert.equal(max, 2, "two at a time while the API is busy");
    done(); // the API goes quiet: the rest at up to 8 at once
    await scan;
    assert.equal(started, 30);
    assert.ok(max > 2 && max <= 8, `at most 8 once quiet (${max})`);
    await w.stop(0);
  },
);

dbTest(
  "the app counts its requests for the worker: busy while one is answered and QUIET_MS after",
  async (db) => {
    const { svc, app, auth } = await setup(db);
    await new Promise((r) => setTimeout(r, QUIET_MS + 20));
    assert.equal(svc.foreground.busy, false);
    const answer = app.request("/api/admin/dut/devices?limit=1", { headers: auth });
    assert.equal(svc.foreground.busy, true, "while the request is answered");
    assert.equal((await answer).status, 200);
    assert.equal(svc.foreground.busy, true, "just after its answer");
    await new Promise((r) => setTimeout(r, QUIET_MS + 20));
    assert.equal(svc.foreground.busy, false, "quiet again");
  },
);

dbTest(
  "with the API first, a scan starts at most RAMP_POLLS polls per RAMP_MS, even while the API is quiet",
  async (db) => {
    const { svc } = await setup(db);
    for (let i = 0; i < 24; i++) await addDevice(svc, "https://127.0.0.1:1");
    const starts: number[] = [];
    const poller = stubPoller(svc, async (opts) => {
      starts.push(performance.now());
      await new Promise((r) => setTimeout(r, 100));
      opts.deviceDone?.();
    });
    const w = new PollWorker(svc.db, poller, svc.metrics, {
      scanSeconds: 3600,
      concurrency: 64,
      foreground: new Foreground(),
      busyConcurrency: 1,
    });
    // Measured from before the scan, which no ramp step starts before: the first start may lag its step's
    // start (a loaded machine preempts the thread), so it is not a step's origin.
    const t0 = performance.now();
    await w.scan();
    assert.equal(starts.length, 24);
    assert.ok(starts.filter((t) => t - t0 < RAMP_MS).length <= RAMP_POLLS, "the first ramp step");
    assert.ok(starts[23]! - t0 >= 2 * RAMP_MS, `24 polls over three steps (${starts[23]! - t0} ms)`);
    await w.stop(0);
  },
);
