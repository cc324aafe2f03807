/**
 * The snapshot store (issue 8 point 6): hashes, append-only rows, content-addressed payloads, the
 * producing adapter, the run link and the latest-per-label index.
 */
import assert from "node:assert/strict";
import canonicalize from "canonicalize";
import { type RawBuilder, sql } from "kysely";
import { dbTest } from "../../harness/db.ts";
import { latestSnapshots, type SnapshotView } from "../snapshots/store.ts";
import { RECOMPUTE } from "./routes_snapshots.ts";
import {
  addDevice,
  count,
  fixtureDevice,
  insertActiveRun,
  setup,
  view,
  webSha256Hex as sha256,
} from "../../harness/poller_lab.ts";
import type { OpenAPIHono } from "@hono/zod-openapi";

async function list(app: OpenAPIHono, auth: Record<string, string>, query = ""): Promise<SnapshotView[]> {
  const res = await app.request(`/api/admin/dut/snapshots?limit=1000${query}`, { headers: auth });
  assert.equal(res.status, 200);
  return (await res.json()).snapshots;
}

dbTest("payloadSha256 is the SHA-256 of the RFC 8785 canonical JSON of payloadJson", async (db) => {
  const { svc, app, auth } = await setup(db);
  await using dev = await fixtureDevice();
  dev.state.ntp = ["zeit.bücher.example", "10.0.0.1", 'ntp\u2028"quoted"'];
  dev.state.decryptRules = 3; // rules are {id, action}: canonical order is action, id
  await svc.poller.poll(await addDevice(svc, dev.sim.url));
  const snaps = await list(app, auth);
  assert.equal(snaps.length, 3);
  for (const s of snaps) {
    const canonical = canonicalize(s.payloadJson)!;
    assert.equal(s.payloadSha256, await sha256(canonical), s.endpointLabel);
    assert.match(s.payloadSha256, /^[0-9a-f]{64}$/);
    const stored = await db.kysely.selectFrom("snapshot_payloads").select(["payload", "size_bytes"])
      .where("sha256", "=", s.payloadSha256).executeTakeFirstOrThrow();
    assert.equal(stored.payload, canonical, "the stored bytes are the hashed bytes");
    assert.equal(stored.size_bytes, new TextEncoder().encode(canonical).length);
  }
  // The device sent {"id":0,"action":"decrypt"}: its own bytes are not what is hashed.
  const decrypt = snaps.find((s) => s.endpointLabel === "decrypt_policy")!;
  const asSent = JSON.stringify({ rules: [0, 1, 2].map((id) => ({ id, action: "decrypt" })) });
  assert.deepEqual(JSON.parse(asSent), decrypt.payloadJson);
  assert.notEqual(decrypt.payloadSha256, await sha256(asSent));
});

dbTest("the one-line recomputation in the API description confirms a stored hash", async (db) => {
  const { svc, app, auth } = await setup(db);
  await using dev = await fixtureDevice();
  dev.state.decryptRules = 2;
  await svc.poller.poll(await addDevice(svc, dev.sim.url));
  const doc = await (await app.request("/api/openapi.json")).json();
  assert.ok(doc.paths["/api/admin/dut/snapshots"].get.description.includes(RECOMPUTE));
  const dir = await Deno.makeTempDir();
  try {
    const page = await (await app.request("/api/admin/dut/snapshots?limit=1", { headers: auth })).text();
    const recompute = async (json: string) => {
      await Deno.writeTextFile(`${dir}/page.json`, json);
      const out = await new Deno.Command("sh", { args: ["-c", RECOMPUTE], cwd: dir, stderr: "inherit" })
        .output();
      return new TextDecoder().decode(out.stdout).trim();
    };
    assert.equal(await recompute(page), "true");
    // and a payload altered after hashing is caught
    const altered = page.replace('"id":1', '"id":7');
    assert.notEqual(altered, page);
    assert.equal(await recompute(altered), "false");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

dbTest("identical payloads are stored once while every poll gets its own snapshots", async (db) => {
  const { svc, app, auth } = await setup(db);
  await using dev = await fixtureDevice();
  const a = await addDevice(svc, dev.sim.url);
  const pollTimes = [];
  for (let i = 0; i < 3; i++) pollTimes.push((await svc.poller.poll(a)).lastPollAt);
  assert.equal(await count(db, "snapshots"), 9);
  assert.equal(await count(db, "snapshot_payloads"), 3);
  let snaps = await list(app, auth);
  assert.equal(new Set(snaps.map((s) => s.id)).size, 9, "own ids");
  assert.deepEqual([...new Set(snaps.map((s) => s.collectedAt))].sort(), pollTimes.sort(), "own collectedAt");
  assert.equal(new Set(snaps.map((s) => s.payloadSha256)).size, 3);
  // one changed label adds one payload; another device with the same data adds none
  dev.state.ntp = ["10.9.9.9"];
  await svc.poller.poll(a);
  assert.equal(await count(db, "snapshot_payloads"), 4);
  const b = await addDevice(svc, dev.sim.url);
  await svc.poller.poll(b);
  assert.equal(await count(db, "snapshots"), 15);
  assert.equal(await count(db, "snapshot_payloads"), 4);
  snaps = await list(app, auth, `&deviceId=${b}`);
  assert.equal(snaps.length, 3);
  const bytes = await sql<{ n: number }>`select sum(size_bytes)::int as n from snapshot_payloads`.execute(
    db.kysely,
  );
  assert.ok(bytes.rows[0]!.n < 1000, "payload bytes do not grow with the number of polls");
});

dbTest("each snapshot names its adapter module and version and links the active run, if any", async (db) => {
  const { svc, app, auth } = await setup(db);
  await using dev = await fixtureDevice();
  const id = await addDevice(svc, dev.sim.url);
  await svc.poller.poll(id);
  const before = await list(app, auth);
  for (const s of before) {
    assert.equal(s.adapterModule, "@dutlab/adapter-fixture-fw");
    assert.equal(s.adapterVersion, "0.0.1");
    assert.equal(s.testRunExecutionId, null, "no active run");
  }
  const run = await insertActiveRun(db);
  await svc.poller.poll(id);
  const during = await list(app, auth, `&testRunExecutionId=${run}`);
  assert.equal(during.length, 3);
  assert.ok(during.every((s) => s.testRunExecutionId === run));
  await db.kysely.updateTable("test_runs").set({ status: "finished", ended_at: new Date() }).execute();
  await svc.poller.poll(id);
  const all = await list(app, auth);
  assert.equal(all.length, 9);
  assert.equal(all.filter((s) => s.testRunExecutionId === run).length, 3);
  assert.equal(all.slice(0, 3).every((s) => s.testRunExecutionId === null), true, "after the run: null");
});

dbTest("the database refuses to change or delete snapshots; deleting the device cascades", async (db) => {
  const { svc, app, auth } = await setup(db);
  await using dev = await fixtureDevice();
  const a = await addDevice(svc, dev.sim.url);
  const b = await addDevice(svc, dev.sim.url);
  await svc.poller.poll(a);
  await svc.poller.poll(b);
  dev.state.ntp = ["only.a.example"];
  await svc.poller.poll(a);
  const [first] = await list(app, auth, `&deviceId=${a}`);
  assert.ok(first, "device a has snapshots");
  const refused = async (q: RawBuilder<unknown>, pattern: RegExp) =>
    await assert.rejects(q.execute(db.kysely), pattern, q.compile(db.kysely).sql);
  await refused(
    sql`update snapshots set endpoint_label = 'ntp_config2' where id = ${first.id}`,
    /append-only/,
  );
  await refused(sql`update snapshots set collected_at = now()`, /append-only/);
  await refused(sql`update snapshots set test_run_execution_id = gen_random_uuid()`, /append-only/);
  await refused(sql`delete from snapshots where id = ${first.id}`, /append-only/);
  await refused(sql`delete from snapshots`, /append-only/);
  await refused(sql`truncate snapshots`, /append-only|not a table/);
  // The same on the tables behind the view (migration 0017).
  await refused(sql`update snapshot_rows set collected_at = now()`, /append-only/);
  await refused(sql`update snapshot_rows set payload_changed = not payload_changed`, /append-only/);
  await refused(sql`delete from snapshot_rows where id = ${first.id}`, /append-only/);
  await refused(sql`truncate snapshot_rows`, /append-only/);
  // (An empty snapshots_legacy may be truncated: core/src/runtime/compaction_test.ts.)
  // Nor what a row references: its series' device and label, its adapter release.
  await refused(sql`update snapshot_series set endpoint_label = 'ntp_config2'`, /append-only/);
  await refused(sql`update snapshot_series set device_id = ${b}`, /append-only/);
  await refused(sql`delete from snapshot_series`, /append-only/);
  await refused(sql`truncate snapshot_series cascade`, /append-only/);
  await refused(sql`update adapter_releases set version = '9.9.9'`, /append-only/);
  await refused(sql`truncate adapter_releases cascade`, /append-only/);
  await refused(
    sql`update snapshot_payloads set payload = '{}' where sha256 = ${first.payloadSha256}`,
    /immutable/,
  );
  assert.equal(await count(db, "snapshots"), 9, "nothing changed");
  assert.deepEqual((await list(app, auth, `&deviceId=${a}`))[0], first);

  const del = await app.request(`/api/admin/dut/devices/${a}`, { method: "DELETE", headers: auth });
  assert.equal(del.status, 200);
  assert.equal(await count(db, "snapshots", a), 0);
  assert.equal(await count(db, "snapshot_latest", a), 0);
  assert.equal(await count(db, "snapshots", b), 3, "other devices keep theirs");
  assert.equal(await count(db, "snapshot_latest", b), 3);
  assert.equal(await count(db, "snapshot_payloads"), 3, "payloads b still uses stay; a's own one is gone");
  assert.equal((await list(app, auth)).length, 3);
  assert.equal((await view(svc, b)).lastPollStatus, "ok");
});

dbTest(
  "the latest snapshot per device and label comes from an index, not a scan of all snapshots",
  async (db) => {
    const { svc } = await setup(db);
    await using dev = await fixtureDevice();
    const a = await addDevice(svc, dev.sim.url);
    const b = await addDevice(svc, dev.sim.url);
    for (const n of ["1", "2", "3"]) {
      dev.state.ntp = [`10.0.0.${n}`];
      await svc.poller.poll(a);
    }
    await svc.poller.poll(b);
    const latest = await latestSnapshots(db.kysely, [a, b]);
    assert.equal(latest.length, 6);
    const ntpA = latest.find((r) => r.device_id === a && r.endpoint_label === "ntp_config")!;
    assert.deepEqual(JSON.parse(ntpA.payload), { servers: ["10.0.0.3"] });
    const newest = await db.kysely.selectFrom("snapshots").select(sql<string>`max(id)::text`.as("m"))
      .where("device_id", "=", a).where("endpoint_label", "=", "ntp_config").executeTakeFirstOrThrow();
    assert.equal(ntpA.id, newest.m);
    // With sequential scans priced out, the per-device-and-label listing walks an index in id order.
    await db.kysely.transaction().execute(async (tx) => {
      await sql`set local enable_seqscan = off`.execute(tx);
      // The narrow layout (migration 0017): the series' rows, as `seriesIds` (core/src/snapshots/store.ts)
      // reads them.
      const plan = await sql<{ "QUERY PLAN": string }>`explain select r.id from snapshot_rows r
      where r.series_id = (select se.id from snapshot_series se
        where se.device_id = ${a} and se.endpoint_label = 'ntp_config') order by r.id desc limit 1`.execute(
        tx,
      );
      const text = plan.rows.map((r) => r["QUERY PLAN"]).join("\n");
      assert.match(text, /Index (Only )?Scan (Backward )?using snapshot_rows_series_id/, text);
      assert.doesNotMatch(text, /Sort/, text);
    });
  },
);
