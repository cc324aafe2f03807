/**
 * Trust on first use in a poll (issue 53): a `self-signed` device's first certificate is pinned in the
 * transaction that records the poll's results, so a first scan changes the device list once per batch instead
 * of once per new device; a PATCH during the poll (new URL, new TLS mode, a pin set) wins over it.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import type { Db } from "../db/open.ts";
import { dbTest } from "../../harness/db.ts";
import { addDevice, fixtureDevice, setup } from "../../harness/poller_lab.ts";
import { hashSnapshot, type Outcome, PollStore } from "./store.ts";

const MODULE = { name: "@dutlab/adapter-fixture", version: "0.0.1" };

async function devicesVersion(db: Db): Promise<number> {
  const r = await sql<{ v: string }>`select version::text as v from table_versions where name = 'devices'`
    .execute(db.kysely);
  return Number(r.rows[0]!.v);
}

dbTest("a poll pins a self-signed device's first certificate with its results, failed or not", async (db) => {
  const { svc } = await setup(db);
  await using dev = await fixtureDevice();
  const id = await addDevice(svc, dev.sim.url, { tlsVerifyMode: "self-signed" });
  // A failed poll after the handshake pins too: the certificate was presented on a successful connection.
  dev.state.password = "rotated-on-the-device";
  const before = await devicesVersion(db);
  const failed = await svc.poller.poll(id);
  assert.equal(failed.lastPollStatus, "auth_failed", failed.lastPollError);
  const row = await svc.devices.get(id);
  assert.equal(row.pinned_cert_sha256, dev.sim.fingerprint);
  assert.equal(row.last_poll_status, "auth_failed");
  assert.equal(await devicesVersion(db), before + 1, "pin and status: one committed change of the devices");
  // The pin is in force: a rotated certificate is refused and the pin stays.
  await dev.sim.rotateCertificate();
  const refused = await svc.poller.poll(id);
  assert.equal(refused.lastPollStatus, "tls_error");
  assert.notEqual((await svc.devices.get(id)).pinned_cert_sha256, dev.sim.fingerprint);
});

dbTest(
  "a poll's pin is written only where the device still has no pin, its URL and its TLS mode",
  async (db) => {
    const { svc } = await setup(db);
    const ids = await Promise.all(
      [1, 2, 3, 4].map((i) => addDevice(svc, `https://192.0.2.${i}`, { tlsVerifyMode: "self-signed" })),
    );
    // The rows as each poll read them at its start.
    const rows = await Promise.all(ids.map((id) => svc.devices.get(id)));
    const set = (id: string, v: Record<string, unknown>) =>
      db.kysely.updateTable("devices").set(v as never).where("id", "=", id).execute();
    // Meanwhile: device 1 pinned by a connection test, device 2 moved, device 3 no longer self-signed.
    await set(ids[1]!, { pinned_cert_sha256: "b".repeat(64) });
    await set(ids[2]!, { base_url: "https://192.0.2.99" });
    await set(ids[3]!, { tls_verify_mode: "insecure" });
    const store = new PollStore(db.kysely);
    const outcome = async (n: number): Promise<Outcome> => ({
      status: "ok",
      error: "collected 1 snapshot(s)",
      snapshots: [await hashSnapshot("deploy_status", { n })],
      pinnedCertSha256: String(n).repeat(64),
    });
    await Promise.all(rows.map(async (r, i) => store.write(r, MODULE, await outcome(i))));
    const pins = await Promise.all(ids.map(async (id) => (await svc.devices.get(id)).pinned_cert_sha256));
    assert.deepEqual(pins, ["0".repeat(64), "b".repeat(64), null, null]);
    for (const id of ids) assert.equal((await svc.devices.get(id)).last_poll_status, "ok");
  },
);
