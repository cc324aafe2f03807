/**
 * Issue 52 over the HTTP API with the real modules and simulated firewalls: readiness at reserving time (one
 * failing device grants nothing and is named, optionally marked out of service), what a reservation
 * protects (PATCH of connection fields, disable, delete, lab apply modify and prune: 409 naming the holder;
 * the admin's forced variant in the audit log), a run on a testbed holding its reservation until it
 * finishes, the device list showing the holder, the events, the webhooks.
 */
import assert from "node:assert/strict";
import { dbTest } from "../../core/harness/db.ts";
import { jsonReq, testServices } from "../../core/harness/app.ts";
import type { Db } from "../../core/harness/core.ts";
import { modules } from "../../modules.gen.ts";
import { fetchReport, finishRun, register } from "../../core/harness/runs_lab.ts";
import { adapterForRole } from "../../core/harness/lab.ts";
import {
  cloudEventErrors,
  startReceiver,
  testWorker,
  until,
  verifyDelivery,
} from "../../core/harness/webhook_receiver.ts";

const ON = "ngfw-throughput-decrypt-on";
/** The lab's firewalls: the enabled adapter of role ngfw, its simulator loaded by package name. */
const NGFW = adapterForRole(modules, "ngfw");
const { labControls, startSimulatedDevice } = await NGFW.sim();

async function lab(db: Db) {
  const { app, auth, svc } = await testServices(db, modules);
  const sims = [await startSimulatedDevice(), await startSimulatedDevice()];
  for (const s of sims) await labControls(s).start?.(); // the lab's firewalls decrypt (the tour's state)
  const ids = [
    await register(app, auth, NGFW.vendor, "fw-1", sims[0]!),
    await register(app, auth, NGFW.vendor, "fw-2", sims[1]!),
  ];
  const call = async (method: string, path: string, body?: unknown, headers = auth) => {
    const res = await app.request(path, jsonReq(method, body, headers));
    return { status: res.status, body: await res.json() };
  };
  const put = await call("PUT", "/api/admin/testbeds/edge", { selector: { hostnames: ["fw-1", "FW-2"] } });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  assert.deepEqual(put.body.devices.map((d: { hostname: string }) => d.hostname), ["fw-1", "fw-2"]);
  const audit = async () =>
    (await call("GET", "/api/admin/audit")).body.entries as Array<Record<string, string>>;
  return {
    app,
    auth,
    svc,
    sims,
    ids,
    call,
    audit,
    async [Symbol.asyncDispose]() {
      await Promise.allSettled(sims.map((s) => s.close()));
    },
  };
}

dbTest("readiness with one failing device grants nothing and names the check and the device", async (db) => {
  await using l = await lab(db);
  labControls(l.sims[1]!).settings.decrypt!.apply("off");
  const r = await l.call("POST", "/api/admin/reservations", {
    testbed: "edge",
    holder: "ci-job-17",
    readiness: { planIdentifier: ON },
  });
  assert.equal(r.status, 422, JSON.stringify(r.body));
  assert.equal(r.body.type, "urn:dutlab:problem:not-ready");
  assert.match(r.body.detail, /^Nothing reserved: ngfw-decrypt-state-matches-plan fail on fw-2: /);
  assert.deepEqual(
    r.body.notReady.map((f: Record<string, string>) => `${f.checkId} ${f.hostname}`),
    ["ngfw-decrypt-state-matches-plan fw-2"],
  );
  assert.ok(r.body.notReady[0].snapshotId, "the failure cites the fresh snapshot");
  assert.deepEqual(await l.svc.reservations.holds(), [], "nothing was reserved");
  assert.deepEqual((await l.call("GET", "/api/admin/reservations")).body.reservations, []);
  // Asked to, the failing device is marked out of service with the evidence; the healthy one is untouched.
  const marked = await l.call("POST", "/api/admin/reservations", {
    testbed: "edge",
    readiness: { planIdentifier: ON, markOutOfService: true },
  });
  assert.equal(marked.status, 422);
  assert.deepEqual(marked.body.markedOutOfService, ["fw-2"]);
  const fw2 = (await l.call("GET", `/api/admin/dut/devices/${l.ids[1]}`)).body;
  assert.equal(fw2.enabled, false);
  assert.match(
    fw2.notes,
    /out of service since .* \(readiness for ngfw-throughput-decrypt-on\): ngfw-decrypt-state-matches-plan fail: .* \(snapshot \d+\)/,
  );
  assert.equal((await l.call("GET", `/api/admin/dut/devices/${l.ids[0]}`)).body.enabled, true);
  // Fixed and re-enabled: ready, and granted.
  labControls(l.sims[1]!).settings.decrypt!.apply("on");
  assert.equal((await l.call("PATCH", `/api/admin/dut/devices/${l.ids[1]}`, { enabled: true })).status, 200);
  const ok = await l.call("POST", "/api/admin/reservations", {
    testbed: "edge",
    readiness: { planIdentifier: ON },
  });
  assert.equal(ok.status, 201, JSON.stringify(ok.body));
  assert.equal(ok.body.state, "held");
});

dbTest(
  "a reserved device refuses PATCH, disable, delete and lab apply with 409 naming the holder; forced is audited",
  async (db) => {
    await using l = await lab(db);
    const held = await l.call("POST", "/api/admin/reservations", {
      testbed: "edge",
      holder: "https://ci.example/job/9",
    });
    assert.equal(held.status, 201);
    const id0 = l.ids[0]!;
    const holderIn = (
      b: { detail: string; reservations: Array<{ holder: string; reservationId: string }> },
    ) => {
      assert.match(
        b.detail,
        /fw-1 is reserved by "https:\/\/ci\.example\/job\/9" \(reservation [0-9a-f-]+, testbed edge\) until /,
      );
      assert.equal(b.reservations[0]!.reservationId, held.body.id);
    };
    for (
      const patch of [{ baseUrl: "https://127.0.0.1:1" }, { password: "x" }, { pinnedCertSha256: null }, {
        enabled: false,
      }]
    ) {
      const r = await l.call("PATCH", `/api/admin/dut/devices/${id0}`, patch);
      assert.equal(r.status, 409, JSON.stringify(patch));
      holderIn(r.body);
    }
    const del = await l.call("DELETE", `/api/admin/dut/devices/${id0}`);
    assert.equal(del.status, 409);
    holderIn(del.body);
    // Polling, manual snapshots and harmless fields go on.
    assert.equal((await l.call("POST", `/api/admin/dut/devices/${id0}/snapshot`)).body.ok, true);
    assert.equal((await l.call("PATCH", `/api/admin/dut/devices/${id0}`, { notes: "rack 4" })).status, 200);
    // The device list shows the holder.
    const list = (await l.call("GET", "/api/admin/dut/devices")).body.devices;
    assert.equal(list[0].reservation.holder, "https://ci.example/job/9");
    assert.equal(list[0].reservation.until, held.body.expiresAt);
    // An admin forces it: done, and the audit entry names the reservation overridden.
    const forced = await l.call("PATCH", `/api/admin/dut/devices/${id0}?force=true`, { enabled: false });
    assert.equal(forced.status, 200);
    const entry = (await l.audit()).find((e) =>
      e.method === "PATCH" && e.status === 200 as never && e.detail
    );
    assert.match(
      entry!.detail ?? "",
      /^forced over reservation\(s\): PATCH enabled of device .*; fw-1 held by https:\/\/ci\.example\/job\/9 /,
    );
    const fdel = await l.call("DELETE", `/api/admin/dut/devices/${l.ids[1]}?force=true`);
    assert.equal(fdel.status, 200);
    assert.ok(
      (await l.audit()).some((e) =>
        e.method === "DELETE" && /^forced over reservation\(s\): DELETE device fw-2/.test(e.detail ?? "")
      ),
    );
  },
);

dbTest(
  "a lab apply (and so a NetBox sync) modifying or pruning a reserved device is a 409; forced, audited",
  async (db) => {
    await using l = await lab(db);
    const labFile = (devices: string[], poll = 60) => ({
      apiVersion: "dutlab/v1",
      kind: "Lab",
      metadata: { name: "lab1" },
      defaults: { vendor: NGFW.vendor, credential: "admin", pollIntervalSeconds: poll },
      credentials: { admin: { username: "admin", password: "env:LAB1_PASSWORD" } },
      devices: devices.map((h) => ({ hostname: h, baseUrl: `https://${h}.lab.example:8443` })),
    });
    const apply = async (body: unknown, extra: Record<string, unknown> = {}, password = "pw") => {
      const secrets = { admin: password };
      const p = await l.call("POST", "/api/admin/dut/lab/plan", { lab: body, secrets });
      assert.equal(p.status, 200, JSON.stringify(p.body));
      return await l.call("POST", "/api/admin/dut/lab/apply", {
        lab: body,
        secrets,
        expectedGeneration: p.body.generation,
        ...extra,
      });
    };
    assert.equal((await apply(labFile(["lab-a", "lab-b", "lab-c"]))).status, 200);
    const devs = (await l.call("GET", "/api/admin/dut/devices")).body.devices as Array<
      { id: string; hostname: string }
    >;
    const a = devs.find((d) => d.hostname === "lab-a")!.id;
    const r = await l.call("POST", "/api/admin/reservations", { deviceIds: [a], holder: "nightly" });
    assert.equal(r.status, 201);
    const modify = await apply(labFile(["lab-a", "lab-b", "lab-c"], 120));
    assert.equal(modify.status, 409, JSON.stringify(modify.body));
    assert.match(
      modify.body.detail,
      /^The lab "lab1" apply would disturb a reservation: lab-a is reserved by "nightly"/,
    );
    // A key change: the file's credential rotated (the password differs from the stored one).
    const rotated = await apply(labFile(["lab-a", "lab-b", "lab-c"]), {}, "pw-rotated");
    assert.equal(rotated.status, 409, JSON.stringify(rotated.body));
    assert.match(rotated.body.detail, /lab-a is reserved by "nightly"/);
    const prune = await apply({ ...labFile(["lab-b", "lab-c"]) }, { prune: "disable" });
    assert.equal(prune.status, 409);
    assert.match(prune.body.detail, /lab-a is reserved by "nightly"/);
    // Nothing of the refused applies was written.
    assert.equal((await l.call("GET", `/api/admin/dut/devices/${a}`)).body.pollIntervalSeconds, 60);
    const forced = await apply(labFile(["lab-a", "lab-b", "lab-c"], 120), { overrideReservations: true });
    assert.equal(forced.status, 200);
    const entry = (await l.audit()).find((e) =>
      e.route === "/api/admin/dut/lab/apply" && e.status === 200 as never
    );
    assert.match(entry!.detail ?? "", /; forced over reservation\(s\): lab apply; lab-a held by nightly /);
  },
);

dbTest("a run on a testbed holds its reservation until it finishes; the events tell it", async (db) => {
  await using l = await lab(db);
  const run = await l.call("POST", "/api/test-runs", { planIdentifier: ON, testbed: "edge" });
  assert.equal(run.status, 201, JSON.stringify(run.body));
  const cal = (await l.call("GET", "/api/admin/reservations")).body.reservations;
  assert.equal(cal.length, 1);
  assert.equal(cal[0].executionId, run.body.executionId);
  assert.equal(cal[0].testbed, "edge");
  const other = await l.call("POST", "/api/admin/reservations", { deviceIds: [l.ids[1]], holder: "someone" });
  assert.equal(other.status, 409);
  await finishRun(l.app, l.auth, run.body.executionId, {
    outcome: "passed",
    results: { latencySamplesMs: [1, 2] },
  });
  // The report names the testbed (an optional member: the hash design and older reports are unchanged).
  const report = await fetchReport(l.app, l.auth, run.body.executionId);
  assert.equal(report.status, 200);
  assert.equal(JSON.parse(report.text).topology.testbed, "edge");
  const after = (await l.call("GET", "/api/admin/reservations?ended=true")).body.reservations;
  assert.equal(after[0].state, "released");
  assert.equal(after[0].endReason, `run ${run.body.executionId} finished`);
  assert.equal((await l.call("POST", "/api/admin/reservations", { deviceIds: [l.ids[1]] })).status, 201);
  const types = (await db.kysely.selectFrom("events").select("type").execute()).map((e) => e.type);
  for (const t of ["reservation.granted", "reservation.released"]) assert.ok(types.includes(t), t);
  // The metrics show what is held.
  const metrics = await (await l.app.request("/metrics")).text();
  assert.match(metrics, /^dutlab_reservations\{state="held"\} 1$/m);
});

dbTest(
  "a subscription receives the reservation events: not ready, granted, queued, released, expired; the metrics count them",
  async (db) => {
    await using l = await lab(db);
    const rx = startReceiver();
    const worker = testWorker(l.svc);
    try {
      const sub = await l.call("POST", "/api/admin/webhooks", {
        name: "lab-bookings",
        url: rx.url("/hook"),
        allowHttp: true,
        eventTypes: [
          "dutlab.reservation.granted",
          "dutlab.reservation.queued",
          "dutlab.reservation.released",
          "dutlab.reservation.expired",
          "dutlab.reservation.not_ready",
        ],
      });
      assert.equal(sub.status, 201, JSON.stringify(sub.body));
      // Refused for readiness: nothing reserved, the event names the check and the device.
      labControls(l.sims[1]!).settings.decrypt!.apply("off");
      const refused = await l.call("POST", "/api/admin/reservations", {
        testbed: "edge",
        holder: "ci-job-17",
        readiness: { planIdentifier: ON },
      });
      assert.equal(refused.status, 422);
      labControls(l.sims[1]!).settings.decrypt!.apply("on");
      const a = await l.call("POST", "/api/admin/reservations", { testbed: "edge", holder: "alice" });
      assert.equal(a.status, 201);
      const b = await l.call("POST", "/api/admin/reservations", {
        deviceIds: [l.ids[0]],
        holder: "bob",
        waitSeconds: 600,
      });
      assert.equal(b.status, 202);
      const metrics = async () => await (await l.app.request("/metrics")).text();
      const queuedNow = await metrics();
      assert.match(queuedNow, /^dutlab_reservations\{state="held"\} 1$/m);
      assert.match(queuedNow, /^dutlab_reservations\{state="queued"\} 1$/m);
      assert.match(queuedNow, /^dutlab_reservations_ended_total\{reason="expired"\} 0$/m);
      assert.equal((await l.call("POST", `/api/admin/reservations/${a.body.id}/release`, {})).status, 200);
      assert.equal((await l.call("GET", `/api/admin/reservations/${b.body.id}`)).body.state, "held");
      // Bob stops renewing: his lease ends (moved into the past here) and the sweep expires it.
      await db.kysely.updateTable("reservations").set({ expires_at: new Date(Date.now() - 1000) })
        .where("id", "=", b.body.id).execute();
      await l.svc.reservations.sweep();
      const expiredNow = await metrics();
      assert.match(expiredNow, /^dutlab_reservations\{state="queued"\} 0$/m);
      assert.match(expiredNow, /^dutlab_reservations\{state="held"\} 0$/m);
      assert.match(expiredNow, /^dutlab_reservations_ended_total\{reason="expired"\} 1$/m);
      // A rolled-back grant sends nothing: a refused overlapping request writes no event.
      const c = await l.call("POST", "/api/admin/reservations", { testbed: "edge", holder: "carol" });
      assert.equal(c.status, 201);
      assert.equal((await l.call("POST", "/api/admin/reservations", { testbed: "edge" })).status, 409);
      worker.start();
      const want = [
        "not_ready ci-job-17",
        "granted alice",
        "queued bob",
        "released alice",
        "granted bob",
        "expired bob",
        "granted carol",
      ];
      await until(() => rx.got.length >= want.length, 15_000, "the deliveries");
      const events = rx.got.map((r) => verifyDelivery(r, sub.body.secret));
      for (const e of events) assert.equal(cloudEventErrors(e), null);
      const data = (e: Record<string, unknown>) => e.data as Record<string, unknown>;
      assert.deepEqual(
        events.map((e) => `${String(e.type).replace("dutlab.reservation.", "")} ${data(e).holder}`),
        want,
      );
      const notReady = data(events[0]!);
      assert.equal(notReady.testbed, "edge");
      assert.deepEqual(
        (notReady.notReady as Array<Record<string, string>>).map((f) => `${f.checkId} ${f.hostname}`),
        ["ngfw-decrypt-state-matches-plan fw-2"],
      );
      const granted = events[1]!;
      assert.equal(granted.subject, a.body.id);
      assert.equal(data(granted).testbed, "edge");
      assert.equal(data(granted).state, "held");
      assert.equal(data(granted).expiresAt, a.body.expiresAt);
      assert.deepEqual((data(granted).devices as Array<{ hostname: string }>).map((d) => d.hostname), [
        "fw-1",
        "fw-2",
      ]);
      assert.match(String(data(events[3]!).reason), /^released by /);
      assert.equal(data(events[5]!).state, "expired");
      assert.match(String(data(events[5]!).reason), /^lease ended at .* without renewal \(holder bob\)$/);
      const queued = await db.kysely.selectFrom("webhook_deliveries").select("event_id")
        .where("subscription_id", "=", sub.body.id).execute();
      assert.equal(queued.length, want.length, "no event of the refused request");
    } finally {
      await worker.stop();
      await rx.close();
    }
  },
);

dbTest(
  "a key or pin change of a reserved device is a 409 naming the holder (PATCH, a connection test's first pin); forced, audited",
  async (db) => {
    await using l = await lab(db);
    const id0 = l.ids[0]!;
    // No certificate pinned yet: the next connection test would pin one (trust on first use).
    assert.equal(
      (await l.call("PATCH", `/api/admin/dut/devices/${id0}`, { pinnedCertSha256: null })).status,
      200,
    );
    assert.equal((await l.call("GET", `/api/admin/dut/devices/${id0}`)).body.pinnedCertSha256, null);
    const held = await l.call("POST", "/api/admin/reservations", { testbed: "edge", holder: "nightly" });
    assert.equal(held.status, 201);
    for (const patch of [{ password: "rotated" }, { username: "other" }, { pinnedCertSha256: null }]) {
      const r = await l.call("PATCH", `/api/admin/dut/devices/${id0}`, patch);
      assert.equal(r.status, 409, JSON.stringify(patch));
      assert.match(
        r.body.detail,
        /fw-1 is reserved by "nightly" \(reservation [0-9a-f-]+, testbed edge\) until /,
      );
    }
    const test = await l.call("POST", `/api/admin/dut/devices/${id0}/test`);
    assert.equal(test.status, 409, JSON.stringify(test.body));
    assert.match(
      test.body.detail,
      /^a first-contact certificate pin of device fw-1 \(connection test\) would disturb a reservation: fw-1 is reserved by "nightly"/,
    );
    assert.equal(test.body.reservations[0].reservationId, held.body.id);
    assert.equal((await l.call("GET", `/api/admin/dut/devices/${id0}`)).body.pinnedCertSha256, null);
    // Forced by an admin: the pin is recorded and the audit entry names the reservation overridden.
    const forced = await l.call("POST", `/api/admin/dut/devices/${id0}/test?force=true`);
    assert.equal(forced.status, 200);
    assert.equal(forced.body.ok, true, forced.body.detail);
    assert.match(forced.body.detail, /Certificate pinned \(sha256 [0-9a-f]{64}\)/);
    assert.ok(
      (await l.audit()).some((e) =>
        /^forced over reservation\(s\): a first-contact certificate pin of device fw-1 \(connection test\); fw-1 held by nightly /
          .test(e.detail ?? "")
      ),
    );
    // With the pin in place a connection test changes nothing, and goes on.
    const again = await l.call("POST", `/api/admin/dut/devices/${id0}/test`);
    assert.equal(again.status, 200);
    assert.equal(again.body.ok, true);
  },
);
