/**
 * Issue 34 point 3: the snapshot listings are answered from their JSON kept in memory between changes of the
 * snapshots (core/src/http/list_cache.ts, migration 2026_11_26_0019). A kept answer must never outlive a
 * change: a new snapshot (from any instance), a device's delete, a prune. Every answer is compared, byte for
 * byte, with the one an instance that has kept nothing gives.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import type { Db } from "../db/open.ts";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { fixtureModules } from "../../testing/fixture_modules.ts";
import { createApp } from "./app.ts";
import { ListCache } from "./list_cache.ts";
import { addDevice } from "../../harness/poller_lab.ts";
import type { Services } from "../runtime/services.ts";

const QUERIES = ["", "?payload=omit", "?limit=5", "?endpointLabel=ntp_config"];

/** `n` snapshots of a device, two labels, `daysAgo` days old, one second apart, all with one payload. */
async function insertSnapshots(db: Db | { kysely: Db["kysely"] }, device: string, n: number, daysAgo = 0) {
  const payload = `{"n":${n},"device":"${device}"}`;
  const sha = await sha256(payload);
  await sql`insert into snapshot_payloads (sha256, payload, size_bytes)
    values (${sha}, ${payload}, ${payload.length}) on conflict do nothing`.execute(db.kysely);
  await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, collected_at, adapter_module,
      adapter_version)
    select ${device}, case when g % 2 = 0 then 'ntp_config' else 'system_info' end, ${sha},
      now() - ${daysAgo} * interval '1 day' + g * interval '1 second', '@dutlab/adapter-fixture-fw', '0.0.1'
    from generate_series(1, ${n}) g order by g`.execute(db.kysely);
}

async function sha256(s: string): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s)));
  return [...d].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function body(app: OpenAPIHono, auth: Record<string, string>, q: string) {
  const res = await app.request(`/api/admin/dut/snapshots${q}`, { headers: auth });
  assert.equal(res.status, 200, q);
  return { text: await res.text(), etag: res.headers.get("etag")! };
}

/** Every query answers, on every instance given, exactly what an instance that kept nothing answers. */
async function sameAsFresh(svc: Services, auth: Record<string, string>, apps: OpenAPIHono[], what: string) {
  const fresh = createApp(svc);
  for (const q of QUERIES) {
    const want = await body(fresh, auth, q);
    for (const app of apps) {
      const got = await body(app, auth, q);
      assert.equal(got.text, want.text, `${what}: ${q || "latest 100"}`);
      assert.equal(got.etag, want.etag, `${what}: ${q || "latest 100"}`);
    }
  }
}

const version = async (db: Db) =>
  Number(
    (await sql<{ v: string }>`select version::text as v from table_versions where name = 'devices'`
      .execute(db.kysely)).rows[0]!.v,
  );

dbTest(
  "the snapshot listings, kept between changes, follow every new snapshot, device delete and prune",
  async (db) => {
    const { svc, auth } = await testServices(db, fixtureModules());
    // Two service instances on one database, each with its own kept answers.
    const one = createApp(svc);
    const two = createApp(svc);
    const a = await addDevice(svc, "https://127.0.0.1:9");
    const b = await addDevice(svc, "https://127.0.0.1:9");
    await insertSnapshots(db, a, 40, 60);
    await insertSnapshots(db, b, 30, 60);
    await sameAsFresh(svc, auth, [one, two], "start");

    // The answers really are kept: a snapshot written with the version trigger off does not show (this is what
    // the trigger prevents; the test would otherwise prove nothing about invalidation).
    await sql`alter table snapshot_rows disable trigger snapshot_rows_version`.execute(db.kysely);
    await insertSnapshots(db, a, 2);
    await sql`alter table snapshot_rows enable trigger snapshot_rows_version`.execute(db.kysely);
    const stale = await body(one, auth, "");
    assert.notEqual(stale.text, (await body(createApp(svc), auth, "")).text, "the kept answer is served");

    // A snapshot stored by another instance (here: plain SQL), in one transaction with several rows: the version
    // moves once, and both instances answer the new rows at once.
    const v0 = await version(db);
    await insertSnapshots(db, b, 3);
    assert.equal(await version(db), v0 + 1);
    await sameAsFresh(svc, auth, [one, two], "after new snapshots");
    const newest = JSON.parse((await body(two, auth, "?limit=1")).text).snapshots[0];
    assert.equal(newest.deviceId, b);

    // A conditional request with the old ETag gets the new page, and the new ETag a 304.
    const res = await one.request("/api/admin/dut/snapshots", {
      headers: { ...auth, "if-none-match": stale.etag },
    });
    assert.equal(res.status, 200);
    const again = await one.request("/api/admin/dut/snapshots", {
      headers: { ...auth, "if-none-match": res.headers.get("etag")! },
    });
    assert.equal(again.status, 304);

    // A rolled-back insert changes nothing and raises nothing.
    const v1 = await version(db);
    await assert.rejects(
      db.kysely.transaction().execute(async (tx) => {
        await insertSnapshots({ kysely: tx }, a, 2);
        throw new Error("roll back");
      }),
    );
    assert.equal(await version(db), v1);

    // A prune (through instance one) deletes old unchanged snapshots; instance two follows.
    const pruned = await one.request(
      "/api/admin/dut/snapshots/prune",
      jsonReq("POST", { olderThanDays: 30, keepOnePer: "day" }, auth),
    );
    assert.equal(pruned.status, 200);
    assert.ok((await pruned.json()).snapshots > 0, "the prune deleted snapshots");
    await sameAsFresh(svc, auth, [one, two], "after a prune");

    // A device deleted (its snapshots go by the cascade) leaves every listing at once.
    const del = await one.request(`/api/admin/dut/devices/${b}`, { method: "DELETE", headers: auth });
    assert.ok(del.status < 300, `delete: ${del.status}`);
    await sameAsFresh(svc, auth, [one, two], "after a device delete");
    assert.ok(!(await body(two, auth, "")).text.includes(b), "no snapshot of the deleted device is listed");
  },
);

dbTest(
  "concurrent requests share one build per query and version; without a version row nothing is kept",
  async (db) => {
    const { svc } = await testServices(db, fixtureModules());
    const cache = new ListCache(db, "devices");
    let builds = 0;
    const build = async () => {
      builds++;
      await new Promise((r) => setTimeout(r, 20));
      return `{"build":${builds}}`;
    };
    const texts = async (key: string, n: number) =>
      (await Promise.all(Array.from({ length: n }, () => cache.get(key, build))))
        .map((e) => new TextDecoder().decode(e!.body));
    assert.deepEqual(await texts("a", 20), Array(20).fill('{"build":1}'));
    assert.equal(builds, 1);
    assert.deepEqual(await texts("a", 3), Array(3).fill('{"build":1}'), "kept");
    assert.equal(builds, 1);
    assert.deepEqual(await texts("b", 2), Array(2).fill('{"build":2}'), "another query builds its own");
    await insertSnapshots(db, await addDevice(svc, "https://127.0.0.1:9"), 1);
    assert.deepEqual(await texts("a", 5), Array(5).fill('{"build":3}'), "a new version builds again, once");
    assert.equal(builds, 3);
    const none = new ListCache(db, "no such table");
    assert.equal(await none.version(), null);
    for (let i = 0; i < 2; i++) assert.ok(await none.get("a", build));
    assert.equal(builds, 5, "nothing kept without a version");
  },
);
