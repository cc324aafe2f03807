/** Issue 21 point 2: single reads, paging and filters of devices and runs, ETag/304, 405 with Allow. */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";
import type { Db } from "../db/open.ts";

const device = (hostname: string, over: Record<string, unknown> = {}) => ({
  hostname,
  vendor: "fixture-fw",
  baseUrl: "https://127.0.0.1:9",
  username: "admin",
  password: "fixture-pass",
  ...over,
});

async function insertRun(db: Db, plan: string, status: string, startedAt: string): Promise<string> {
  const executionId = crypto.randomUUID();
  await db.kysely.insertInto("test_runs").values({
    execution_id: executionId,
    plan_identifier: plan,
    plan_display_name: plan,
    plan_catalog_version: 1,
    plan_json: "{}",
    plan_snapshot_sha256: "0".repeat(64),
    license_id: "LAB-INTERNAL",
    notes: null,
    status,
    started_at: new Date(startedAt),
    start_state_json: JSON.stringify({ devices: [], decrypt: {} }),
    preflight_json: JSON.stringify({
      pass: true,
      summary: "ok",
      checksRun: 0,
      checksPassed: 0,
      checksFailed: 0,
      checksSkipped: 0,
    }),
  } as never).execute();
  return executionId;
}

dbTest("device list: filters, cursor paging, the unpaged 4.1 shape, single read", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const ids: Record<string, string> = {};
  for (let i = 0; i < 25; i++) {
    const h = `dev-${String(i).padStart(2, "0")}`;
    const res = await app.request(
      "/api/admin/dut/devices",
      jsonReq(
        "POST",
        device(h, {
          enabled: i % 2 === 0,
          deviceRole: i < 5 ? "switch" : "ngfw",
          notes: i === 7 ? "Rack 100% full_" : null,
        }),
        auth,
      ),
    );
    assert.equal(res.status, 201);
    ids[h] = (await res.json()).deviceId;
  }
  await sql`update devices set last_poll_status = 'auth_failed' where hostname in ('dev-03', 'dev-04')`
    .execute(db.kysely);

  // No paging parameter: every device, exactly {devices, vendors} (spec 4.1).
  const all = await (await app.request("/api/admin/dut/devices", { headers: auth })).json();
  assert.deepEqual(Object.keys(all).sort(), ["devices", "vendors"]);
  assert.equal(all.devices.length, 25);

  // Pages of 10 follow the hostname order and end with nextCursor null.
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const q: string = `?limit=10${cursor ? `&cursor=${cursor}` : ""}`;
    const r = await app.request(`/api/admin/dut/devices${q}`, { headers: auth });
    assert.equal(r.status, 200);
    const page = await r.json();
    assert.ok("nextCursor" in page);
    seen.push(...page.devices.map((d: { hostname: string }) => d.hostname));
    cursor = page.nextCursor;
    pages++;
  } while (cursor);
  assert.equal(pages, 3);
  assert.deepEqual(seen, all.devices.map((d: { hostname: string }) => d.hostname));

  const hosts = async (q: string) => {
    const r = await app.request(`/api/admin/dut/devices?${q}`, { headers: auth });
    assert.equal(r.status, 200, q);
    return (await r.json()).devices.map((d: { hostname: string }) => d.hostname);
  };
  assert.deepEqual(await hosts("role=switch&enabled=true"), ["dev-00", "dev-02", "dev-04"]);
  assert.deepEqual(await hosts("lastPollStatus=auth_failed"), ["dev-03", "dev-04"]);
  assert.equal((await hosts("lastPollStatus=never")).length, 23);
  assert.deepEqual(await hosts("q=DEV-1"), Array.from({ length: 10 }, (_, i) => `dev-1${i}`));
  assert.deepEqual(await hosts("q=100%25%20full_"), ["dev-07"], "LIKE wildcards in q are literal");
  assert.deepEqual(await hosts("q=%25"), ["dev-07"]);
  assert.deepEqual(await hosts("vendor=vendor-c-ngfw"), []);
  assert.equal((await hosts("enabled=false&limit=5")).length, 5);

  for (
    const [q, field] of [
      ["limit=0", "query.limit"],
      ["limit=abc", "query.limit"],
      ["enabled=yes", "query.enabled"],
      ["lastPollStatus=fine", "query.lastPollStatus"],
      ["cursor=bm90LWEtY3Vyc29y", "query.cursor"],
      ["colour=red", "query"],
    ] as const
  ) {
    const r = await app.request(`/api/admin/dut/devices?${q}`, { headers: auth });
    assert.equal(r.status, 400, q);
    assert.equal(r.headers.get("content-type"), "application/problem+json");
    const p = await r.json();
    assert.ok(
      p.errors.some((e: { field: string }) => e.field.startsWith(field)),
      `${q}: ${JSON.stringify(p)}`,
    );
  }

  const one = await app.request(`/api/admin/dut/devices/${ids["dev-07"]}`, { headers: auth });
  assert.equal(one.status, 200);
  const d = await one.json();
  assert.deepEqual(d, all.devices.find((x: { id: string }) => x.id === ids["dev-07"]));
  assert.ok(!("password" in d) && !JSON.stringify(d).includes("fixture-pass"));
  assert.equal(
    (await app.request(`/api/admin/dut/devices/${crypto.randomUUID()}`, { headers: auth })).status,
    404,
  );
  assert.equal((await app.request("/api/admin/dut/devices/not-a-uuid", { headers: auth })).status, 404);
});

dbTest("snapshot by id; 404 for an unknown or malformed id", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const res = await app.request("/api/admin/dut/devices", jsonReq("POST", device("s-1"), auth));
  const { deviceId } = await res.json();
  await sql`insert into snapshot_payloads (sha256, payload, size_bytes) values (${
    "a".repeat(64)
  }, '{"x":1}', 7)`
    .execute(db.kysely);
  const row = await sql<{ id: string }>`insert into snapshots (device_id, endpoint_label, payload_sha256,
    collected_at, adapter_module, adapter_version) values (${deviceId}, 'system_info', ${
    "a".repeat(64)
  }, now(),
    '@dutlab/fixture', '1.0.0') returning id::text as id`.execute(db.kysely);
  const id = row.rows[0]!.id;
  const r = await app.request(`/api/admin/dut/snapshots/${id}`, { headers: auth });
  assert.equal(r.status, 200);
  const s = await r.json();
  const listed =
    (await (await app.request("/api/admin/dut/snapshots", { headers: auth })).json()).snapshots[0];
  assert.deepEqual(s, listed);
  assert.deepEqual(s.payloadJson, { x: 1 });
  for (const bad of ["99999", "abc", "99999999999999999999"]) {
    assert.equal((await app.request(`/api/admin/dut/snapshots/${bad}`, { headers: auth })).status, 404, bad);
  }
});

dbTest("run list: status, plan and date filters, cursor paging", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const made: string[] = [];
  for (let i = 0; i < 7; i++) {
    made.push(
      await insertRun(
        db,
        i % 2 ? "plan-b" : "plan-a",
        i === 6 ? "active" : "finished",
        `2026-11-0${i + 1}T10:00:00Z`,
      ),
    );
  }
  const list = async (q: string) => {
    const r = await app.request(`/api/test-runs?${q}`, { headers: auth });
    assert.equal(r.status, 200, q);
    return await r.json() as { runs: Array<{ executionId: string }>; nextCursor: string | null };
  };
  const newestFirst = [...made].reverse();
  assert.deepEqual((await list("")).runs.map((r) => r.executionId), newestFirst);
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const p = await list(`limit=3${cursor ? `&cursor=${cursor}` : ""}`);
    ids.push(...p.runs.map((r) => r.executionId));
    cursor = p.nextCursor;
  } while (cursor);
  assert.deepEqual(ids, newestFirst);
  assert.deepEqual((await list("status=active")).runs.map((r) => r.executionId), [made[6]]);
  assert.deepEqual((await list("planIdentifier=plan-b")).runs.map((r) => r.executionId), [
    made[5],
    made[3],
    made[1],
  ]);
  assert.deepEqual(
    (await list("from=2026-11-02T10:00:00Z&to=2026-11-04")).runs.map((r) => r.executionId),
    [made[2], made[1]],
  );
  for (const q of ["from=yesterday", "limit=1001", "status=done", "cursor=abc"]) {
    const r = await app.request(`/api/test-runs?${q}`, { headers: auth });
    assert.equal(r.status, 400, q);
  }
});

dbTest("ETag and If-None-Match on list and single reads; 405 with Allow", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const res = await app.request("/api/admin/dut/devices", jsonReq("POST", device("e-1"), auth));
  const { deviceId } = await res.json();
  for (const path of ["/api/admin/dut/devices", `/api/admin/dut/devices/${deviceId}`, "/api/test-runs"]) {
    const first = await app.request(path, { headers: auth });
    const tag = first.headers.get("etag");
    assert.match(tag ?? "", /^"[0-9a-f]{64}"$/, path);
    const again = await app.request(path, { headers: { ...auth, "if-none-match": tag! } });
    assert.equal(again.status, 304, path);
    assert.equal(await again.text(), "");
    assert.equal(again.headers.get("etag"), tag);
    const other = await app.request(path, { headers: { ...auth, "if-none-match": '"other"' } });
    assert.equal(other.status, 200);
  }
  const tag = (await app.request("/api/admin/dut/devices", { headers: auth })).headers.get("etag")!;
  await app.request(`/api/admin/dut/devices/${deviceId}`, jsonReq("PATCH", { notes: "changed" }, auth));
  const changed = await app.request("/api/admin/dut/devices", { headers: { ...auth, "if-none-match": tag } });
  assert.equal(changed.status, 200, "a change gives a new representation");
  assert.notEqual(changed.headers.get("etag"), tag);

  const cases: Array<[string, string, string]> = [
    ["PUT", `/api/admin/dut/devices/${deviceId}`, "DELETE, GET, HEAD, PATCH"],
    ["DELETE", "/api/admin/dut/devices", "GET, HEAD, POST"],
    ["GET", `/api/test-runs/${crypto.randomUUID()}/finish`, "POST"],
    ["POST", "/healthz", "GET, HEAD"],
  ];
  for (const [method, path, allow] of cases) {
    const r = await app.request(path, { method, headers: auth });
    assert.equal(r.status, 405, `${method} ${path}`);
    assert.equal(r.headers.get("allow"), allow);
    assert.equal(r.headers.get("content-type"), "application/problem+json");
  }
  assert.equal((await app.request("/api/admin/nothing-here", { headers: auth })).status, 404);
});

dbTest(
  "the device list and its pages, kept between changes, follow every change of the table",
  async (db) => {
    const { app, auth } = await testServices(db, fixtureModules());
    const ids: string[] = [];
    for (const h of ["c-1", "c-2", "c-3"]) {
      ids.push(
        (await (await app.request("/api/admin/dut/devices", jsonReq("POST", device(h), auth))).json())
          .deviceId,
      );
    }
    const list = async (q = "") =>
      (await (await app.request(`/api/admin/dut/devices${q}`, { headers: auth })).json()).devices;
    assert.equal((await list()).length, 3);
    assert.equal((await list("?enabled=true")).length, 3);
    // Changes that bypass the API (a poll or a pin written by another instance) show at once.
    await sql`update devices set pinned_cert_sha256 = ${"ab".repeat(32)} where id = ${ids[0]}`.execute(
      db.kysely,
    );
    assert.equal((await list())[0].pinnedCertSha256, "ab".repeat(32));
    assert.equal((await list("?limit=2"))[0].pinnedCertSha256, "ab".repeat(32));
    // A transaction that locks device rows first and changes them in several statements (as the poll store
    // does) raises the table's version once, at commit.
    const version = async () =>
      Number(
        (await sql<{ v: string }>`select version::text as v from table_versions where name = 'devices'`
          .execute(db.kysely)).rows[0]!.v,
      );
    const before = await version();
    await db.kysely.transaction().execute(async (tx) => {
      await sql`select id from devices order by id for update`.execute(tx);
      await sql`update devices set notes = 'one' where id = ${ids[0]}`.execute(tx);
      await sql`update devices set notes = 'two' where id = ${ids[1]}`.execute(tx);
    });
    assert.equal(await version(), before + 1);
    assert.deepEqual((await list("?limit=2")).map((d: { notes: string }) => d.notes), ["one", "two"]);
    await sql`update devices set last_poll_status = 'timeout', enabled = false where id = ${ids[1]}`.execute(
      db.kysely,
    );
    assert.equal((await list())[1].lastPollStatus, "timeout");
    assert.equal((await list("?enabled=true")).length, 2);
    assert.equal((await list("?enabled=true&limit=5")).length, 2);
    await sql`delete from devices where id = ${ids[2]}`.execute(db.kysely);
    assert.deepEqual((await list()).map((d: { hostname: string }) => d.hostname), ["c-1", "c-2"]);
    await app.request("/api/admin/dut/devices", jsonReq("POST", device("c-0"), auth));
    assert.deepEqual((await list()).map((d: { hostname: string }) => d.hostname), ["c-0", "c-1", "c-2"]);
    const r = await app.request("/api/admin/dut/devices", { headers: auth });
    const again = await app.request("/api/admin/dut/devices", {
      headers: { ...auth, "if-none-match": r.headers.get("etag")! },
    });
    assert.equal(again.status, 304);
  },
);
