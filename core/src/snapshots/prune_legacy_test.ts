/**
 * The prune on a database mid-compaction (migration 2026_11_25_0017, issue 31 points 1-2): rows still in
 * `snapshots_legacy` are never deleted, a row of `snapshot_rows` whose neighbour (after or before it in its
 * device and label) is a legacy row is kept, the dry run counts what the prune deletes, payloads a legacy row
 * still names stay; once the rest is compacted, a second prune decides those rows by the ordinary policy.
 *
 * The history is written at migration 0016 (one table, its insert trigger setting the flags), then the
 * migration to the latest turns it into legacy rows, and the test moves part of them into `snapshot_rows` as
 * the compaction does (newest first, the copy before the legacy row is deleted; a few left in both tables).
 */
import assert from "node:assert/strict";
import { type Kysely, sql } from "kysely";
import { dbTest, testMigrator } from "../../harness/db.ts";
import type { Database } from "../db/schema.ts";
import { pruneSnapshots } from "./prune.ts";

const BEFORE = "2026_11_25_0016_labs";
const HOUR = 3_600_000;
const dev = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
const hash = (n: number) => n.toString(16).padStart(64, "0");

async function ok(p: Promise<{ error?: unknown }>) {
  const { error } = await p;
  if (error) throw error;
}

/**
 * `polls` polls of two labels of device `d` every 7 minutes from `from`: `a` moves a volatile field on every
 * poll (a new payload, the same stable hash) with a real change at poll 150; `b` changes at polls 100 and 220
 * (back and forth: its payloads are shared).
 */
async function history(k: Kysely<Database>, d: number, from: Date, k0: number, polls: number) {
  const rows = [];
  for (let i = k0; i < k0 + polls; i++) {
    const at = new Date(from.getTime() + i * 7 * 60_000);
    const aPayload = 1_000_000 * d + i;
    rows.push({ label: "a", payload: aPayload, stable: hash(i < 150 ? 1 : 2), at });
    const b = i >= 100 && i < 220 ? 11 : 10;
    rows.push({ label: "b", payload: b, stable: hash(b), at });
  }
  await sql`insert into snapshot_payloads (sha256, payload, size_bytes)
    select x, '{"p":"' || x || '"}', 72 from unnest(${rows.map((r) => hash(r.payload))}::text[]) x
    on conflict do nothing`.execute(k);
  for (const r of rows) {
    await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, stable_sha256, collected_at,
        adapter_module, adapter_version)
      values (${dev(d)}::uuid, ${r.label}, ${hash(r.payload)}, ${r.stable}, ${r.at}, 'seed', '0.0.0')`
      .execute(k);
  }
}

/** Copy the legacy rows of ids (lo, hi] into `snapshot_rows` (as the compaction does), and delete those > del. */
async function compact(k: Kysely<Database>, lo: string, hi: string, del: string) {
  await sql`insert into snapshot_rows (id, collected_at, payload_id, series_id, release_id, payload_changed,
      stable_changed, test_run_execution_id)
    select l.id, l.collected_at, snapshot_payload_id(l.payload_sha256),
      (snapshot_series_of(l.device_id, l.endpoint_label)).id, l.adapter_release_id, l.payload_changed,
      l.stable_changed, l.test_run_execution_id
    from snapshots_legacy l where l.id > ${lo}::bigint and l.id <= ${hi}::bigint order by l.id desc`.execute(
    k,
  );
  await sql`delete from snapshots_legacy where id > ${del}::bigint and id <= ${hi}::bigint`.execute(k);
}

interface Row {
  id: string;
  series: string;
  at: Date;
  real: boolean;
  legacy: boolean;
}

/** Every snapshot of both tables, one entry per id (legacy when a legacy copy exists), by series then id. */
async function rowsOf(k: Kysely<Database>): Promise<Row[]> {
  const r = await sql<{ id: string; series: string; at: Date; real: boolean; legacy: boolean }>`
    select u.id::text as id, u.series, u.at, bool_or(u.real) as real, bool_or(u.legacy) as legacy from (
      select r.id, se.device_id || '/' || se.endpoint_label as series, r.collected_at as at,
        r.payload_changed and r.stable_changed is not false as real, false as legacy
      from snapshot_rows r join snapshot_series se on se.id = r.series_id
      union all
      select l.id, l.device_id || '/' || l.endpoint_label, l.collected_at,
        l.payload_changed and l.stable_changed is not false, true
      from snapshots_legacy l
    ) u group by u.id, u.series, u.at order by u.series, u.id`.execute(k);
  return r.rows.map((x) => ({ ...x, at: new Date(x.at) }));
}

/** The policy with the legacy rule, written independently of the SQL: the ids a prune must delete. */
function expected(rows: Row[], cutoff: Date): string[] {
  const out: string[] = [];
  rows.forEach((s, i) => {
    const prev = rows[i - 1]?.series === s.series ? rows[i - 1] : undefined;
    const next = rows[i + 1]?.series === s.series ? rows[i + 1] : undefined;
    const keep = s.legacy || s.at >= cutoff || s.real || !prev || !next || next.real || prev.legacy ||
      next.legacy || Math.floor(prev.at.getTime() / HOUR) !== Math.floor(s.at.getTime() / HOUR);
    if (!keep) out.push(s.id);
  });
  return out.sort();
}

const count = async (k: Kysely<Database>, t: string) =>
  Number((await sql<{ n: string }>`select count(*)::text as n from ${sql.table(t)}`.execute(k)).rows[0]!.n);

dbTest(
  "a prune mid-compaction keeps every legacy row and every row with a legacy neighbour; a later one, after it, the rest",
  async (db) => {
    const k = db.kysely;
    const m = await testMigrator(k);
    await ok(m.migrateTo(BEFORE));
    for (const d of [1, 2]) {
      await sql`insert into devices (id, hostname, vendor, base_url, username, password_enc, tls_verify_mode,
          poll_interval_seconds) values (${dev(d)}::uuid, ${"dev-" + d}, 'fixture-fw', 'https://10.0.0.1',
          'admin', 'v1.x.y.z', 'insecure', 300)`.execute(k);
    }
    const from = new Date(Date.now() - 60 * 86_400_000);
    for (const d of [1, 2]) await history(k, d, from, 0, 260);
    await ok(m.migrateToLatest());
    assert.equal(await count(k, "snapshot_rows"), 0);
    const ids =
      (await sql<{ id: string }>`select l.id::text as id from snapshots_legacy l order by l.id`.execute(k))
        .rows.map((r) => r.id);
    // The newest 60 % moved, 6 of them still also in the legacy table; the oldest 40 % not yet.
    const split = ids[Math.floor(ids.length * 0.4)]!;
    const both = ids[Math.floor(ids.length * 0.4) + 6]!;
    await compact(k, split, ids.at(-1)!, both);
    // Polls since the migration: new rows, after the legacy ones.
    for (const d of [1, 2]) await history(k, d, from, 260, 40);
    const legacyBefore = await count(k, "snapshots_legacy");
    assert.ok(legacyBefore > 200);
    const before = await rowsOf(k);
    const payloadsBefore = await count(k, "snapshot_payloads");

    const asOf = new Date(Date.now() + 40 * 86_400_000);
    const policy = { olderThanDays: 30, keepOnePer: "hour" as const, asOf, batchSize: 97 };
    const dry = await pruneSnapshots(k, { ...policy, dryRun: true, actor: "test" });
    const want = expected(before, new Date(dry.cutoff));
    assert.ok(want.length > 100, `only ${want.length} to delete`);
    // The rule matters here: rows the one-table policy would delete are kept for their legacy neighbour.
    const oneTable = expected(before.map((r) => ({ ...r, legacy: false })), new Date(dry.cutoff));
    assert.ok(oneTable.length > want.length + 50, `${oneTable.length} vs ${want.length}`);
    assert.equal(dry.snapshots, want.length);
    assert.equal(await count(k, "snapshot_rows") + legacyBefore, before.length + 6);

    const real = await pruneSnapshots(k, { ...policy, dryRun: false, actor: "test" });
    for (const f of ["snapshots", "snapshotBytes", "payloads", "payloadBytes", "counts"] as const) {
      assert.deepEqual(real[f], dry[f], f);
    }
    const after = await rowsOf(k);
    const kept = new Set(after.map((r) => r.id));
    assert.deepEqual(before.filter((r) => !kept.has(r.id)).map((r) => r.id).sort(), want);
    assert.equal(await count(k, "snapshots_legacy"), legacyBefore, "no legacy row deleted");
    // Payloads: those freed are exactly the ones nothing names any more; those a legacy row names stay.
    assert.ok(real.payloads > 0);
    assert.equal(await count(k, "snapshot_payloads"), payloadsBefore - real.payloads);
    const orphans = await sql<{ n: number }>`select count(*)::int as n from snapshot_payloads p
      where not exists (select 1 from snapshots s where s.payload_sha256 = p.sha256)`.execute(k);
    assert.equal(orphans.rows[0]!.n, 0);

    // The compaction finishes; the next prune decides the rows it kept, by the ordinary policy.
    await compact(k, "0", split, "0");
    await sql`delete from snapshots_legacy`.execute(k); // the 6 copied before, whose copies are in snapshot_rows
    assert.equal(await count(k, "snapshots_legacy"), 0);
    const rest = await rowsOf(k);
    const cutoff = new Date(real.cutoff);
    const wantRest = expected(rest, cutoff);
    assert.ok(wantRest.length > 100, `only ${wantRest.length} left to delete`);
    const again = await pruneSnapshots(k, { ...policy, dryRun: false, actor: "test" });
    assert.equal(again.snapshots, wantRest.length);
    const final = new Set((await rowsOf(k)).map((r) => r.id));
    assert.deepEqual(rest.filter((r) => !final.has(r.id)).map((r) => r.id).sort(), wantRest);
    // One per series and hour, as if the history had never been split.
    const buckets = (rows: Row[]) =>
      new Set(rows.map((r) => `${r.series}/${Math.floor(r.at.getTime() / HOUR)}`));
    assert.deepEqual(buckets(await rowsOf(k)), buckets(before));
  },
);
