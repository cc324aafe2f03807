/** GET /api/admin/dut/snapshots (spec 4.5, issue 8 point 7): filters, order, paging, bad parameters. */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest } from "../../harness/db.ts";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { addDevice, fixtureDevice, insertActiveRun, setup, webSha256Hex } from "../../harness/poller_lab.ts";

interface Page {
  snapshots: Array<{
    id: string;
    deviceId: string;
    endpointLabel: string;
    collectedAt: string;
    testRunExecutionId: string | null;
    payloadSha256: string;
  }>;
  nextCursor: string | null;
}

async function get(app: OpenAPIHono, auth: Record<string, string>, query: string): Promise<Page> {
  const res = await app.request(`/api/admin/dut/snapshots${query}`, { headers: auth });
  assert.equal(res.status, 200, query);
  return await res.json();
}

/** Follow nextCursor from the first page to the last; every id seen, in order. */
async function pageAll(app: OpenAPIHono, auth: Record<string, string>, query: string, limit: number) {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const p: Page = await get(app, auth, `?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ""}`);
    assert.ok(p.snapshots.length <= limit);
    if (p.nextCursor) assert.equal(p.snapshots.length, limit, "only the last page is short");
    ids.push(...p.snapshots.map((s) => s.id));
    cursor = p.nextCursor;
    pages++;
  } while (cursor);
  return { ids, pages };
}

const newestFirst = (ids: string[]) => [...ids].sort((a, b) => Number(BigInt(b) - BigInt(a)));

/** 240 bulk rows for device a, then polls of two devices, some during an active run. */
async function seed(db: Parameters<Parameters<typeof dbTest>[1]>[0]) {
  const ctx = await setup(db);
  const dev = await fixtureDevice();
  const a = await addDevice(ctx.svc, dev.sim.url);
  const b = await addDevice(ctx.svc, dev.sim.url);
  // 240 older snapshots of a, stored first (ids and collectedAt both increase)
  const bulk = '{"bulk":true}';
  const sha = await webSha256Hex(bulk);
  await db.kysely.insertInto("snapshot_payloads").values({ sha256: sha, payload: bulk, size_bytes: 13 })
    .execute();
  await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, collected_at, adapter_module,
      adapter_version)
    select ${a}, case when g % 2 = 0 then 'ntp_config' else 'system_info' end, ${sha},
      now() - interval '1 day' + g * interval '1 second', '@dutlab/adapter-fixture-fw', '0.0.1'
    from generate_series(1, 240) g order by g`.execute(db.kysely);
  await ctx.svc.poller.poll(a);
  const run = await insertActiveRun(db);
  await ctx.svc.poller.poll(b);
  await ctx.svc.poller.poll(a);
  await db.kysely.updateTable("test_runs").set({ status: "finished", ended_at: new Date() }).execute();
  await ctx.svc.poller.poll(b);
  const all = (await sql<{ id: string; device_id: string; endpoint_label: string; run: string | null }>`
    select id::text as id, device_id, endpoint_label, test_run_execution_id as run from snapshots`
    .execute(db.kysely)).rows;
  return { ...ctx, dev, a, b, run, all, [Symbol.asyncDispose]: () => dev.sim.close() };
}

dbTest("filters select by device, label and run, newest first", async (db) => {
  await using s = await seed(db);
  const { app, auth, a, b, run, all } = s;
  assert.equal(all.length, 3 + 240 + 3 + 3 + 3);
  const cases: Array<[string, (r: typeof all[number]) => boolean]> = [
    [`&deviceId=${a}`, (r) => r.device_id === a],
    [`&deviceId=${b}`, (r) => r.device_id === b],
    ["&endpointLabel=ntp_config", (r) => r.endpoint_label === "ntp_config"],
    [
      `&deviceId=${b}&endpointLabel=decrypt_policy`,
      (r) => r.device_id === b && r.endpoint_label === "decrypt_policy",
    ],
    [`&testRunExecutionId=${run}`, (r) => r.run === run],
    [
      `&testRunExecutionId=${run}&deviceId=${a}&endpointLabel=system_info`,
      (r) => r.run === run && r.device_id === a && r.endpoint_label === "system_info",
    ],
    [`&deviceId=${crypto.randomUUID()}`, () => false],
    ["&endpointLabel=no_such_label", () => false],
  ];
  for (const [q, keep] of cases) {
    const page = await get(app, auth, `?limit=1000${q}`);
    const expected = newestFirst(all.filter(keep).map((r) => r.id));
    assert.deepEqual(page.snapshots.map((x) => x.id), expected, q);
    assert.equal(page.nextCursor, null);
    const times = page.snapshots.map((x) => Date.parse(x.collectedAt));
    assert.deepEqual(times, [...times].sort((x, y) => y - x), `newest first by collectedAt too: ${q}`);
  }
  assert.equal((await get(app, auth, `?testRunExecutionId=${run}`)).snapshots.length, 6);
});

dbTest(
  "without parameters the latest 100; limit and cursor page through every snapshot exactly once",
  async (db) => {
    await using s = await seed(db);
    const { app, auth, a, all } = s;
    const everything = newestFirst(all.map((r) => r.id));
    const first = await get(app, auth, "");
    assert.equal(first.snapshots.length, 100);
    assert.deepEqual(first.snapshots.map((x) => x.id), everything.slice(0, 100));
    assert.ok(first.nextCursor);
    assert.equal(new Set(first.snapshots.map((x) => x.deviceId)).size, 2, "across all devices");
    for (const limit of [1, 7, 100, 251, 252, 1000]) {
      const { ids, pages } = await pageAll(app, auth, "", limit);
      assert.deepEqual(ids, everything, `limit ${limit}`);
      assert.equal(pages, Math.max(1, Math.ceil(everything.length / limit)), `pages at limit ${limit}`);
    }
    const onlyA = await pageAll(app, auth, `&deviceId=${a}&endpointLabel=ntp_config`, 13);
    assert.deepEqual(
      onlyA.ids,
      newestFirst(all.filter((r) => r.device_id === a && r.endpoint_label === "ntp_config").map((r) => r.id)),
    );
    // a cursor stays valid while new snapshots arrive: the next page continues below it
    const p1 = await get(app, auth, "?limit=5");
    await s.svc.poller.poll(a);
    const p2 = await get(app, auth, `?limit=5&cursor=${p1.nextCursor}`);
    assert.deepEqual(p2.snapshots.map((x) => x.id), everything.slice(5, 10));
  },
);

dbTest("bad query parameters answer 400 problem+json naming the parameter", async (db) => {
  const { app, auth } = await setup(db);
  const cursorOf = (s: string) => btoa(s).replace(/=+$/, "");
  const cases: Array<[string, string]> = [
    ["deviceId=not-a-uuid", "query.deviceId"],
    ["deviceId=", "query.deviceId"],
    ["testRunExecutionId=42", "query.testRunExecutionId"],
    ["limit=0", "query.limit"],
    ["limit=5000", "query.limit"],
    ["limit=1001", "query.limit"],
    ["limit=-1", "query.limit"],
    ["limit=2.5", "query.limit"],
    ["limit=ten", "query.limit"],
    ["endpointLabel=Not%20a%20label", "query.endpointLabel"],
    ["cursor=%21%21", "query.cursor"],
    ["cursor=" + cursorOf("hello"), "query.cursor"],
    ["cursor=" + cursorOf("s:-1"), "query.cursor"],
    ["cursor=" + cursorOf("s:9999999999999999999"), "query.cursor"],
    ["cursor=x", "query.cursor"],
    ["payload=none", "query.payload"],
    ["payload=", "query.payload"],
    ["payload=OMIT", "query.payload"],
  ];
  for (const [q, field] of cases) {
    const res = await app.request(`/api/admin/dut/snapshots?${q}`, { headers: auth });
    assert.equal(res.status, 400, q);
    assert.equal(res.headers.get("content-type"), "application/problem+json", q);
    const body = await res.json();
    assert.equal(body.status, 400);
    assert.deepEqual(body.errors.map((e: { field: string }) => e.field), [field], q);
  }
  // limits at the edges are fine
  for (
    const q of ["limit=1", "limit=1000", `deviceId=${crypto.randomUUID()}`, "payload=omit", "payload=include"]
  ) {
    assert.equal((await app.request(`/api/admin/dut/snapshots?${q}`, { headers: auth })).status, 200, q);
  }
});
