/**
 * Indexes of `snapshots` (issue 11): migration 2026_11_21_0003 replaces snapshots_label_id by the
 * deduplicated snapshots_label, its down restores the index as 0001 created it, and the listing
 * queries still find their rows through an index.
 */
import assert from "node:assert/strict";
import { type Kysely, sql } from "kysely";
import { NO_MIGRATIONS } from "kysely/migration";
import { dbTest, testMigrator } from "../../harness/db.ts";
import { listSnapshots } from "./store.ts";
import type { Database } from "../db/schema.ts";

/**
 * The definition of every index on `table` (the one-table layout's `snapshots`, which migration 0017 renames
 * `snapshots_legacy`), by name, without the schema and with the table called `snapshots`.
 */
async function snapshotIndexes(db: Kysely<Database>, table = "snapshots"): Promise<Record<string, string>> {
  const r = await sql<{ indexname: string; indexdef: string }>`select indexname, indexdef from pg_indexes
    where schemaname = current_schema() and tablename = ${table} order by indexname`.execute(db);
  return Object.fromEntries(
    r.rows.map((x) => [x.indexname, x.indexdef.replace(/ ON \S+\.snapshots(_legacy)? /, " ON snapshots ")]),
  );
}

async function ok(p: Promise<{ error?: unknown }>) {
  const { error } = await p;
  if (error) throw error;
}

dbTest(
  "the narrow rows carry the indexes of migration 0017, and the rows not yet compacted keep those of 0003, 0009, 0011 and 0015",
  async (db) => {
    const rows = await snapshotIndexes(db.kysely, "snapshot_rows");
    assert.deepEqual(
      rows,
      Object.fromEntries(
        [
          ["snapshot_rows_changed", "(series_id, id) WHERE payload_changed"],
          ["snapshot_rows_payload", "(payload_id)"],
          ["snapshot_rows_pkey", "(id) WITH (fillfactor='100')"],
          ["snapshot_rows_run", "(test_run_execution_id, id) WHERE (test_run_execution_id IS NOT NULL)"],
          ["snapshot_rows_series_id", "(series_id, id)"],
          [
            "snapshot_rows_stable_changed",
            "(series_id, id) WHERE (payload_changed AND (stable_changed IS NOT FALSE))",
          ],
        ].map(([name, def]) => [
          name,
          `CREATE ${name === "snapshot_rows_pkey" ? "UNIQUE " : ""}INDEX ${name} ON ` +
          `${(Object.values(rows)[0] ?? "").match(/ ON (\S+) /)?.[1]} USING btree ${def}`,
        ]),
      ),
    );
    const idx = await snapshotIndexes(db.kysely, "snapshots_legacy");
    assert.deepEqual(Object.keys(idx), [
      "snapshots_device_changed",
      "snapshots_device_label_id",
      "snapshots_device_stable_changed",
      "snapshots_label",
      "snapshots_payload",
      "snapshots_pkey",
      "snapshots_run_id",
    ]);
    assert.equal(
      idx.snapshots_label,
      "CREATE INDEX snapshots_label ON snapshots USING btree (endpoint_label)",
    );
    assert.equal(
      idx.snapshots_device_changed,
      "CREATE INDEX snapshots_device_changed ON snapshots USING btree (device_id, id DESC) WHERE payload_changed",
    );
    assert.equal(
      idx.snapshots_device_stable_changed,
      "CREATE INDEX snapshots_device_stable_changed ON snapshots USING btree (device_id, id DESC) " +
        "WHERE (payload_changed AND (stable_changed IS NOT FALSE))",
    );
  },
);

dbTest("migration 0003 down restores snapshots_label_id exactly as 0001 created it", async (db) => {
  const m = await testMigrator(db.kysely);
  const latest = await snapshotIndexes(db.kysely, "snapshots_legacy");
  await ok(m.migrateTo("2026_11_21_0002_snapshot_payloads_immutable"));
  const down = await snapshotIndexes(db.kysely);
  assert.notDeepEqual(down, latest, "0003 changed the indexes");
  assert.ok("snapshots_label_id" in down && !("snapshots_label" in down), JSON.stringify(down));
  // The schema 0001 and 0002 build from scratch.
  await ok(m.migrateTo(NO_MIGRATIONS));
  await ok(m.migrateTo("2026_11_21_0002_snapshot_payloads_immutable"));
  assert.deepEqual(down, await snapshotIndexes(db.kysely));
  await ok(m.migrateToLatest());
  assert.deepEqual(await snapshotIndexes(db.kysely, "snapshots_legacy"), latest);
});

dbTest("listings by a rare label, by a missing label and by device and label read an index", async (db) => {
  const k = db.kysely;
  // 20 devices x 6 labels x 150 polls, in poll order, and 20 snapshots of a label one device has.
  await sql`insert into devices (id, hostname, vendor, base_url, username, password_enc, tls_verify_mode,
      poll_interval_seconds)
    select ('00000000-0000-4000-8000-' || lpad(n::text, 12, '0'))::uuid, 'dev-' || n, 'fixture-fw',
      'https://10.0.0.' || n, 'admin', 'v1.x.y.z', 'insecure', 300 from generate_series(1, 20) n`.execute(k);
  await sql`insert into snapshot_payloads (sha256, payload, size_bytes) values (${"0".repeat(64)}, '{}', 2)`
    .execute(k);
  await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, collected_at, adapter_module,
      adapter_version)
    select ('00000000-0000-4000-8000-' || lpad(d::text, 12, '0'))::uuid,
      case when r < 20 and d = 1 and l = 1 then 'rare_label' else 'label_' || l end, ${"0".repeat(64)},
      now(), '@dutlab/adapter-fixture', '1.0.0'
    from generate_series(1, 150) r, generate_series(1, 20) d, generate_series(1, 6) l order by r, d, l`
    .execute(k);
  await sql`analyze snapshot_rows`.execute(k);
  await sql`analyze snapshot_series`.execute(k);
  // The narrow side of the page queries of listSnapshots (core/src/snapshots/store.ts), default page size.
  const plan = async (q: ReturnType<typeof sql>) =>
    (await sql<{ "QUERY PLAN": string }>`explain ${q}`.execute(k)).rows.map((r) => r["QUERY PLAN"]).join(
      "\n",
    );
  for (const label of ["rare_label", "no_such_label"]) {
    const text = await plan(sql`select x.id from snapshot_series se
        cross join lateral (select r.id from snapshot_rows r where r.series_id = se.id order by r.id desc
          limit 101) x
        where se.endpoint_label = ${label} order by x.id desc limit 101`);
    assert.match(text, /(on|using) snapshot_rows_series_id\b/, text);
    assert.doesNotMatch(text, /Seq Scan on snapshot_rows|snapshot_rows_pkey/, text);
  }
  const dev = "00000000-0000-4000-8000-000000000007";
  const text = await plan(sql`select r.id from snapshot_rows r
    where r.series_id = (select se.id from snapshot_series se
      where se.device_id = ${dev} and se.endpoint_label = 'label_3') order by r.id desc limit 101`);
  assert.match(text, /(on|using) snapshot_rows_series_id\b/, text);
  assert.doesNotMatch(text, /Seq Scan on snapshot_rows|snapshot_rows_pkey/, text);
  // And the pages are the rows, newest first.
  const rare = await listSnapshots(k, { endpointLabel: "rare_label" });
  assert.ok(!("badCursor" in rare));
  assert.equal(rare.snapshots.length, 19);
  assert.ok(rare.snapshots.every((x, i, a) => i === 0 || BigInt(a[i - 1]!.id) > BigInt(x.id)));
});

dbTest(
  "migration 0009 marks the existing hash changes, and new rows get the same marks from its trigger",
  async (db) => {
    const k = db.kysely;
    const m = await testMigrator(k);
    await ok(m.migrateTo("2026_11_23_0008_audited_delete_signatures"));
    await sql`insert into devices (id, hostname, vendor, base_url, username, password_enc, tls_verify_mode,
      poll_interval_seconds)
    select ('00000000-0000-4000-8000-' || lpad(n::text, 12, '0'))::uuid, 'dev-' || n, 'fixture-fw',
      'https://10.0.0.' || n, 'admin', 'v1.x.y.z', 'insecure', 300 from generate_series(1, 2) n`.execute(k);
    await sql`insert into snapshot_payloads (sha256, payload, size_bytes)
    select repeat(n::text, 64), '{}', 2 from generate_series(1, 3) n`.execute(k);
    // Device 1, label a: hashes 1 1 2 2 1 (changes at the 3rd and 5th); label b: 3 3 (none); device 2,
    // label a: 2 then 1 (a change; device 1's rows in between do not count).
    const rows: Array<[number, string, number]> = [
      [1, "a", 1],
      [1, "b", 3],
      [2, "a", 2],
      [1, "a", 1],
      [1, "a", 2],
      [1, "b", 3],
      [1, "a", 2],
      [2, "a", 1],
      [1, "a", 1],
    ];
    for (const [d, label, h] of rows) {
      await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, collected_at, adapter_module,
        adapter_version)
      values (${`00000000-0000-4000-8000-${String(d).padStart(12, "0")}`}::uuid, ${label},
        ${String(h).repeat(64)}, now(), '@dutlab/adapter-fixture', '1.0.0')`.execute(k);
    }
    await ok(m.migrateToLatest());
    const marks = async () =>
      (await sql<{ c: boolean }>`select payload_changed as c from snapshots order by id`.execute(k)).rows
        .map((r) => r.c);
    const backfilled = await marks();
    assert.deepEqual(backfilled, [false, false, false, false, true, false, false, true, true]);
    // Still append-only after the backfill.
    await assert.rejects(sql`update snapshots set payload_changed = false`.execute(k), /append-only/);
    // The trigger gives a new row the same answer the backfill gave an old one: the same sequence again, on
    // two other devices (3 and 4 for 1 and 2).
    await sql`insert into devices (id, hostname, vendor, base_url, username, password_enc, tls_verify_mode,
        poll_interval_seconds)
      select ('00000000-0000-4000-8000-' || lpad(n::text, 12, '0'))::uuid, 'dev-' || n, 'fixture-fw',
        'https://10.0.0.' || n, 'admin', 'v1.x.y.z', 'insecure', 300 from generate_series(3, 4) n`.execute(k);
    for (const [d, label, h] of rows) {
      await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, collected_at, adapter_module,
        adapter_version)
      values (${`00000000-0000-4000-8000-${String(d + 2).padStart(12, "0")}`}::uuid, ${label},
        ${String(h).repeat(64)}, now(), '@dutlab/adapter-fixture', '1.0.0')`.execute(k);
    }
    assert.deepEqual(await marks(), [...backfilled, ...backfilled]);
    // Down removes the column, the trigger and the index; up again restores them.
    await ok(m.migrateTo("2026_11_23_0008_audited_delete_signatures"));
    assert.ok(!("snapshots_device_changed" in await snapshotIndexes(k)));
    await ok(m.migrateToLatest());
    assert.ok("snapshots_device_changed" in await snapshotIndexes(k, "snapshots_legacy"));
  },
);
