/**
 * Compact snapshots, migrations 2026_11_25_0015 and 0017 (issue 31 point 2): a stable hash equal to the payload hash is
 * stored as the '' marker and compared as the payload hash, rows written before keep their full hash and
 * still compare, and a device's listing without `snapshots_device_id` returns the same pages through
 * `snapshots_device_label_id`.
 */
import assert from "node:assert/strict";
import { type Kysely, sql } from "kysely";
import { createTarGzip, parseTarGzip } from "nanotar";
import { dbTest } from "../../harness/db.ts";
import { testServices } from "../../harness/app.ts";
import { readBackup } from "./archive.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";
import type { Database } from "../db/schema.ts";
import { testMigrator } from "../../harness/db.ts";
import { getSnapshot, listSnapshots } from "../snapshots/store.ts";

const BEFORE = "2026_11_25_0014_snapshot_prunes";
/** The last migration before the narrow layout (2026_11_25_0017): the one-table layout 0015 compacted. */
const ONE_TABLE = "2026_11_25_0016_labs";

async function ok(p: Promise<{ error?: unknown }>) {
  const { error } = await p;
  if (error) throw error;
}

const dev = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
const h = (c: string) => c.repeat(64);

async function devices(k: Kysely<Database>, ns: number[]) {
  for (const n of ns) {
    await sql`insert into devices (id, hostname, vendor, base_url, username, password_enc, tls_verify_mode,
        poll_interval_seconds) values (${dev(n)}::uuid, ${"dev-" + n}, 'fixture-fw', 'https://10.0.0.1',
        'admin', 'v1.x.y.z', 'insecure', 300)`.execute(k);
  }
  await sql`insert into snapshot_payloads (sha256, payload, size_bytes)
    select repeat(n::text, 64), '{"n":' || n || '}', 7 from generate_series(1, 9) n`.execute(k);
}

async function insert(k: Kysely<Database>, d: number, label: string, payload: string, stable: string | null) {
  await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, stable_sha256, collected_at,
      adapter_module, adapter_version)
    values (${dev(d)}::uuid, ${label}, ${payload}, ${stable}, now(), '@dutlab/adapter-fixture', '1.0.0')`
    .execute(k);
}

// Label a has volatile paths (stable hashes of their own), label b none (stable = payload hash, as the poll
// store writes it), then a writer that did not compute the stable hash (null).
const SEQUENCE: Array<[string, string, string | null]> = [
  ["a", h("1"), h("a")],
  ["b", h("5"), h("5")],
  ["a", h("1"), h("a")],
  ["a", h("2"), h("a")], // volatile only: false
  ["b", h("6"), h("6")], // real change: true
  ["a", h("3"), h("c")], // real change: true
  ["b", h("6"), h("6")], // nothing: false
  ["a", h("3"), h("c")],
  ["b", h("7"), null], // not computed: null
  ["b", h("8"), h("8")], // the one before unknown: null
  ["b", h("8"), h("8")],
];
const FLAGS = "f:f,f:f,f:f,t:f,t:t,t:t,f:f,f:f,t:-,t:-,f:f";

async function flagsOf(k: Kysely<Database>, d: number) {
  return (await sql<{ f: string }>`select string_agg(left(payload_changed::text, 1) || ':' ||
      coalesce(left(stable_changed::text, 1), '-'), ',' order by id) as f from snapshots
    where device_id = ${dev(d)}::uuid`.execute(k)).rows[0]!.f;
}

async function stableOf(k: Kysely<Database>, d: number) {
  return (await sql<{ s: string | null }>`select stable_sha256 as s from snapshots
    where device_id = ${dev(d)}::uuid order by id`.execute(k)).rows.map((r) => r.s);
}

dbTest(
  "migration 0015 stores '' for a stable hash equal to the payload hash and gives the flags the full hash gave",
  async (db) => {
    const k = db.kysely;
    const m = await testMigrator(k);
    await ok(m.migrateTo(BEFORE));
    await devices(k, [1, 2, 3]);
    for (const [label, p, st] of SEQUENCE) await insert(k, 1, label, p, st);
    for (const [label, p, st] of SEQUENCE) await insert(k, 3, label, p, st);
    assert.equal(await flagsOf(k, 1), FLAGS);
    await ok(m.migrateTo(ONE_TABLE));
    // After: the same sequence on device 2 gets the same flags, with the marker where the hashes are equal.
    for (const [label, p, st] of SEQUENCE) await insert(k, 2, label, p, st);
    assert.equal(await flagsOf(k, 2), FLAGS);
    assert.deepEqual(
      await stableOf(k, 2),
      SEQUENCE.map(([, p, st]) => st === p ? "" : st),
    );
    // Rows written before the migration are not rewritten, and the trigger still compares with them.
    assert.deepEqual(await stableOf(k, 1), SEQUENCE.map(([, , st]) => st));
    await insert(k, 1, "b", h("8"), h("8")); // unchanged after a legacy full hash: false
    await insert(k, 1, "b", h("9"), h("9")); // a real change after the legacy row: true
    await insert(k, 1, "a", h("4"), h("c")); // only volatile paths moved, after a legacy row: false
    await insert(k, 3, "b", h("8"), h("c")); // a writer passing '' means the payload hash; here it differs
    await insert(k, 3, "b", h("9"), "");
    assert.equal(await flagsOf(k, 1), FLAGS + ",f:f,t:t,t:f");
    assert.equal(await flagsOf(k, 3), FLAGS + ",f:f,t:t");
    assert.deepEqual((await stableOf(k, 1)).slice(-3), ["", "", h("c")]);
    assert.deepEqual((await stableOf(k, 3)).slice(-2), [h("c"), ""]);
    // Still append-only.
    await assert.rejects(sql`update snapshots set stable_sha256 = 'x'`.execute(k), /append-only/);
    // The adapter release: rows written before carry the text, rows since a reference to one shared row.
    const adapters = await sql<{ d: string; m: string | null; v: string | null; r: number | null }>`
      select device_id::text as d, adapter_module as m, adapter_version as v, adapter_release_id as r
      from snapshots order by id`.execute(k);
    const released = adapters.rows.filter((r) => r.r !== null);
    assert.equal(released.length, SEQUENCE.length + 5);
    assert.ok(released.every((r) => r.m === null && r.v === null && r.r === released[0]!.r));
    assert.ok(
      adapters.rows.filter((r) => r.r === null).every((r) =>
        r.m === "@dutlab/adapter-fixture" && r.v === "1.0.0"
      ),
    );
    assert.deepEqual(
      (await sql<{ module: string; version: string }>`select module, version from adapter_releases`.execute(
        k,
      ))
        .rows,
      [{ module: "@dutlab/adapter-fixture", version: "1.0.0" }],
    );
    // A row must name its adapter one way or the other.
    await assert.rejects(
      sql`insert into snapshots (device_id, endpoint_label, payload_sha256, collected_at)
        values (${dev(1)}::uuid, 'a', ${h("1")}, now())`.execute(k),
      /snapshots_adapter_known/,
    );
    // Down restores the index and the trigger; the marker then reads as a hash of its own (a change).
    await ok(m.migrateTo(BEFORE));
    const idx = await sql<{ n: string }>`select indexname as n from pg_indexes
      where schemaname = current_schema() and tablename = 'snapshots' and indexname = 'snapshots_device_id'`
      .execute(k);
    assert.equal(idx.rows.length, 1);
    // Down puts the text back in every row.
    const back = await sql<{ n: string }>`select count(*)::text as n from snapshots
      where adapter_module = '@dutlab/adapter-fixture' and adapter_version = '1.0.0'`.execute(k);
    assert.equal(back.rows[0]!.n, String(adapters.rows.length));
    await ok(m.migrateToLatest());
    // Through the narrow layout's view (migration 0017) the rows written under 0015 show the full stable
    // hash again, and the next insert compares with them.
    assert.deepEqual((await stableOf(k, 1)).slice(-3), [h("8"), h("9"), h("c")]);
    await insert(k, 1, "a", h("4"), h("c")); // unchanged after a legacy row
    await insert(k, 1, "a", h("5"), h("d")); // a real change after it
    assert.equal(await flagsOf(k, 1), FLAGS + ",f:f,t:t,t:f,f:f,t:t");
    // Down from the narrow layout copies its rows back into one table: the same ids, flags and adapters.
    const all = async () =>
      (await sql<Record<string, unknown>>`select id::text, device_id, endpoint_label, payload_sha256,
        payload_changed, stable_changed, adapter_module, adapter_version from snapshots order by snapshots.id`
        .execute(
          k,
        ))
        .rows;
    const narrow = await all();
    await ok(m.migrateTo(ONE_TABLE));
    const oneTable = await sql<Record<string, unknown>>`select s.id::text, s.device_id, s.endpoint_label,
        s.payload_sha256, s.payload_changed, s.stable_changed, coalesce(s.adapter_module, r.module) as adapter_module,
        coalesce(s.adapter_version, r.version) as adapter_version
      from snapshots s left join adapter_releases r on r.id = s.adapter_release_id order by s.id`.execute(k);
    assert.deepEqual(oneTable.rows, narrow);
    await ok(m.migrateToLatest());
    assert.deepEqual(await all(), narrow);
    await insert(k, 1, "a", h("5"), h("d")); // unchanged, compared with the newest row before the round trip
    assert.equal(await flagsOf(k, 1), FLAGS + ",f:f,t:t,t:f,f:f,t:t,f:f");
  },
);

dbTest(
  "listings across the narrow layout's migration: rows before 0017 (snapshots_legacy) and after (snapshot_rows) page as one",
  async (db) => {
    const k = db.kysely;
    const m = await testMigrator(k);
    await ok(m.migrateTo(ONE_TABLE));
    await devices(k, [1, 2, 3]);
    // Three devices, labels polled in an interleaved order, one label only device 1 has, now and then: the
    // first 20 polls in the one-table layout, the next 20 in the narrow one.
    const fill = (from: number, to: number) =>
      sql`insert into snapshots (device_id, endpoint_label, payload_sha256, collected_at, adapter_module,
        adapter_version)
      select ('00000000-0000-4000-8000-' || lpad(d::text, 12, '0'))::uuid,
        case when l = 4 then 'rare' else 'label_' || l end, repeat((1 + (r + l) % 3)::text, 64),
        now(), '@dutlab/adapter-fixture', '1.0.0'
      from generate_series(${from}::int, ${to}::int) r, generate_series(1, 3) d, generate_series(1, 4) l
      where l < 4 or (d = 1 and r % 7 = 0)
      order by r, (d * 7 + l) % 5, d, l`.execute(k);
    await fill(1, 20);
    const flagsBefore = await flagsOf(k, 1);
    await ok(m.migrateToLatest());
    await fill(21, 40);
    const split = await sql<{ legacy: string; narrow: string }>`select
      (select count(*) from snapshots_legacy)::text as legacy, (select count(*) from snapshot_rows)::text as narrow`
      .execute(k);
    assert.ok(
      Number(split.rows[0]!.legacy) > 150 && Number(split.rows[0]!.narrow) > 150,
      "rows in both tables",
    );
    // The flags of the rows written after 0017 continue from the rows before it.
    assert.ok((await flagsOf(k, 1)).startsWith(flagsBefore + ","));
    const expected = async (where: ReturnType<typeof sql>) =>
      (await sql<{ id: string }>`select s.id::text as id from snapshots s where ${where} order by s.id desc`
        .execute(k))
        .rows.map((r) => r.id);
    const filters: Array<[Parameters<typeof listSnapshots>[1], ReturnType<typeof sql>]> = [
      [{}, sql`true`],
      [{ endpointLabel: "rare" }, sql`endpoint_label = 'rare'`],
      [{ endpointLabel: "label_2" }, sql`endpoint_label = 'label_2'`],
    ];
    for (const d of [1, 2, 3, 4]) {
      filters.push([{ deviceId: dev(d) }, sql`device_id = ${dev(d)}::uuid`]);
      filters.push([
        { deviceId: dev(d), endpointLabel: "label_1" },
        sql`device_id = ${dev(d)}::uuid and endpoint_label = 'label_1'`,
      ]);
    }
    for (const [f, where] of filters) {
      const want = await expected(where);
      for (const limit of [1, 7, 100, 500]) {
        const got: string[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < 400; page++) {
          const r = await listSnapshots(k, { ...f, limit, cursor });
          assert.ok(!("badCursor" in r));
          for (const s of r.snapshots) {
            if (f.deviceId) assert.equal(s.deviceId, f.deviceId);
            if (f.endpointLabel) assert.equal(s.endpointLabel, f.endpointLabel);
            got.push(s.id);
          }
          if (!r.nextCursor) break;
          cursor = r.nextCursor;
        }
        assert.deepEqual(got, want, `${JSON.stringify(f)}, pages of ${limit}`);
      }
    }
    // Every field as the single-snapshot form shows it, from either table.
    const legacyId = (await sql<{ id: string }>`select max(id)::text as id from snapshots_legacy`.execute(k))
      .rows[0]!.id;
    for (
      const id of [
        legacyId,
        (await listSnapshots(k, { limit: 1 }) as { snapshots: Array<{ id: string }> })
          .snapshots[0]!.id,
      ]
    ) {
      const s = await getSnapshot(k, id);
      assert.ok(s && /^[0-9]{64}$/.test(s.payloadSha256) && typeof s.payloadJson === "object");
      assert.equal(s.adapterModule, "@dutlab/adapter-fixture");
      assert.equal(s.adapterVersion, "1.0.0");
    }
    assert.deepEqual(await listSnapshots(k, { deviceId: dev(1), cursor: "nope" }), { badCursor: true });
    // A series page walks the series' index; it never reads the table in full (with sequential scans priced
    // out: the table is small here).
    const plan = await k.transaction().execute(async (tx) => {
      await sql`set local enable_seqscan = off`.execute(tx);
      return (await sql<{ "QUERY PLAN": string }>`explain select x.id from snapshot_series se
        cross join lateral (select r.id from snapshot_rows r where r.series_id = se.id order by r.id desc
          limit 101) x
        where se.device_id = ${dev(2)}::uuid order by x.id desc limit 101`.execute(tx)).rows
        .map((r) => r["QUERY PLAN"]).join("\n");
    });
    assert.match(plan, /snapshot_rows_series_id/, plan);
    assert.doesNotMatch(plan, /Seq Scan on snapshot_rows/, plan);
  },
);

dbTest(
  "a backup keeps every table's file with adapter_releases added, and an older archive that lost an empty table's file restores",
  async (db) => {
    const { app, auth } = await testServices(db, fixtureModules());
    // The service's own backup: with this schema, npm nanotar's tar lost the last (empty) table's file.
    const res = await app.request("/api/admin/backup", { headers: auth });
    assert.equal(res.status, 200);
    const archive = new Uint8Array(await res.arrayBuffer());
    const files = await parseTarGzip(archive);
    const opened = await readBackup(archive);
    for (const t of opened.manifest.tables) {
      assert.ok(files.some((f) => f.name === t.file), `${t.file} is in the archive`);
    }
    // The layout of an archive written before: manifest first, the last empty table's file missing.
    const last = opened.manifest.tables.at(-1)!;
    assert.equal(last.rows, 0);
    const old = await createTarGzip([
      ...files.filter((f) => f.name === "manifest.json"),
      ...files.filter((f) => f.name !== "manifest.json" && f.name !== last.file),
    ]);
    const reopened = await readBackup(old);
    assert.deepEqual(reopened.manifest.tables, opened.manifest.tables);
    // A table with rows may not go missing.
    const full = opened.manifest.tables.find((t) => t.rows > 0)!;
    await assert.rejects(
      readBackup(await createTarGzip(files.filter((f) => f.name !== full.file))),
      new RegExp(`lacks ${full.file}`),
    );
  },
);
