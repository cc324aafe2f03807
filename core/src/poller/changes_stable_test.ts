/**
 * The change history stays cheap when volatile paths move on every poll (issue 22, point 6): each snapshot
 * records whether its payload without volatile paths changed (`stable_changed`, migration 0011), the history
 * reads only rows where it is true or unknown, unknown rows (no stable hash, rows from before 0011) still
 * count, and a changed pattern set forgets the flags computed under the old one. Crosses the poller (the
 * cycle computes the stable hash, the store writes it), the snapshots room and the HTTP route.
 */
import assert from "node:assert/strict";
import { type Kysely, sql } from "kysely";
import { dbTest } from "../../harness/db.ts";
import { type HashedSnapshot, hashSnapshot, PollStore } from "./store.ts";
import { listChanges } from "../snapshots/changes.ts";
import { reconcilePatternSets } from "../snapshots/stable.ts";
import { remarkAll, remarkStep } from "../snapshots/remark.ts";
import { buildRegistry } from "../registry.ts";
import type { Database } from "../db/schema.ts";
import { testMigrator } from "../../harness/db.ts";
import { addDevice, fixtureDevice, setup } from "../../harness/poller_lab.ts";
import { fixtureAdapter, fixtureModules } from "../../testing/fixture_modules.ts";

const MODULE = { name: "@dutlab/adapter-fixture-fw", version: "0.0.1" };

/** The fixture modules with `volatilePaths` on the fixture-fw adapter. */
function modulesWith(volatilePaths: Record<string, string[]>) {
  const mods = fixtureModules();
  mods.adapters[0] = { ...mods.adapters[0]!, module: { ...fixtureAdapter, volatilePaths } };
  return mods;
}

/** A snapshot as the poll store writes it (`hashSnapshot`). */
const snap = hashSnapshot;

/** `[id, payload_changed, stable_changed]` of a device's snapshots of one label, oldest first. */
async function flags(k: Kysely<Database>, device: string, label: string) {
  return (await k.selectFrom("snapshots").select([
    sql<string>`id::text`.as("id"),
    "payload_changed",
    "stable_changed",
  ])
    .where("device_id", "=", device).where("endpoint_label", "=", label).orderBy(sql`snapshots.id`).execute())
    .map((r) => [r.id, r.payload_changed, r.stable_changed] as const);
}

/** Insert a snapshot with raw SQL, as a test or bench seeding rows does (no stable hash unless given). */
async function rawInsert(
  k: Kysely<Database>,
  device: string,
  s: HashedSnapshot,
  extra: { stable_sha256?: string; stable_changed?: boolean } = {},
): Promise<string> {
  await k.insertInto("snapshot_payloads").values({ sha256: s.sha256, payload: s.text, size_bytes: s.size })
    .onConflict((oc) => oc.column("sha256").doNothing()).execute();
  const r = await k.insertInto("snapshots").values({
    device_id: device,
    endpoint_label: s.label,
    payload_sha256: s.sha256,
    collected_at: new Date(),
    test_run_execution_id: null,
    adapter_module: MODULE.name,
    adapter_version: MODULE.version,
    ...extra,
  }).returning(sql<string>`id::text`.as("id")).executeTakeFirstOrThrow();
  return r.id;
}

dbTest(
  "a device polled 100 times whose uptime moves every poll and whose NTP servers change twice lists two changes",
  async (db) => {
    const { svc, app, auth } = await setup(db, {}, modulesWith({ system_info: ["/uptime"] }));
    await using dev = await fixtureDevice();
    const id = await addDevice(svc, dev.sim.url);
    for (let i = 1; i <= 100; i++) {
      dev.state.system = { model: "FX-1000", serial: "FX123", version: "1.2.3", uptime: 1000 + i * 30 };
      dev.state.ntp = i < 40 ? ["10.0.0.1"] : i < 80 ? ["10.0.0.2"] : ["10.0.0.3"];
      // The manual snapshot route: the poll cycle hashes, the poll store writes.
      const res = await app.request(`/api/admin/dut/devices/${id}/snapshot`, {
        method: "POST",
        headers: auth,
      });
      assert.equal(res.status, 200);
      assert.equal((await res.json()).ok, true);
    }
    const k = db.kysely;
    const sys = await flags(k, id, "system_info");
    const ntp = await flags(k, id, "ntp_config");
    const dec = await flags(k, id, "decrypt_policy");
    // system_info: a new hash on every poll after the first, never a real change.
    assert.deepEqual(sys.map(([, p, s]) => [p, s]), [[false, false], ...Array(99).fill([true, false])]);
    // ntp_config: two real changes (polls 40 and 80), nothing else; decrypt_policy: never a change.
    const real = (i: number) => i === 39 || i === 79;
    assert.deepEqual(ntp.map(([, p, s]) => [p, s]), ntp.map((_, i) => [real(i), real(i)]));
    assert.deepEqual(dec.map(([, p, s]) => [p, s]), dec.map(() => [false, false]));
    // The rows the default history reads: exactly the two changes.
    const read = await k.selectFrom("snapshots").select(sql<string>`id::text`.as("id"))
      .where("device_id", "=", id).where("payload_changed", "=", true)
      .where(sql<boolean>`stable_changed is not false`).orderBy(sql`snapshots.id`, "desc").execute();
    assert.deepEqual(read.map((r) => r.id), [ntp[79]![0], ntp[39]![0]]);

    const get = async (path: string) => {
      const res = await app.request(path, { headers: auth });
      assert.equal(res.status, 200, path);
      return await res.json();
    };
    const page = await get(`/api/admin/dut/devices/${id}/changes`);
    assert.deepEqual(page.changes.map((c: { snapshotId: string }) => c.snapshotId), [
      ntp[79]![0],
      ntp[39]![0],
    ]);
    assert.deepEqual(page.changes[0].changes, [{
      op: "replace",
      path: "/servers/0",
      before: "10.0.0.2",
      after: "10.0.0.3",
    }]);
    assert.equal(page.nextCursor, null);
    const one = await get(`/api/admin/dut/devices/${id}/changes?limit=1`);
    assert.deepEqual(one.changes.map((c: { snapshotId: string }) => c.snapshotId), [ntp[79]![0]]);
    const two = await get(`/api/admin/dut/devices/${id}/changes?limit=1&cursor=${one.nextCursor}`);
    assert.deepEqual(two.changes.map((c: { snapshotId: string }) => c.snapshotId), [ntp[39]![0]]);
    assert.equal(two.nextCursor, null);
    // With volatile paths included, every uptime move is a change again (payload_changed, as before).
    const loud = await get(
      `/api/admin/dut/devices/${id}/changes?label=system_info&volatile=include&limit=100`,
    );
    assert.equal(loud.changes.length, 99);
    assert.equal((await get(`/api/admin/dut/devices/${id}/changes?label=system_info`)).changes.length, 0);
    // The flags were recorded under a set with one more pattern: start-up records the change and the route
    // says which label waits for the background re-mark, with the same changes meanwhile.
    await reconcilePatternSets(k, svc.registry);
    await k.updateTable("volatile_path_sets").set({ patterns: '["/dropped","/uptime"]' })
      .where("vendor", "=", "fixture-fw").where("endpoint_label", "=", "system_info").execute();
    const [changed, ...none] = await reconcilePatternSets(k, svc.registry);
    assert.deepEqual([changed?.label, none], ["system_info", []]);
    const pending = await get(`/api/admin/dut/devices/${id}/changes`);
    assert.deepEqual(pending.remarking, [
      { endpointLabel: "system_info", belowId: changed?.remarkBelow, remaining: null },
    ]);
    assert.deepEqual(pending.changes, page.changes);
    assert.deepEqual(await remarkAll(k, svc.registry, { batch: 40 }), [
      { vendor: "fixture-fw", label: "system_info", compared: 99, forgotten: 0, done: true },
    ]);
    const after = await get(`/api/admin/dut/devices/${id}/changes`);
    assert.equal("remarking" in after, false);
    assert.deepEqual(after.changes, page.changes);
  },
);

dbTest(
  "the insert trigger sets stable_changed from the stable hashes, null when one is unknown, whatever the writer claims",
  async (db) => {
    const { svc } = await setup(db, {}, modulesWith({ system_info: ["/uptime"] }));
    const id = await addDevice(svc, "https://192.0.2.10");
    const row = await svc.devices.get(id);
    const registry = svc.registry;
    const store = new PollStore(db.kysely);
    const P = ["/uptime"];
    const write = async (s: HashedSnapshot) =>
      await store.write(row, MODULE, { status: "ok", error: "collected 1 snapshot(s)", snapshots: [s] });
    const k = db.kysely;
    const sys = (v: string, uptime: number) => ({ model: "FX-1000", version: v, uptime });
    await write(await snap("system_info", sys("1.0", 1), P)); // first: no change
    await write(await snap("system_info", sys("1.0", 2), P)); // only the uptime: false
    await rawInsert(k, id, await snap("system_info", sys("1.0", 3), null)); // no stable hash: null
    await write(await snap("system_info", sys("1.0", 4), P)); // the one before has none: null
    await write(await snap("system_info", sys("1.1", 5), P)); // a real change: true
    await write(await snap("system_info", sys("1.1", 5), P)); // same payload: false
    await write(await snap("system_info", sys("1.1", 6), null)); // the store without a stable hash: null
    // A writer that claims a flag is overruled by the trigger: a real change claimed false is true, a
    // volatile-only move claimed true is false.
    const claimed = await snap("system_info", sys("1.2", 7), P);
    await rawInsert(k, id, await snap("system_info", sys("1.2", 8), P), {
      stable_sha256: (await snap("system_info", sys("1.1", 8), P)).stableSha256!,
    }); // after a null: null
    await rawInsert(k, id, claimed, { stable_sha256: claimed.stableSha256!, stable_changed: false });
    const quiet = await snap("system_info", sys("1.2", 9), P);
    await rawInsert(k, id, quiet, { stable_sha256: quiet.stableSha256!, stable_changed: true });
    assert.deepEqual((await flags(k, id, "system_info")).map(([, p, s]) => [p, s]), [
      [false, false],
      [true, false],
      [true, null],
      [true, null],
      [true, true],
      [false, false],
      [true, null],
      [true, null],
      [true, true],
      [true, false],
    ]);
    // The history reads the unknown rows and compares them in full: the same answer as without the flag.
    const r = await listChanges(k, registry, id, {});
    assert.ok("changes" in r);
    const ids = (await flags(k, id, "system_info")).map(([i]) => i);
    // Real changes: 1.0 -> 1.1 (5th row), 1.1 -> 1.2 (8th row: its stable hash was made from a 1.1 payload,
    // but the stored payload is what is compared).
    assert.deepEqual(r.changes.map((c) => c.snapshotId), [ids[7], ids[4]]);
  },
);

dbTest(
  "a changed volatile pattern set forgets the flags computed under the old one, once",
  async (db) => {
    const v1 = modulesWith({ system_info: ["/uptime", "/version"] });
    const v2 = modulesWith({ system_info: ["/uptime"] });
    const { svc } = await setup(db, {}, v1);
    const id = await addDevice(svc, "https://192.0.2.11");
    const row = await svc.devices.get(id);
    const k = db.kysely;
    const r1 = buildRegistry(v1);
    const r2 = buildRegistry(v2);
    const first = await reconcilePatternSets(k, r1);
    assert.deepEqual(
      first.map((c) => [c.label, c.before, c.after, c.remarkBelow]),
      [
        ["system_info", null, '["/uptime","/version"]', null],
        ["ntp_config", null, "[]", null],
        ["decrypt_policy", null, "[]", null],
      ],
    );
    assert.deepEqual(await reconcilePatternSets(k, r1), []);
    const store = new PollStore(k);
    const poll = async (version: string, uptime: number, patterns: string[]) =>
      await store.write(row, MODULE, {
        status: "ok",
        error: "collected 1 snapshot(s)",
        snapshots: [await snap("system_info", { model: "FX-1000", version, uptime }, patterns)],
      });
    // Adapter v1 calls the software version volatile: the upgrade at poll 3 is not a change under v1.
    for (const [i, v] of ["1.0", "1.0", "2.0", "2.0"].entries()) await poll(v, i, ["/uptime", "/version"]);
    const ids = (await flags(k, id, "system_info")).map(([i]) => i);
    const history = async (registry: typeof r1) => {
      const r = await listChanges(k, registry, id, {});
      assert.ok("changes" in r);
      return r.changes.map((c) => c.snapshotId);
    };
    assert.deepEqual(await history(r1), []);
    // Adapter v2 no longer does: the flag computed under v1 would hide the upgrade.
    assert.deepEqual(await history(r2), [], "the stale flag hides the change until the set is reconciled");
    const changed = await reconcilePatternSets(k, r2);
    const top = String(BigInt(ids.at(-1)!) + 1n);
    assert.deepEqual(changed.map((c) => [c.vendor, c.label, c.before, c.after, c.remarkBelow]), [
      ["fixture-fw", "system_info", '["/uptime","/version"]', '["/uptime"]', top],
    ]);
    // Start-up only recorded the change: no flag is touched yet, and the history does not trust them.
    assert.deepEqual((await flags(k, id, "system_info")).map(([, p, s]) => [p, s]), [
      [false, false],
      [true, false],
      [true, false],
      [true, false],
    ]);
    assert.deepEqual(await history(r2), [ids[2]]);
    const pending = await listChanges(k, r2, id, {});
    assert.ok("changes" in pending);
    assert.deepEqual(pending.remarking, [{ endpointLabel: "system_info", belowId: top, remaining: null }]);
    // `volatile=include` reads every hash change anyway: nothing to report.
    const incl = await listChanges(k, r2, id, { volatile: "include" });
    assert.ok("changes" in incl && incl.remarking === undefined);
    assert.deepEqual(await reconcilePatternSets(k, r2), [], "done once");
    // The background re-mark, in batches of one: a step under another release's patterns does nothing.
    assert.equal(await remarkStep(k, r1, "fixture-fw", "system_info", 1), null);
    const step = await remarkStep(k, r2, "fixture-fw", "system_info", 1);
    assert.deepEqual(step, {
      vendor: "fixture-fw",
      label: "system_info",
      compared: 1,
      forgotten: 0,
      done: false,
    });
    const mid = await listChanges(k, r2, id, {});
    assert.ok("changes" in mid);
    assert.deepEqual(mid.changes.map((c) => c.snapshotId), [ids[2]], "correct half-way");
    assert.deepEqual(mid.remarking, [{ endpointLabel: "system_info", belowId: ids[3], remaining: 2 }]);
    assert.deepEqual(await remarkAll(k, r2, { batch: 1 }), [
      { vendor: "fixture-fw", label: "system_info", compared: 2, forgotten: 1, done: true },
    ]);
    // Only the upgrade's flag no longer holds under v2; the uptime-only polls keep `false`.
    assert.deepEqual((await flags(k, id, "system_info")).map(([, p, s]) => [p, s]), [
      [false, false],
      [true, false],
      [true, null],
      [true, false],
    ]);
    const done = await listChanges(k, r2, id, {});
    assert.ok("changes" in done && done.remarking === undefined);
    assert.deepEqual(done.changes.map((c) => c.snapshotId), [ids[2]]);
    assert.deepEqual(await remarkAll(k, r2), [], "nothing pending");
    // New polls under v2: the first is compared with a hash made under v1 (never equal, so a candidate that
    // is compared in full); after it the flags are v2's.
    await poll("2.0", 10, ["/uptime"]);
    await poll("2.0", 11, ["/uptime"]);
    await poll("2.1", 12, ["/uptime"]);
    const after = (await flags(k, id, "system_info")).map(([, p, s]) => [p, s]);
    assert.deepEqual(after.slice(4), [[true, true], [true, false], [true, true]]);
    const all = (await flags(k, id, "system_info")).map(([i]) => i);
    assert.deepEqual(await history(r2), [all[6], ids[2]]);
    // A set that only gains a pattern keeps the flags: equal without the old patterns is equal without more.
    const v3 = buildRegistry(modulesWith({ system_info: ["/uptime", "/serial"] }));
    const gained = await reconcilePatternSets(k, v3);
    assert.deepEqual(gained.map((c) => [c.label, c.before, c.after, c.remarkBelow]), [
      ["system_info", '["/uptime"]', '["/serial","/uptime"]', null],
    ]);
    assert.deepEqual(await history(v3), [all[6], ids[2]]);
    // A vendor that is gone keeps no patterns: its non-empty set is reconciled to none.
    const gone = await reconcilePatternSets(k, buildRegistry({ ...fixtureModules(), adapters: [] }));
    assert.deepEqual(gone.map((c) => [c.vendor, c.label, c.after]), [["fixture-fw", "system_info", "[]"]]);
  },
);

dbTest(
  "snapshots stay append-only: the only UPDATE let through forgets a stable flag",
  async (db) => {
    const { svc } = await setup(db, {}, modulesWith({ system_info: ["/uptime"] }));
    const id = await addDevice(svc, "https://192.0.2.12");
    const k = db.kysely;
    const a = await snap("system_info", { uptime: 1 }, ["/uptime"]);
    const b = await snap("system_info", { uptime: 2 }, ["/uptime"]);
    await rawInsert(k, id, a, { stable_sha256: a.stableSha256! });
    const second = await rawInsert(k, id, b, { stable_sha256: b.stableSha256! });
    const where = sql`device_id = ${id} and id = ${second}::bigint`;
    for (
      const set of [
        "stable_changed = true",
        "stable_sha256 = null",
        "stable_changed = null, adapter_version = 'x'",
      ]
    ) {
      await assert.rejects(
        sql`update snapshots set ${sql.raw(set)} where ${where}`.execute(k),
        /append-only/,
        set,
      );
    }
    await sql`update snapshots set stable_changed = null where ${where}`.execute(k);
    assert.deepEqual((await flags(k, id, "system_info")).map(([, p, s]) => [p, s]), [[false, false], [
      true,
      null,
    ]]);
    // Once null it stays: null to anything is refused too.
    await assert.rejects(
      sql`update snapshots set stable_changed = false where ${where}`.execute(k),
      /append-only/,
    );
  },
);

dbTest("rows written before migration 0011 have no stable flag and still count as changes", async (db) => {
  const k = db.kysely;
  const m = await testMigrator(k);
  const { svc } = await setup(db, {}, modulesWith({ system_info: ["/uptime"] }));
  const id = await addDevice(svc, "https://192.0.2.13");
  const row = await svc.devices.get(id);
  const down = await m.migrateTo("2026_11_24_0010_devices_version");
  if (down.error) throw down.error;
  // Before 0011: the old columns only.
  const old = async (version: string, uptime: number) => {
    const s = await snap("system_info", { model: "FX-1000", version, uptime }, null);
    await sql`insert into snapshot_payloads (sha256, payload, size_bytes) values (${s.sha256}, ${s.text},
      ${s.size}) on conflict do nothing`.execute(k);
    await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, collected_at, adapter_module,
      adapter_version) values (${id}::uuid, 'system_info', ${s.sha256}, now(), ${MODULE.name}, ${MODULE.version})`
      .execute(k);
  };
  await old("1.0", 1);
  await old("1.0", 2);
  await old("1.1", 3);
  await old("1.1", 4);
  const up = await m.migrateToLatest();
  if (up.error) throw up.error;
  const store = new PollStore(k);
  const P = ["/uptime"];
  for (const [v, u] of [["1.1", 5], ["1.1", 6], ["1.2", 7]] as const) {
    await store.write(row, MODULE, {
      status: "ok",
      error: "collected 1 snapshot(s)",
      snapshots: [await snap("system_info", { model: "FX-1000", version: v, uptime: u }, P)],
    });
  }
  const f = await flags(k, id, "system_info");
  assert.deepEqual(f.map(([, p, s]) => [p, s]), [
    [false, null],
    [true, null],
    [true, null],
    [true, null],
    [true, null], // the one before has no stable hash
    [true, false],
    [true, true],
  ]);
  const r = await listChanges(k, svc.registry, id, {});
  assert.ok("changes" in r);
  assert.deepEqual(r.changes.map((c) => c.snapshotId), [f[6]![0], f[2]![0]]);
});

dbTest(
  "rows not yet compacted: the history and the re-mark cross from snapshot_rows into snapshots_legacy",
  async (db) => {
    const k = db.kysely;
    const m = await testMigrator(k);
    const v1 = modulesWith({ system_info: ["/uptime", "/version"] });
    const v2 = buildRegistry(modulesWith({ system_info: ["/uptime"] }));
    const { svc } = await setup(db, {}, v1);
    const r1 = buildRegistry(v1);
    await reconcilePatternSets(k, r1);
    const id = await addDevice(svc, "https://192.0.2.14");
    const row = await svc.devices.get(id);
    const down = await m.migrateTo("2026_11_25_0016_labs");
    if (down.error) throw down.error;
    // Before 0017: one table with the stable hash per row (the insert trigger sets the flags).
    const P1 = ["/uptime", "/version"];
    const legacy = async (version: string, uptime: number) => {
      const s = await snap("system_info", { model: "FX-1000", version, uptime }, P1);
      await sql`insert into snapshot_payloads (sha256, payload, size_bytes) values (${s.sha256}, ${s.text},
        ${s.size}) on conflict do nothing`.execute(k);
      await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, stable_sha256, collected_at,
        adapter_module, adapter_version) values (${id}::uuid, 'system_info', ${s.sha256}, ${s.stableSha256!},
        now(), ${MODULE.name}, ${MODULE.version})`.execute(k);
    };
    await legacy("1.0", 1);
    await legacy("1.1", 2); // only /version moved: false under v1
    await legacy("1.1", 3);
    const up = await m.migrateToLatest();
    if (up.error) throw up.error;
    const store = new PollStore(k);
    for (const [v, u] of [["1.2", 4], ["1.2", 5]] as const) {
      await store.write(row, MODULE, {
        status: "ok",
        error: "collected 1 snapshot(s)",
        snapshots: [await snap("system_info", { model: "FX-1000", version: v, uptime: u }, P1)],
      });
    }
    const legacyIds = (await sql<{ id: string }>`select id::text as id from snapshots_legacy
      where device_id = ${id}::uuid order by id`.execute(k)).rows.map((r) => r.id);
    const rowIds = (await sql<{ id: string }>`select r.id::text as id from snapshot_rows r
      join snapshot_series se on se.id = r.series_id where se.device_id = ${id}::uuid order by r.id`.execute(
      k,
    ))
      .rows.map((r) => r.id);
    assert.equal(legacyIds.length, 3);
    assert.equal(rowIds.length, 2);
    const f = await flags(k, id, "system_info");
    assert.deepEqual(f.map(([, p, s]) => [p, s]), [
      [false, false],
      [true, false],
      [true, false],
      [true, false], // 1.1 -> 1.2 compared with the legacy row's stable hash: only /version, volatile in v1
      [true, false],
    ]);
    const history = async (registry: typeof r1, q = {}) => {
      const r = await listChanges(k, registry, id, q);
      assert.ok("changes" in r);
      return r.changes.map((c) => [c.snapshotId, c.previousId]);
    };
    assert.deepEqual(await history(r1), []);
    // With volatile paths included, the oldest compacted row's previous poll is the newest legacy row.
    assert.deepEqual(await history(r1, { volatile: "include" }), [
      [rowIds[1], rowIds[0]],
      [rowIds[0], legacyIds[2]],
      [legacyIds[2], legacyIds[1]],
      [legacyIds[1], legacyIds[0]],
    ]);
    // v2 no longer calls /version volatile: the two upgrades are changes, in both tables, before and after
    // the re-mark.
    const [c] = await reconcilePatternSets(k, v2);
    assert.ok(c?.remarkBelow);
    const want = [[rowIds[0], legacyIds[2]], [legacyIds[1], legacyIds[0]]];
    assert.deepEqual(await history(v2), want);
    assert.deepEqual(await history(v2, { label: "system_info" }), want);
    assert.deepEqual(await remarkAll(k, v2, { batch: 2 }), [
      { vendor: "fixture-fw", label: "system_info", compared: 4, forgotten: 2, done: true },
    ]);
    assert.deepEqual((await flags(k, id, "system_info")).map(([, p, s]) => [p, s]), [
      [false, false],
      [true, null],
      [true, false],
      [true, null],
      [true, false],
    ]);
    assert.deepEqual(await history(v2), want);
    // A page of one, then the next through the cursor.
    const p1 = await listChanges(k, v2, id, { limit: 1 });
    assert.ok("changes" in p1 && p1.nextCursor);
    const p2 = await listChanges(k, v2, id, { limit: 1, cursor: p1.nextCursor });
    assert.ok("changes" in p2);
    assert.deepEqual(p2.changes.map((x) => x.snapshotId), [legacyIds[1]]);
  },
);

dbTest(
  "while a re-mark is pending a page reads a bounded number of polls; following the cursors gives every change",
  async (db) => {
    const v1 = modulesWith({ system_info: ["/uptime", "/version"] });
    const v2 = modulesWith({ system_info: ["/uptime"] });
    const { svc } = await setup(db, {}, v1);
    const id = await addDevice(svc, "https://192.0.2.12");
    const k = db.kysely;
    const r1 = buildRegistry(v1);
    const r2 = buildRegistry(v2);
    await reconcilePatternSets(k, r1);
    // 1,500 polls, the uptime moving on every one (every poll a hash change) and the version moving at three
    // of them: under v1 (version volatile) no change, under v2 three, all below the re-mark's cut.
    await sql`insert into snapshot_payloads (sha256, payload, size_bytes)
      select encode(sha256(convert_to(t, 'UTF8')), 'hex'), t, length(t) from (
        select '{"model":"FX-1000","uptime":' || i || ',"version":"' ||
          case when i < 300 then '1.0' when i < 700 then '1.1' when i < 1400 then '2.0' else '2.1' end || '"}' as t
        from generate_series(0, 1499) i) x`.execute(k);
    for (let from = 0; from < 1500; from += 500) {
      // Under v1 every poll's stable hash is the same (uptime and version stripped): flags false.
      await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, stable_sha256, collected_at,
          adapter_module, adapter_version)
        select ${id}::uuid, 'system_info', encode(sha256(convert_to('{"model":"FX-1000","uptime":' || i ||
          ',"version":"' || case when i < 300 then '1.0' when i < 700 then '1.1' when i < 1400 then '2.0'
          else '2.1' end || '"}', 'UTF8')), 'hex'), ${
        "a".repeat(64)
      }, now(), ${MODULE.name}, ${MODULE.version}
        from generate_series(${from}::int, ${from + 499}::int) i order by i`.execute(k);
    }
    const all = async (registry: typeof r1) => {
      const out: string[] = [];
      let cursor: string | undefined;
      let short = 0;
      for (let n = 0; n < 100; n++) {
        const r = await listChanges(k, registry, id, { limit: 20, cursor });
        assert.ok("changes" in r);
        out.push(...r.changes.map((c) => c.snapshotId));
        if (!r.nextCursor) return { out, short };
        if (r.changes.length < 20) short++;
        cursor = r.nextCursor;
      }
      throw new Error("more than 100 pages");
    };
    assert.deepEqual((await all(r1)).out, [], "under v1 nothing changed");
    await reconcilePatternSets(k, r2);
    const pending = await all(r2);
    assert.equal(pending.out.length, 3, "the three version changes");
    assert.ok(pending.short >= 1, "a page stopped early with a cursor while the re-mark was pending");
    await remarkAll(k, r2);
    const done = await all(r2);
    assert.deepEqual(done.out, pending.out, "the same changes once re-marked");
    assert.equal(done.short, 0);
  },
);
