/**
 * The listings and the change history read `snapshots_legacy` (rows stored before migration 0017, not yet
 * compacted) only while it has rows: with rows in it they list them with the narrow rows; once the compaction
 * has emptied it, their statements leave it out (and the listing no longer asks), with the same answers.
 */
import assert from "node:assert/strict";
import { type Kysely, type KyselyPlugin, sql } from "kysely";
import { dbTest } from "../../harness/db.ts";
import { testMigrator } from "../../harness/db.ts";
import type { Database } from "../db/schema.ts";
import { listSnapshots } from "./store.ts";
import { listChanges } from "./changes.ts";
import { compactSnapshots } from "./compact.ts";
import { buildRegistry } from "../registry.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";

const ONE_TABLE = "2026_11_25_0016_labs";
const dev = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;

/** A Kysely over the same database that records the text of every statement it compiles. */
function recording(k: Kysely<Database>): { k: Kysely<Database>; texts: string[] } {
  const texts: string[] = [];
  const plugin: KyselyPlugin = {
    transformQuery: (args) => {
      texts.push(JSON.stringify(args.node));
      return args.node;
    },
    transformResult: (args) => Promise.resolve(args.result),
  };
  return { k: k.withPlugin(plugin), texts };
}

dbTest(
  "snapshots_legacy is read while it has rows, and left out once the compaction emptied it",
  async (db) => {
    const k0 = db.kysely;
    const registry = buildRegistry(await fixtureModules());
    const m = await testMigrator(k0);
    const step = await m.migrateTo(ONE_TABLE);
    if (step.error) throw step.error;
    await sql`insert into devices (id, hostname, vendor, base_url, username, password_enc, tls_verify_mode,
      poll_interval_seconds) values (${dev(1)}::uuid, 'dev-1', 'fixture-fw', 'https://10.0.0.1', 'admin',
      'v1.x.y.z', 'insecure', 300)`.execute(k0);
    await sql`insert into snapshot_payloads (sha256, payload, size_bytes)
    select repeat(n::text, 64), '{"n":' || n || '}', 7 from generate_series(1, 3) n`.execute(k0);
    const fill = (from: number, to: number) =>
      sql`insert into snapshots (device_id, endpoint_label, payload_sha256, collected_at, adapter_module,
        adapter_version)
      select ${dev(1)}::uuid, 'label_' || l, repeat((1 + (r / 3 + l) % 3)::text, 64), now(),
        '@dutlab/adapter-fixture', '1.0.0'
      from generate_series(${from}::int, ${to}::int) r, generate_series(1, 2) l order by r, l`.execute(k0);
    await fill(1, 12);
    const latest = await m.migrateToLatest();
    if (latest.error) throw latest.error;
    await fill(13, 24);
    const ids = async (k: Kysely<Database>) => {
      const r = await listSnapshots(k, { deviceId: dev(1), limit: 100 });
      assert.ok(!("badCursor" in r));
      return r.snapshots.map((s) => s.id);
    };
    const changes = async (k: Kysely<Database>) => {
      const r = await listChanges(k, registry, dev(1), { limit: 100, volatile: "include" });
      assert.ok("changes" in r);
      return r.changes.map((c) => `${c.snapshotId}<${c.previousId}`);
    };
    const legacyRead = (texts: string[]) => texts.filter((t) => t.includes("snapshots_legacy"));

    // Rows in both tables: every snapshot listed, both tables read.
    const before = recording(k0);
    const listed = await ids(before.k);
    assert.equal(listed.length, 48);
    const history = await changes(before.k);
    assert.ok(history.length > 10, history.join(" "));
    assert.ok(legacyRead(before.texts).length >= 2, "the legacy rows are read while there are some");

    const done = await compactSnapshots(k0, { batchSize: 7 });
    assert.equal(done.left, 0);
    // The same answers; after one question (is the table empty?) it is out of every statement.
    const after = recording(k0);
    assert.deepEqual(await ids(after.k), listed);
    assert.deepEqual(await changes(after.k), history);
    after.texts.length = 0;
    assert.deepEqual(await ids(after.k), listed);
    assert.deepEqual(await changes(after.k), history);
    assert.deepEqual(legacyRead(after.texts), [], "no statement reads snapshots_legacy once it is empty");
  },
);
