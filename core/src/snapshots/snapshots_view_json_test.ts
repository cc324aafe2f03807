/**
 * Issue 34 point 3: the snapshot listing and the single read write each stored canonical payload text into
 * the answer as it is. What a client receives must be what `JSON.stringify` of the decoded views gave
 * before (the same fields in the same order, the same values, the same cursor): the same bytes, except the
 * order of array-index-like keys ("10" before "9" canonically; `JSON.parse` puts them first, numerically).
 */
import assert from "node:assert/strict";
import canonicalize from "canonicalize";
import { sql } from "kysely";
import { dbTest } from "../../harness/db.ts";
import { listSnapshots, type SnapshotRow, toSnapshotView } from "./store.ts";
import { snapshotJson, snapshotPageJson } from "./view_json.ts";
import { Snapshot as SnapshotSchema, SnapshotPage as SnapshotPageSchema } from "../api/schemas.ts";
import { addDevice, fixtureDevice, setup, webSha256Hex } from "../../harness/poller_lab.ts";

/** Payloads whose canonical text `JSON.parse` + `JSON.stringify` gives back byte for byte. */
const SAME_BYTES: unknown[] = [
  {
    name: "zeit.bücher.example",
    emoji: "😀 ok",
    rtl: "שלום",
    separators: "a\u2028b\u2029c",
    controls: '\u0000\u0007\u001f"\\/\t\n',
    pair: "\ud83d\ude00",
  },
  {
    big: 12345678901234567890,
    unsafe: 9007199254740993,
    huge: 1e300,
    e21: 1e21,
    tiny: 5e-324,
    negZero: -0,
    frac: 0.1 + 0.2,
    neg: -123.456e-7,
  },
  { m: [[1, [2, [3, []]]], [{ a: [null, true, false] }], []], o: {}, deep: { a: { b: { c: [{ d: [] }] } } } },
  [1, "two", { three: 3 }, [[]]],
  "just a string",
  42,
  null,
  JSON.parse('{"__proto__":{"x":1},"constructor":"c"}'),
];
/** A payload with array-index-like keys: the same value, another key order. */
const INDEX_KEYS = { "10": "x", "9": "y", a: { "2": 1, "1": 2, b: 0 } };

const UUID = "0b8f6c1e-9a4f-4c11-8d2e-5b2a7f3c9d10";
const RUN = "6e1c2a7b-3d4f-4a5b-9c8d-7e6f5a4b3c2d";

function row(payload: unknown, i: number): SnapshotRow {
  const text = canonicalize(payload)!;
  return {
    id: String(9_000_000_000_000 + i),
    device_id: UUID,
    endpoint_label: i % 2 ? "ntp_config" : "system_info",
    payload: text,
    payload_sha256: "ab".repeat(32),
    collected_at: i % 2 ? new Date(Date.UTC(2026, 10, 25, 7, 0, i, 123)) : `2026-11-25 07:00:0${i}.5+00`,
    test_run_execution_id: i % 3 ? null : RUN,
    adapter_module: '@dutlab/adapter-"quoted"',
    adapter_version: "1.2.3-ü",
  };
}

Deno.test("a snapshot's JSON is JSON.stringify of its decoded view, byte for byte", () => {
  SAME_BYTES.forEach((payload, i) => {
    const r = row(payload, i);
    const old = JSON.stringify(toSnapshotView(r));
    assert.equal(snapshotJson(r), old, `payload ${i}`);
    assert.deepEqual(SnapshotSchema.parse(JSON.parse(snapshotJson(r))), JSON.parse(old));
  });
});

Deno.test("array-index-like keys keep their canonical order; the value is the same", () => {
  const r = row(INDEX_KEYS, 1);
  const old = JSON.stringify(toSnapshotView(r));
  const now = snapshotJson(r);
  assert.notEqual(now, old, "JSON.parse reorders index-like keys; the stored canonical text does not");
  assert.ok(now.includes(`"payloadJson":${canonicalize(INDEX_KEYS)},`));
  assert.deepEqual(JSON.parse(now), JSON.parse(old));
  assert.deepEqual(Object.keys(JSON.parse(now)), Object.keys(JSON.parse(old)), "the same fields, in order");
});

Deno.test("a page's JSON is JSON.stringify of the page of decoded views", () => {
  const rows = SAME_BYTES.map(row);
  for (const cursor of [null, "czo5MDAwMDAwMDAwMDAw"]) {
    const old = JSON.stringify({ snapshots: rows.map(toSnapshotView), nextCursor: cursor });
    assert.equal(snapshotPageJson(rows, cursor), old);
    SnapshotPageSchema.parse(JSON.parse(old));
  }
  assert.equal(snapshotPageJson([], null), JSON.stringify({ snapshots: [], nextCursor: null }));
});

dbTest("the listing and the single read send what the decoded views encoded before", async (db) => {
  const { svc, app, auth } = await setup(db);
  await using dev = await fixtureDevice();
  const device = await addDevice(svc, dev.sim.url);
  await svc.poller.poll(device); // snapshots written by the poller, with their adapter release
  for (const [i, payload] of [...SAME_BYTES, INDEX_KEYS].entries()) {
    const text = canonicalize(payload)!;
    const sha = await webSha256Hex(text);
    await db.kysely.insertInto("snapshot_payloads")
      .values({ sha256: sha, payload: text, size_bytes: new TextEncoder().encode(text).length })
      .onConflict((oc) => oc.column("sha256").doNothing()).execute();
    await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, collected_at, adapter_module,
        adapter_version)
      values (${device}, ${i % 2 ? "ntp_config" : "system_info"}, ${sha},
        now() + ${i} * interval '1 second', '@dutlab/adapter-fixture-fw', '0.0.1')`.execute(db.kysely);
  }
  const k = db.kysely;
  const compared = { bytes: 0, values: 0 };
  const check = async (query: string, filter: Parameters<typeof listSnapshots>[1]) => {
    const res = await app.request(`/api/admin/dut/snapshots${query}`, { headers: auth });
    assert.equal(res.status, 200, query);
    assert.equal(res.headers.get("content-type"), "application/json");
    const text = await res.text();
    const old = await listSnapshots(k, filter); // the decoded views the route used to JSON.stringify
    assert.ok(!("badCursor" in old));
    // Byte for byte unless the page holds the index-key payload; then the same value.
    if (old.snapshots.every((s) => JSON.stringify(s.payloadJson) === canonicalize(s.payloadJson))) {
      assert.equal(text, JSON.stringify(old), query);
      compared.bytes++;
    } else {
      assert.notEqual(text, JSON.stringify(old), query);
      assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(old)), query);
      compared.values++;
    }
    assert.deepEqual(SnapshotPageSchema.strict().parse(JSON.parse(text)), JSON.parse(text));
    assert.equal(
      res.headers.get("etag"),
      `"${await webSha256Hex(text)}"`,
      "strong ETag: SHA-256 of the body",
    );
    const again = await app.request(`/api/admin/dut/snapshots${query}`, {
      headers: { ...auth, "if-none-match": res.headers.get("etag")! },
    });
    assert.equal(again.status, 304);
    return JSON.parse(text) as { snapshots: Array<{ id: string }>; nextCursor: string | null };
  };
  const first = await check("?limit=4", { limit: 4 }); // the index-key payload is the newest
  assert.ok(first.nextCursor);
  const second = await check(`?limit=4&cursor=${first.nextCursor}`, { limit: 4, cursor: first.nextCursor });
  await check(`?limit=6&cursor=${second.nextCursor}`, { limit: 6, cursor: second.nextCursor! });
  await check(`?deviceId=${device}`, { deviceId: device });
  await check(`?deviceId=${device}&endpointLabel=ntp_config`, {
    deviceId: device,
    endpointLabel: "ntp_config",
  });
  await check(`?deviceId=${device}&endpointLabel=system_info`, {
    deviceId: device,
    endpointLabel: "system_info",
  });
  await check(`?limit=1000`, { limit: 1000 });
  await check(`?limit=1&endpointLabel=ntp_config`, { limit: 1, endpointLabel: "ntp_config" });
  assert.ok(compared.bytes >= 3 && compared.values >= 2, JSON.stringify(compared));

  for (
    const s of (await listSnapshots(k, { limit: 1000 }) as { snapshots: Array<{ id: string }> }).snapshots
  ) {
    const res = await app.request(`/api/admin/dut/snapshots/${s.id}`, { headers: auth });
    const text = await res.text();
    assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(s)));
    SnapshotSchema.strict().parse(JSON.parse(text));
    assert.equal(res.headers.get("etag"), `"${await webSha256Hex(text)}"`);
    const payload = (s as unknown as { payloadJson: unknown }).payloadJson;
    if (JSON.stringify(payload) === canonicalize(payload)) assert.equal(text, JSON.stringify(s), s.id);
  }
});

dbTest("payload=omit: the same page without payloadJson; include is the default", async (db) => {
  const { svc, app, auth } = await setup(db);
  await using dev = await fixtureDevice();
  const device = await addDevice(svc, dev.sim.url);
  for (let i = 0; i < 3; i++) await svc.poller.poll(device);
  const get = async (q: string) => {
    const res = await app.request(`/api/admin/dut/snapshots${q}`, { headers: auth });
    assert.equal(res.status, 200, q);
    return { text: await res.text(), etag: res.headers.get("etag") };
  };
  for (const base of ["?limit=4", `?deviceId=${device}&limit=2`, "?endpointLabel=ntp_config&limit=2"]) {
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = cursor ? `${base}&cursor=${cursor}` : base;
      const full = await get(q);
      const omitted = await get(`${q}&payload=omit`);
      assert.equal((await get(`${q}&payload=include`)).text, full.text, "include is the default");
      const page = JSON.parse(full.text);
      const expected = {
        ...page,
        snapshots: page.snapshots.map(({ payloadJson: _, ...rest }: Record<string, unknown>) => rest),
      };
      assert.equal(omitted.text, JSON.stringify(expected), q);
      SnapshotPageSchema.strict().parse(JSON.parse(omitted.text));
      assert.notEqual(omitted.etag, full.etag);
      cursor = page.nextCursor;
      pages++;
    } while (cursor);
    assert.ok(pages > 1, base);
  }
});
