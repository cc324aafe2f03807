/**
 * Snapshot diffs and change history (docs/polling.md "Diffs and change history"): snapshots are written through the
 * poller's store, volatile paths come from the adapter, the API answers RFC 6902 patches.
 */
import assert from "node:assert/strict";
import { applyPatch } from "rfc6902";
import { dbTest } from "../../harness/db.ts";
import { hashSnapshot, PollStore } from "../poller/store.ts";
import { decryptAlertWriter } from "./alerts.ts";
import { stripVolatile } from "../snapshots/volatile.ts";
import { requiredRole } from "../access/tokens.ts";
import { addDevice, setup } from "../../harness/poller_lab.ts";
import { fixtureAdapter, fixtureModules } from "../../testing/fixture_modules.ts";
import type { Db } from "../db/open.ts";

const MODULE = { name: "@dutlab/adapter-fixture-fw", version: "0.0.1" };
const VOLATILE = { system_info: ["/uptime"], ntp_config: ["/peers/*/lastPoll"] };

/** A snapshot as the poll store writes it (`hashSnapshot`). */
const snap = hashSnapshot;

/** Poll `i` of a device whose uptime and NTP peer clock move every poll; NTP changes at 30, decrypt at 70. */
function poll(i: number) {
  const servers = i < 30 ? ["10.0.0.1", "10.0.0.2"] : ["10.0.0.9", "10.0.0.2"];
  return {
    system_info: { model: "FX-1000", version: "1.2.3", uptime: 1000 + i * 30 },
    ntp_config: { servers, peers: servers.map((s) => ({ server: s, lastPoll: i })) },
    decrypt_policy: { mode: i < 70 ? "decrypt" : "off", rules: 3 },
  };
}

async function lab(db: Db) {
  const mods = fixtureModules();
  mods.adapters[0] = { ...mods.adapters[0]!, module: { ...fixtureAdapter, volatilePaths: VOLATILE } };
  const { svc, app, auth } = await setup(db, {}, mods);
  const id = await addDevice(svc, "https://192.0.2.10");
  const row = await svc.devices.get(id);
  const store = new PollStore(db.kysely, { hooks: [decryptAlertWriter(svc.registry)] });
  for (let i = 1; i <= 100; i++) {
    const p = poll(i);
    const snapshots = await Promise.all(Object.entries(p).map(([label, payload]) => snap(label, payload)));
    await store.write(row, MODULE, { status: "ok", error: "collected 3 snapshot(s)", snapshots });
  }
  const get = async (path: string) => {
    const res = await app.request(path, { headers: auth });
    return { status: res.status, body: await res.json() };
  };
  const ids = async (label: string): Promise<string[]> =>
    (await get(`/api/admin/dut/snapshots?deviceId=${id}&endpointLabel=${label}&limit=1000`)).body.snapshots
      .map((s: { id: string }) => s.id).reverse();
  return { id, get, ids };
}

dbTest(
  "a device polled 100 times with two real changes and a clock moving every poll lists two changes",
  async (db) => {
    const { id, get, ids } = await lab(db);
    const ntp = await ids("ntp_config");
    const decrypt = await ids("decrypt_policy");
    const r = await get(`/api/admin/dut/devices/${id}/changes`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.changes.map((c: { snapshotId: string }) => c.snapshotId), [decrypt[69], ntp[29]]);
    assert.equal(r.body.nextCursor, null);
    const [dec, ntpChange] = r.body.changes;
    assert.equal(dec.endpointLabel, "decrypt_policy");
    assert.equal(dec.previousId, decrypt[68]);
    assert.deepEqual(dec.patch, [{ op: "replace", path: "/mode", value: "off" }]);
    assert.deepEqual(dec.changes, [{ op: "replace", path: "/mode", before: "decrypt", after: "off" }]);
    // The NTP diff names the server and the peer entry, never the peer clock that moved on every poll.
    assert.deepEqual(
      ntpChange.changes.map((
        c: { path: string; before: unknown; after: unknown },
      ) => [c.path, c.before, c.after]),
      [["/peers/0/server", "10.0.0.1", "10.0.0.9"], ["/servers/0", "10.0.0.1", "10.0.0.9"]].sort(),
    );

    // Paging: one change per page, newest first, then the end.
    const p1 = await get(`/api/admin/dut/devices/${id}/changes?limit=1`);
    assert.deepEqual(p1.body.changes.map((c: { snapshotId: string }) => c.snapshotId), [decrypt[69]]);
    const p2 = await get(`/api/admin/dut/devices/${id}/changes?limit=1&cursor=${p1.body.nextCursor}`);
    assert.deepEqual(p2.body.changes.map((c: { snapshotId: string }) => c.snapshotId), [ntp[29]]);
    assert.equal(p2.body.nextCursor, null);

    // Filters: label, and the collection-time window.
    const onlyNtp = await get(`/api/admin/dut/devices/${id}/changes?label=ntp_config`);
    assert.deepEqual(onlyNtp.body.changes.map((c: { snapshotId: string }) => c.snapshotId), [ntp[29]]);
    const future = new Date(Date.now() + 3600_000).toISOString();
    assert.deepEqual((await get(`/api/admin/dut/devices/${id}/changes?since=${future}`)).body.changes, []);
    assert.equal((await get(`/api/admin/dut/devices/${id}/changes?until=${future}`)).body.changes.length, 2);

    // volatile=include: every poll of system_info after the first changed its uptime.
    const all = await get(
      `/api/admin/dut/devices/${id}/changes?label=system_info&volatile=include&limit=100`,
    );
    assert.equal(all.body.changes.length, 99);
    assert.deepEqual(all.body.changes[0].changes, [{
      op: "replace",
      path: "/uptime",
      before: 3970,
      after: 4000,
    }]);

    // Bad input is a 400 naming the field; an unknown device a 404.
    for (const q of ["cursor=zz", "limit=0", "since=yesterday", "volatile=maybe", "label=Bad-Label", "x=1"]) {
      const bad = await get(`/api/admin/dut/devices/${id}/changes?${q}`);
      assert.equal(bad.status, 400, q);
    }
    assert.equal((await get(`/api/admin/dut/devices/${crypto.randomUUID()}/changes`)).status, 404);
    assert.equal((await get(`/api/admin/dut/devices/not-a-uuid/changes`)).status, 404);
  },
);

dbTest(
  "snapshot diff: default previous, volatile paths excluded unless included, 404 and 400",
  async (db) => {
    const { get, ids } = await lab(db);
    const ntp = await ids("ntp_config");
    const sys = await ids("system_info");
    const decrypt = await ids("decrypt_policy");

    const d = await get(`/api/admin/dut/snapshots/${ntp[29]}/diff`);
    assert.equal(d.status, 200);
    assert.equal(d.body.againstId, ntp[28]);
    assert.equal(d.body.equal, false);
    assert.deepEqual(d.body.volatilePaths, VOLATILE.ntp_config);
    // The patch turns the older payload (without volatile paths) into the newer one.
    const older = stripVolatile(poll(29).ntp_config, VOLATILE.ntp_config);
    const errors = applyPatch(older, d.body.patch);
    assert.ok(errors.every((e) => e === null));
    assert.deepEqual(older, stripVolatile(poll(30).ntp_config, VOLATILE.ntp_config));

    // Only the clock moved: equal, empty patch; with volatile=include the clock shows.
    const quiet = await get(`/api/admin/dut/snapshots/${sys[50]}/diff`);
    assert.deepEqual([quiet.body.equal, quiet.body.patch, quiet.body.changes], [true, [], []]);
    const loud = await get(`/api/admin/dut/snapshots/${sys[50]}/diff?volatile=include`);
    assert.deepEqual(loud.body.changes, [{ op: "replace", path: "/uptime", before: 2500, after: 2530 }]);
    assert.deepEqual(loud.body.volatilePaths, []);

    // Equal payload hashes: an empty diff; an explicit `against` far back spans both changes of nothing else.
    const same = await get(`/api/admin/dut/snapshots/${decrypt[40]}/diff`);
    assert.equal(same.body.payloadSha256, same.body.againstPayloadSha256);
    assert.deepEqual([same.body.equal, same.body.patch], [true, []]);
    const span = await get(`/api/admin/dut/snapshots/${decrypt[99]}/diff?against=${decrypt[0]}`);
    assert.equal(span.body.againstId, decrypt[0]);
    assert.deepEqual(span.body.changes, [{ op: "replace", path: "/mode", before: "decrypt", after: "off" }]);

    // Unknown ids and the first snapshot (nothing before it) are 404; different labels 400.
    assert.equal((await get(`/api/admin/dut/snapshots/999999999/diff`)).status, 404);
    assert.equal((await get(`/api/admin/dut/snapshots/abc/diff`)).status, 404);
    assert.equal((await get(`/api/admin/dut/snapshots/${ntp[5]}/diff?against=999999999`)).status, 404);
    assert.equal((await get(`/api/admin/dut/snapshots/${ntp[0]}/diff`)).status, 404);
    const mixed = await get(`/api/admin/dut/snapshots/${ntp[5]}/diff?against=${sys[5]}`);
    assert.equal(mixed.status, 400);
    assert.match(mixed.body.detail, /query\.against.*system_info/);
    assert.equal((await get(`/api/admin/dut/snapshots/${ntp[5]}/diff?against=x1`)).status, 400);
    assert.equal((await get(`/api/admin/dut/snapshots/${ntp[5]}/diff?volatile=no`)).status, 400);
    // Reads: a viewer token may ask.
    assert.equal(requiredRole("GET", "/api/admin/dut/snapshots/:id/diff"), "viewer");
    assert.equal(requiredRole("GET", "/api/admin/dut/devices/:id/changes"), "viewer");
  },
);

dbTest(
  "payload_changed marks exactly the snapshots whose hash differs from the one before (same device and label)",
  async (db) => {
    const { id } = await lab(db);
    const k = db.kysely;
    const before = await k.selectFrom("snapshots").select(({ fn }) => fn.countAll<string>().as("n"))
      .where("device_id", "=", id).where("payload_changed", "=", true).executeTakeFirstOrThrow();
    // lab(): uptime moves every poll of system_info (99 hash changes), NTP peers' clocks likewise (99),
    // decrypt_policy once: hash changes, before any volatile path is left out.
    assert.equal(Number(before.n), 99 + 99 + 1);
    // Written by raw SQL, not the poller: the trigger sets the marker for every writer. A payload that comes
    // back to an earlier hash is a change again; another label in between does not matter.
    const [a, b] = [await snap("x_label", { v: 1 }), await snap("x_label", { v: 2 })];
    for (const s of [a, b]) {
      await k.insertInto("snapshot_payloads").values({
        sha256: s.sha256,
        payload: s.text,
        size_bytes: s.size,
      })
        .onConflict((oc) => oc.column("sha256").doNothing()).execute();
    }
    const marks: boolean[] = [];
    for (
      const [label, s] of [["x_label", a], ["x_label", a], ["y_label", b], ["x_label", b], [
        "x_label",
        a,
      ]] as const
    ) {
      const r = await k.insertInto("snapshots").values({
        device_id: id,
        endpoint_label: label,
        payload_sha256: s.sha256,
        collected_at: new Date(),
        test_run_execution_id: null,
        adapter_module: MODULE.name,
        adapter_version: MODULE.version,
        // A writer cannot claim a change: the trigger decides.
        payload_changed: true,
      }).returning("payload_changed").executeTakeFirstOrThrow();
      marks.push(r.payload_changed);
    }
    assert.deepEqual(marks, [false, false, false, true, true]);
  },
);
