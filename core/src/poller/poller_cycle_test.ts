/**
 * The poll cycle (spec 1.1 step 3, section 3): every status transition through the manual snapshot
 * endpoint, and atomic cycles (a failure while storing writes nothing).
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { startSimulator } from "@dutlab/core/testing";
import { dbTest } from "../../harness/db.ts";
import { jsonReq } from "../../harness/app.ts";
import { defineAdapter } from "@dutlab/core";
import { fixtureAdapter, fixtureModules } from "../../testing/fixture_modules.ts";
import { LostLockError } from "./store.ts";
import { pollLog } from "./poll_log.ts";
import type { Db } from "../db/open.ts";
import {
  addDevice,
  captureLogs,
  closedPort,
  count,
  fixtureDevice,
  messageOf,
  setup,
  view,
} from "../../harness/poller_lab.ts";

/** A fixture-fw variant whose collectAll result is rewritten by `mangle`. */
function mangledAdapter(
  vendorKey: string,
  mangle: (s: Array<{ label: string; payload: unknown }>) => Array<{ label: string; payload: unknown }>,
) {
  return defineAdapter({
    ...fixtureAdapter,
    vendorKey,
    displayName: vendorKey,
    create(ctx) {
      const s = fixtureAdapter.create(ctx);
      return { ...s, collectAll: async () => mangle(await s.collectAll()) };
    },
  });
}

const brokenModules = () =>
  fixtureModules({
    adapters: [
      {
        name: "@dutlab/adapter-fixture-short",
        version: "0.0.2",
        module: mangledAdapter("fixture-short", (s) => s.slice(0, 2)),
      },
      {
        name: "@dutlab/adapter-fixture-swapped",
        version: "0.0.3",
        module: mangledAdapter("fixture-swapped", (s) => [s[1]!, s[0]!, s[2]!]),
      },
      {
        name: "@dutlab/adapter-fixture-bigint",
        version: "0.0.4",
        module: mangledAdapter("fixture-bigint", (s) => [s[0]!, { ...s[1]!, payload: { n: 1n } }, s[2]!]),
      },
    ],
  });

dbTest("manual snapshots walk a device through every poll status of spec section 3", async (db) => {
  const { svc, app, auth } = await setup(db, { DUT_POLL_DEVICE_TIMEOUT_SECONDS: "1" });
  await using dev = await fixtureDevice();
  await using junk = await startSimulator({
    handler: () => new Response("<html>maintenance</html>", { headers: { "content-type": "text/html" } }),
  });
  const id = await addDevice(svc, dev.sim.url);
  const fresh = await view(svc, id);
  assert.deepEqual([fresh.lastPollAt, fresh.lastPollStatus, fresh.lastPollError], [null, null, null]);

  let previousAt = 0;
  let stored = 0;
  const step = async (status: string, error: RegExp, patch?: Record<string, unknown>) => {
    if (patch) {
      const p = await app.request(`/api/admin/dut/devices/${id}`, jsonReq("PATCH", patch, auth));
      assert.equal(p.status, 200, `PATCH ${JSON.stringify(patch)}`);
    }
    const res = await app.request(`/api/admin/dut/devices/${id}/snapshot`, { method: "POST", headers: auth });
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.deepEqual(Object.keys(body).sort(), ["lastPollAt", "lastPollError", "lastPollStatus", "ok"]);
    assert.equal(body.lastPollStatus, status, body.lastPollError);
    assert.equal(body.ok, status === "ok");
    assert.match(body.lastPollError, error);
    const v = await view(svc, id);
    assert.deepEqual([v.lastPollAt, v.lastPollStatus, v.lastPollError], [
      body.lastPollAt,
      body.lastPollStatus,
      body.lastPollError,
    ]);
    const at = Date.parse(body.lastPollAt);
    assert.ok(at > previousAt, `lastPollAt moves forward on ${status}`);
    previousAt = at;
    if (status === "ok") stored += 3;
    assert.equal(await count(db, "snapshots", id), stored, `snapshots after ${status}`);
  };

  await step("ok", /^collected 3 snapshot\(s\)$/);
  dev.state.password = "rotated-on-the-device";
  await step("auth_failed", /HTTP 401/);
  await step("ok", /^collected 3 snapshot\(s\)$/, { password: "rotated-on-the-device" });
  dev.sim.faults.status = 503;
  await step("http_error", /HTTP 503/);
  dev.sim.faults.status = null;
  dev.sim.faults.hang = true;
  await step("timeout", /time limit of 1000 ms/);
  dev.sim.faults.hang = false;
  await step("unreachable", /127\.0\.0\.1/, { baseUrl: `https://127.0.0.1:${closedPort()}` });
  await step("protocol_error", /JSON/i, { baseUrl: junk.url });
  // self-signed: the first connection pins the certificate; a rotated certificate is refused
  await step("ok", /^collected 3 snapshot\(s\)$/, { baseUrl: dev.sim.url, tlsVerifyMode: "self-signed" });
  assert.equal((await view(svc, id)).pinnedCertSha256, dev.sim.fingerprint);
  await dev.sim.rotateCertificate();
  await step("tls_error", /certificate|pin/i);
  await step("ok", /^collected 3 snapshot\(s\)$/, { pinnedCertSha256: null });
  assert.equal((await view(svc, id)).pinnedCertSha256, dev.sim.fingerprint);
  // a credential that does not decrypt for this device (another device's ciphertext)
  const other = await svc.devices.get(await addDevice(svc, dev.sim.url, { enabled: false }));
  await db.kysely.updateTable("devices").set({ password_enc: other.password_enc }).where("id", "=", id)
    .execute();
  await step("credential_error", /does not decrypt for this device/);
  await step("ok", /^collected 3 snapshot\(s\)$/, { password: "rotated-on-the-device" });
});

dbTest("an adapter returning wrong labels or a payload without JSON form stores nothing", async (db) => {
  const { svc } = await setup(db, {}, brokenModules());
  await using dev = await fixtureDevice();
  for (
    const [vendor, error] of [
      [
        "fixture-short",
        /labels \[system_info, ntp_config\], expected \[system_info, ntp_config, decrypt_policy\]/,
      ],
      ["fixture-swapped", /labels \[ntp_config, system_info, decrypt_policy\]/],
      ["fixture-bigint", /"ntp_config" payload with no JSON form/],
    ] as const
  ) {
    const id = await addDevice(svc, dev.sim.url, { vendor });
    const r = await svc.poller.poll(id);
    assert.equal(r.lastPollStatus, "adapter_error", vendor);
    assert.match(r.lastPollError, error);
    assert.equal(r.snapshots, 0);
    assert.equal((await view(svc, id)).lastPollStatus, "adapter_error");
    assert.equal(await count(db, "snapshots", id), 0, vendor);
  }
  assert.equal(await count(db, "snapshot_payloads"), 0);
  assert.equal(await count(db, "snapshot_latest"), 0);
});

dbTest("an adapter's poll notes are appended to the poll detail of an ok poll", async (db) => {
  const noted = defineAdapter({
    ...fixtureAdapter,
    vendorKey: "fixture-noted",
    displayName: "fixture-noted",
    create(ctx) {
      const s = fixtureAdapter.create(ctx);
      return { ...s, pollNotes: () => ["this cycle used HTTP Basic authentication"] };
    },
  });
  const { svc } = await setup(
    db,
    {},
    fixtureModules({
      adapters: [{ name: "@dutlab/adapter-fixture-noted", version: "0.0.5", module: noted }],
    }),
  );
  await using dev = await fixtureDevice();
  const id = await addDevice(svc, dev.sim.url, { vendor: "fixture-noted" });
  const r = await svc.poller.poll(id);
  assert.equal(r.lastPollStatus, "ok");
  assert.equal(r.lastPollError, "collected 3 snapshot(s); this cycle used HTTP Basic authentication");
});

dbTest("a lost poll lock found inside the write transaction stores no snapshot and no poll", async (db) => {
  const { svc } = await setup(db);
  await using dev = await fixtureDevice();
  const id = await addDevice(svc, dev.sim.url);
  let asked = 0;
  await assert.rejects(
    svc.poller.poll(id, {
      guard: () => {
        asked++;
        return Promise.resolve(false);
      },
    }),
    LostLockError,
  );
  assert.equal(asked, 1);
  assert.equal(dev.sim.requests.filter((r) => r.path === "/api/ntp").length, 1, "the device was polled");
  await assertNothingStored(db, id);
  // the next guarded cycle that still holds the lock writes normally
  const ok = await svc.poller.poll(id, { guard: () => Promise.resolve(true) });
  assert.equal(ok.lastPollStatus, "ok");
  assert.equal(await count(db, "snapshots", id), 3);
});

dbTest("a failure at the last write of a cycle rolls back its snapshots", async (db) => {
  const { svc } = await setup(db);
  await using dev = await fixtureDevice();
  const id = await addDevice(svc, dev.sim.url);
  // The device update is the cycle's last write: make the database refuse it.
  await sql`create function refuse_poll_update() returns trigger language plpgsql as $$
    begin raise exception 'injected failure'; end $$`.execute(db.kysely);
  await sql`create trigger refuse_poll_update before update of last_poll_at on devices
    for each row execute function refuse_poll_update()`.execute(db.kysely);
  await assert.rejects(svc.poller.poll(id), /injected failure/);
  await assertNothingStored(db, id);
  await sql`drop trigger refuse_poll_update on devices`.execute(db.kysely);
  assert.equal((await svc.poller.poll(id)).lastPollStatus, "ok");
  assert.equal(await count(db, "snapshots", id), 3);
  assert.equal(await count(db, "snapshot_latest", id), 3);
});

async function assertNothingStored(db: Db, id: string) {
  assert.equal(await count(db, "snapshots", id), 0);
  assert.equal(await count(db, "snapshot_payloads"), 0);
  assert.equal(await count(db, "snapshot_latest", id), 0);
  const row = await db.kysely.selectFrom("devices").selectAll().where("id", "=", id)
    .executeTakeFirstOrThrow();
  assert.deepEqual([row.last_poll_at, row.last_poll_status, row.last_poll_error], [null, null, null]);
}

dbTest("a failed poll is logged at warning with hostname and status once per status change", async (db) => {
  const records = await captureLogs();
  const { svc } = await setup(db);
  await using dev = await fixtureDevice();
  const id = await addDevice(svc, dev.sim.url);
  const hostname = (await view(svc, id)).hostname;
  // The per-interval budget of devices named one by one is shared by the process: start a fresh interval so
  // the earlier tests' status changes do not turn this device's lines into a summary.
  pollLog.flush();
  const mine = () =>
    records.filter((r) => r.properties.hostname === hostname && r.level !== "debug")
      .map((r) => `${r.level} ${r.properties.status}`);
  await svc.poller.poll(id);
  dev.sim.faults.status = 503;
  for (let i = 0; i < 3; i++) await svc.poller.poll(id); // three failing scans, one warning
  dev.state.password = "rotated-on-the-device";
  dev.sim.faults.status = null;
  await svc.poller.poll(id);
  await svc.poller.poll(id);
  dev.state.password = "fixture-pass";
  await svc.poller.poll(id);
  await svc.poller.poll(id);
  assert.deepEqual(mine(), ["warning http_error", "warning auth_failed", "info ok"]);
  const warning = records.find((r) => r.level === "warning" && r.properties.hostname === hostname)!;
  assert.match(messageOf(warning), new RegExp(`^Poll of ${hostname} \\(fixture-fw\\) failed: http_error`));
  assert.equal(
    records.filter((r) => r.level === "debug" && r.properties.hostname === hostname).length,
    8,
    "every poll at debug level",
  );
});
