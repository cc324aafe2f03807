import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest } from "../../core/harness/db.ts";
import { jsonReq, testServices } from "../../core/harness/app.ts";
import { fixtureModules, startFixtureDevice } from "@dutlab/core/testing";
import { reencryptCredentials } from "../../core/harness/core.ts";
import { buildKeyRing } from "../../core/harness/core.ts";
import { keyIdOf } from "../../core/harness/core.ts";
import { modules } from "../../modules.gen.ts";
import { adapterForRole } from "../../core/harness/lab.ts";

/** The fixture modules' vendor listed without an adapter. */
const NO_ADAPTER = fixtureModules().vendorsWithoutAdapter![0]!.key;

const PASSWORD = "fixture-pass";
const device = (over: Record<string, unknown> = {}) => ({
  hostname: "fw-1",
  vendor: "fixture-fw",
  baseUrl: "https://127.0.0.1:9",
  username: "admin",
  password: PASSWORD,
  ...over,
});

dbTest("registering a device applies the defaults and never returns the password", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const res = await app.request("/api/admin/dut/devices", jsonReq("POST", device({ notes: "rack 4" }), auth));
  assert.equal(res.status, 201);
  const { ok, deviceId } = await res.json();
  assert.equal(ok, true);
  const list = await (await app.request("/api/admin/dut/devices", { headers: auth })).json();
  assert.deepEqual(list.vendors.map((v: { key: string; available: boolean }) => [v.key, v.available]), [
    ["fixture-fw", true],
    [NO_ADAPTER, false],
  ]);
  const d = list.devices[0];
  assert.equal(d.id, deviceId);
  assert.equal(d.tlsVerifyMode, "strict");
  assert.equal(d.pollIntervalSeconds, 300);
  assert.equal(d.deviceRole, "ngfw");
  assert.equal(d.enabled, true);
  assert.equal(d.lastPollAt, null);
  assert.equal(d.lastPollStatus, null);
  assert.equal(d.pinnedCertSha256, null);
  assert.equal(d.tlsWarning, null);
  assert.equal(d.notes, "rack 4");
  assert.ok(!("password" in d));
  assert.ok(!JSON.stringify(list).includes(PASSWORD));
});

dbTest("the device list reads every column of the API view and never the credential", async (db) => {
  const { app, auth, svc } = await testServices(db, fixtureModules());
  for (const h of ["fw-b", "fw-a"]) {
    const res = await app.request("/api/admin/dut/devices", jsonReq("POST", device({ hostname: h }), auth));
    assert.equal(res.status, 201);
  }
  const rows = await svc.devices.list();
  assert.deepEqual(rows.map((r) => r.hostname), ["fw-a", "fw-b"], "hostname order");
  const stored = await svc.db.kysely.selectFrom("devices").selectAll().where("hostname", "=", "fw-a")
    .executeTakeFirstOrThrow();
  assert.ok(stored.password_enc.length > 0);
  // Exactly the stored columns but the credential, with the stored values.
  const { password_enc: _, password_fp: _fp, hostname_case_slot: _slot, ...expected } = stored;
  assert.deepEqual(rows[0], expected);
  assert.ok(!("password_enc" in rows[0]));
  assert.ok(!("password_fp" in rows[0]));
  const list = await (await app.request("/api/admin/dut/devices", { headers: auth })).json();
  assert.deepEqual(list.devices.map((d: { hostname: string }) => d.hostname), ["fw-a", "fw-b"]);
  assert.ok(!JSON.stringify(list).includes(stored.password_enc));
  assert.ok(!JSON.stringify(list).includes(stored.password_fp!.split(".")[1]!));
});

dbTest(
  "refused registrations store nothing: bad fields, vendor without adapter, duplicate hostname",
  async (db) => {
    const { app, auth, svc } = await testServices(db, fixtureModules());
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [device({ vendor: NO_ADAPTER }), 422, `${NO_ADAPTER} has no adapter yet`],
      [device({ vendor: "nope" }), 400, "unknown vendor"],
      [device({ baseUrl: "http://10.0.0.1" }), 400, "https://"],
      [device({ tlsVerifyMode: "none" }), 400, "tlsVerifyMode"],
      [device({ pollIntervalSeconds: 29 }), 400, "at least 30"],
      [device({ pollIntervalSeconds: 60.5 }), 400, "whole number"],
      [device({ deviceRole: "toaster" }), 400, "deviceRole"],
      [device({ hostname: "bad host!" }), 400, "hostname"],
      [device({ extra: 1 }), 400, "extra"],
    ];
    for (const [body, status, text] of cases) {
      const res = await app.request("/api/admin/dut/devices", jsonReq("POST", body, auth));
      assert.equal(res.status, status, JSON.stringify(body));
      assert.equal(res.headers.get("content-type"), "application/problem+json");
      assert.ok(JSON.stringify(await res.json()).includes(text), text);
    }
    const n = await svc.db.kysely.selectFrom("devices").select(sql<number>`count(*)::int`.as("n"))
      .executeTakeFirstOrThrow();
    assert.equal(n.n, 0);
    assert.equal((await app.request("/api/admin/dut/devices", jsonReq("POST", device(), auth))).status, 201);
    const dup = await app.request(
      "/api/admin/dut/devices",
      jsonReq("POST", device({ baseUrl: "https://x.example" }), auth),
    );
    assert.equal(dup.status, 409);
    assert.equal((await dup.json()).errors[0].field, "hostname");
  },
);

dbTest(
  "PATCH updates fields, rotates the password, clears the pin and answers 404 for unknown ids",
  async (db) => {
    const { app, auth, svc } = await testServices(db, fixtureModules());
    const { deviceId } = await (await app.request(
      "/api/admin/dut/devices",
      jsonReq("POST", device({ tlsVerifyMode: "self-signed" }), auth),
    )).json();
    await svc.devices.pin(deviceId, "a".repeat(64));
    const before = await svc.devices.get(deviceId);
    let res = await app.request(
      `/api/admin/dut/devices/${deviceId}`,
      jsonReq("PATCH", { enabled: false, notes: null, pollIntervalSeconds: 60 }, auth),
    );
    assert.equal(res.status, 200);
    let d = await res.json();
    assert.equal(d.enabled, false);
    assert.equal(d.pollIntervalSeconds, 60);
    assert.equal(d.pinnedCertSha256, "a".repeat(64), "unrelated changes keep the pin");
    res = await app.request(
      `/api/admin/dut/devices/${deviceId}`,
      jsonReq("PATCH", { password: "new-secret-pw" }, auth),
    );
    d = await res.json();
    assert.ok(!JSON.stringify(d).includes("new-secret-pw"));
    const after = await svc.devices.get(deviceId);
    assert.notEqual(after.password_enc, before.password_enc);
    assert.equal(await svc.devices.decryptPassword(after), "new-secret-pw");
    res = await app.request(
      `/api/admin/dut/devices/${deviceId}`,
      jsonReq("PATCH", { pinnedCertSha256: null }, auth),
    );
    assert.equal((await res.json()).pinnedCertSha256, null);
    await svc.devices.pin(deviceId, "b".repeat(64));
    res = await app.request(
      `/api/admin/dut/devices/${deviceId}`,
      jsonReq("PATCH", { baseUrl: "https://fw-1b.example" }, auth),
    );
    assert.equal((await res.json()).pinnedCertSha256, null, "a new baseUrl clears the pin");
    await svc.devices.pin(deviceId, "c".repeat(64));
    res = await app.request(
      `/api/admin/dut/devices/${deviceId}`,
      jsonReq("PATCH", { tlsVerifyMode: "insecure" }, auth),
    );
    d = await res.json();
    assert.equal(d.pinnedCertSha256, null, "a new TLS mode clears the pin");
    assert.match(d.tlsWarning, /insecure/);
    for (const bad of [{ pinnedCertSha256: "ab" }, { pollIntervalSeconds: 5 }, {}, { password: "" }]) {
      assert.equal(
        (await app.request(`/api/admin/dut/devices/${deviceId}`, jsonReq("PATCH", bad, auth))).status,
        400,
      );
    }
    const unknown = "7d9f4b5e-0000-4000-8000-000000000000";
    for (const [m, p] of [["PATCH", ""], ["DELETE", ""], ["POST", "/test"], ["POST", "/snapshot"]] as const) {
      const r = await app.request(
        `/api/admin/dut/devices/${unknown}${p}`,
        jsonReq(m, m === "PATCH" ? { enabled: true } : undefined, auth),
      );
      assert.equal(r.status, 404, `${m} ${p}`);
      assert.equal(r.headers.get("content-type"), "application/problem+json");
    }
    assert.equal(
      (await app.request(`/api/admin/dut/devices/not-a-uuid/test`, jsonReq("POST", undefined, auth))).status,
      404,
    );
  },
);

dbTest("deleting a device deletes its snapshots (cascade) and answers ok", async (db) => {
  const { app, auth, svc } = await testServices(db, fixtureModules());
  await using dev = await startFixtureDeviceAsync();
  const { deviceId } = await (await app.request(
    "/api/admin/dut/devices",
    jsonReq("POST", device({ baseUrl: dev.sim.url, tlsVerifyMode: "insecure" }), auth),
  )).json();
  const snap =
    await (await app.request(`/api/admin/dut/devices/${deviceId}/snapshot`, jsonReq("POST", undefined, auth)))
      .json();
  assert.equal(snap.lastPollError, "collected 3 snapshot(s)");
  const count = async () =>
    (await svc.db.kysely.selectFrom("snapshots").select(sql<number>`count(*)::int`.as("n"))
      .executeTakeFirstOrThrow()).n;
  assert.equal(await count(), 3);
  const res = await app.request(`/api/admin/dut/devices/${deviceId}`, { method: "DELETE", headers: auth });
  assert.deepEqual(await res.json(), { ok: true });
  assert.equal(await count(), 0);
  const payloads = await svc.db.kysely.selectFrom("snapshot_payloads").select(
    sql<number>`count(*)::int`.as("n"),
  )
    .executeTakeFirstOrThrow();
  assert.equal(payloads.n, 0, "payloads no snapshot refers to are removed too");
});

dbTest("ten concurrent DELETEs of one device: exactly one answers 200, the others 404", async (db) => {
  const { app, auth, svc } = await testServices(db, fixtureModules());
  await using dev = await startFixtureDeviceAsync();
  for (let round = 0; round < 3; round++) {
    const { deviceId } = await (await app.request(
      "/api/admin/dut/devices",
      jsonReq(
        "POST",
        device({ hostname: `del-${round}`, baseUrl: dev.sim.url, tlsVerifyMode: "insecure" }),
        auth,
      ),
    )).json();
    const snap = await app.request(
      `/api/admin/dut/devices/${deviceId}/snapshot`,
      jsonReq("POST", undefined, auth),
    );
    assert.equal(snap.status, 200);
    await snap.body?.cancel();
    const answers = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const r = await app.request(`/api/admin/dut/devices/${deviceId}`, {
          method: "DELETE",
          headers: auth,
        });
        const body = await r.json();
        if (r.status === 404) assert.equal(body.type, "urn:dutlab:problem:not-found");
        return r.status;
      }),
    );
    assert.deepEqual(answers.toSorted(), [200, ...Array(9).fill(404)], `round ${round}: ${answers}`);
    const left = await svc.db.kysely.selectFrom("snapshots").select(sql<number>`count(*)::int`.as("n"))
      .where("device_id", "=", deviceId).executeTakeFirstOrThrow();
    assert.equal(left.n, 0);
  }
});

dbTest(
  "the TLS matrix through test-connection: strict, pinning, rotation, clearing, insecure",
  async (db) => {
    const { app, auth, svc } = await testServices(db, fixtureModules());
    await using dev = await startFixtureDeviceAsync();
    const post = async (body: Record<string, unknown>) =>
      (await (await app.request("/api/admin/dut/devices", jsonReq("POST", device(body), auth))).json())
        .deviceId as string;
    const test = async (id: string) =>
      await (await app.request(`/api/admin/dut/devices/${id}/test`, jsonReq("POST", undefined, auth))).json();

    const strict = await post({ hostname: "strict", baseUrl: dev.sim.url });
    dev.sim.clearLog();
    let r = await test(strict);
    assert.equal(r.ok, false);
    assert.match(r.detail, /^TLS verification failed/);
    assert.equal(dev.sim.requests.length, 0, "strict: nothing sent to a self-signed device");

    const ss = await post({ hostname: "pinned", baseUrl: dev.sim.url, tlsVerifyMode: "self-signed" });
    r = await test(ss);
    assert.equal(r.ok, true, r.detail);
    assert.match(r.detail, /Authentication succeeded; CPU monitor reachable: CPU 7%/);
    assert.ok(Number.isInteger(r.latencyMs));
    assert.equal((await svc.devices.get(ss)).pinned_cert_sha256, dev.sim.fingerprint, "first connect pins");
    assert.equal((await test(ss)).ok, true, "same certificate still accepted");

    const old = dev.sim.fingerprint;
    const fresh = await dev.sim.rotateCertificate();
    dev.sim.clearLog();
    r = await test(ss);
    assert.equal(r.ok, false);
    assert.match(r.detail, new RegExp(`presented sha256 ${fresh}, pinned ${old}`));
    assert.equal(dev.sim.requests.length, 0, "rotated: no request byte sent");
    const snap =
      await (await app.request(`/api/admin/dut/devices/${ss}/snapshot`, jsonReq("POST", undefined, auth)))
        .json();
    assert.equal(snap.lastPollStatus, "tls_error");

    await app.request(`/api/admin/dut/devices/${ss}`, jsonReq("PATCH", { pinnedCertSha256: null }, auth));
    assert.equal((await test(ss)).ok, true, "pin cleared: accepted");
    assert.equal((await svc.devices.get(ss)).pinned_cert_sha256, fresh, "new pin");

    const ins = await post({ hostname: "insecure", baseUrl: dev.sim.url, tlsVerifyMode: "insecure" });
    r = await test(ins);
    assert.equal(r.ok, true);
    assert.match(r.detail, /TLS verification is disabled \(insecure\)/);
    const list = await (await app.request("/api/admin/dut/devices", { headers: auth })).json();
    assert.match(list.devices.find((d: { id: string }) => d.id === ins).tlsWarning, /disabled/);
  },
);

dbTest("test-connection reports each failing stage without a 5xx", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules(), { DUT_POLL_DEVICE_TIMEOUT_SECONDS: "2" });
  await using dev = await startFixtureDeviceAsync();
  const ids: Record<string, string> = {};
  for (
    const [name, body] of Object.entries({
      auth: { baseUrl: dev.sim.url, password: "wrong", tlsVerifyMode: "insecure" },
      http: { baseUrl: dev.sim.url, tlsVerifyMode: "insecure" },
      refused: { baseUrl: "https://127.0.0.1:1", tlsVerifyMode: "insecure" },
    })
  ) {
    ids[name] = (await (await app.request(
      "/api/admin/dut/devices",
      jsonReq("POST", device({ hostname: name, ...body }), auth),
    )).json()).deviceId;
  }
  const test = async (id: string) => {
    const res = await app.request(`/api/admin/dut/devices/${id}/test`, jsonReq("POST", undefined, auth));
    assert.equal(res.status, 200);
    return await res.json();
  };
  assert.match((await test(ids.auth!)).detail, /^Authentication failed \(auth_failed\)/);
  dev.sim.faults.status = 503;
  assert.match((await test(ids.http!)).detail, /^HTTP error \(http_error\)/);
  dev.sim.faults.status = null;
  dev.sim.faults.hang = true;
  assert.match((await test(ids.http!)).detail, /^Timed out \(timeout\)/);
  dev.sim.faults.hang = false;
  assert.match((await test(ids.refused!)).detail, /^Device unreachable \(unreachable\)/);
  const r = await test(ids.auth!);
  assert.ok(!r.detail.includes("wrong"), "no credential in the detail");
});

dbTest("a raw dump of the database holds no plaintext credential", async (db) => {
  const { app, auth, svc } = await testServices(db, fixtureModules());
  const secrets = ["Pl41ntext-Sentinel-One", "Pl41ntext-Sentinel-Two"];
  for (const [i, s] of secrets.entries()) {
    await app.request(
      "/api/admin/dut/devices",
      jsonReq("POST", device({ hostname: `d${i}`, password: s }), auth),
    );
  }
  let dump: string;
  if (svc.db.dumpDataDir) {
    dump = new TextDecoder("latin1").decode(new Uint8Array(await (await svc.db.dumpDataDir()).arrayBuffer()));
  } else {
    const tables = [
      "devices",
      "snapshots",
      "snapshot_payloads",
      "snapshot_latest",
      "test_runs",
      "run_alerts",
    ];
    const parts: string[] = [];
    for (const t of tables) {
      const rows = await sql<{ r: string }>`select t::text as r from ${sql.table(t)} t`.execute(
        svc.db.kysely,
      );
      parts.push(...rows.rows.map((x) => x.r));
    }
    dump = parts.join("\n");
    assert.ok(dump.includes("d0"), "the dump holds the rows");
  }
  for (const s of secrets) assert.ok(!dump.includes(s), `plaintext ${s} absent`);
});

dbTest("key rotation re-encrypts every credential and the old key can then be dropped", async (db) => {
  const OLD = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
  const NEW = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";
  const first = await testServices(db, fixtureModules(), { DUT_CRED_ENC_KEY: OLD });
  for (const h of ["a", "b", "c"]) {
    await first.app.request(
      "/api/admin/dut/devices",
      jsonReq("POST", device({ hostname: h, password: `pw-${h}` }), first.auth),
    );
  }
  const both = await buildKeyRing(NEW, OLD);
  const r = await reencryptCredentials(db.kysely, both);
  assert.deepEqual(r, { rotated: 3, current: 0, undecryptable: 0 });
  assert.deepEqual(await reencryptCredentials(db.kysely, both), { rotated: 0, current: 3, undecryptable: 0 });
  const onlyNew = await testServices(db, fixtureModules(), { DUT_CRED_ENC_KEY: NEW });
  const listed = await onlyNew.svc.devices.list();
  assert.equal(listed.length, 3);
  for (const { id } of listed) {
    const row = await onlyNew.svc.devices.get(id);
    assert.equal(keyIdOf(row.password_enc), onlyNew.svc.keys.current.id);
    assert.equal(await onlyNew.svc.devices.decryptPassword(row), `pw-${row.hostname}`);
  }
});

async function startFixtureDeviceAsync() {
  const d = await startFixtureDevice();
  return { ...d, [Symbol.asyncDispose]: () => d.sim.close() };
}

dbTest(
  "the device store logs out a parked session when the credential or URL changes, on delete and at shutdown",
  async (db) => {
    const { app, auth, svc } = await testServices(db, modules);
    // A firewall whose adapter parks its session between polls: the enabled adapter of role ngfw.
    const ngfw = adapterForRole(modules, "ngfw");
    await using fw = await (await ngfw.sim()).startSimulatedDevice();
    const create = async (hostname: string) => {
      const res = await app.request(
        "/api/admin/dut/devices",
        jsonReq("POST", {
          hostname,
          vendor: ngfw.vendor,
          baseUrl: fw.sim.url,
          ...fw.credentials,
          tlsVerifyMode: "self-signed",
        }, auth),
      );
      assert.equal(res.status, 201);
      return (await res.json()).deviceId as string;
    };
    const poll = async (id: string) => assert.equal((await svc.poller.poll(id)).ok, true);
    const parked = (id: string) => svc.devices.sessionRegistry.peek(id) !== undefined;
    /** The logout runs in the background: wait (bounded) for the device to have no session open. */
    const loggedOut = async () => {
      const until = Date.now() + 10_000;
      while (fw.openSessions() > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      assert.equal(fw.openSessions(), 0, "the parked session was logged out on the device");
    };

    const id = await create("fw-park-1");
    await poll(id);
    assert.ok(parked(id), "a poll parks its session");
    assert.equal(fw.openSessions(), 1);
    // A change that keeps the credential and URL keeps the session (called on the store, not the route).
    await svc.devices.update(id, { notes: "rack 5", pollIntervalSeconds: 600 });
    assert.ok(parked(id));
    assert.equal(fw.openSessions(), 1);
    // A new password (even the same text: a new credential) logs the parked session out.
    await svc.devices.update(id, { password: fw.credentials.password });
    assert.ok(!parked(id));
    await loggedOut();

    await poll(id);
    assert.ok(parked(id));
    // A URL change logs out at the old URL (here the same device, reached under another spelling).
    await svc.devices.update(id, { baseUrl: fw.sim.url.replace("127.0.0.1", "localhost") });
    assert.ok(!parked(id));
    await loggedOut();

    await svc.devices.update(id, { baseUrl: fw.sim.url });
    await poll(id);
    assert.ok(parked(id));
    const del = await app.request(`/api/admin/dut/devices/${id}`, { method: "DELETE", headers: auth });
    assert.equal(del.status, 200);
    assert.ok(!parked(id));
    await loggedOut();

    // Shutdown logs out every parked session.
    const a = await create("fw-park-2");
    const b = await create("fw-park-3");
    await Promise.all([poll(a), poll(b)]);
    assert.equal(fw.openSessions(), 2);
    await svc.releaseAllParked();
    assert.equal(fw.openSessions(), 0);
    assert.deepEqual(svc.devices.sessionRegistry.deviceIds(), []);
  },
);
