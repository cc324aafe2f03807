/**
 * Migration 2026_11_25_0015 (compact snapshots) on a large PostgreSQL database while a writer polls:
 * `deno run -A bench/compact_migration.ts [snapshots=1000000]`. Builds a schema at migration 0014 with
 * `snapshots` of 100 devices × 7 labels in poll order (SQL, as bench/_store_sql.ts does), then runs the
 * remaining migrations while another connection inserts one snapshot every 5 ms through the insert trigger,
 * and prints the migration's duration, the slowest insert meanwhile and the writer's errors (issue 31 point 2).
 * Before and after, it times a device's listing (first page of 100, and the page 5,000 snapshots back) and a
 * device-and-label listing, median of 30 calls each: before, the query `listSnapshots` made until this
 * migration (read by `snapshots_device_id`); after, `listSnapshots` itself.
 *
 * @module
 */
import postgres from "postgres";
import { migrate, migrateUpTo, openDatabase } from "../core/src/db/open.ts";
import { listSnapshots } from "../core/src/snapshots/store.ts";
import { encodeCursor } from "../core/src/util/paging.ts";

const URL = Deno.env.get("BENCH_DATABASE_URL") ?? "postgres://postgres@127.0.0.1:5432/test";
const n = Number(Deno.args[0] ?? 1_000_000);
const schema = `bench_mig_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
const admin = postgres(URL, { max: 1, onnotice: () => {} });
await admin.unsafe(`create schema ${schema}`);
const db = await openDatabase({ url: URL, schema });
const raw = postgres(URL, { max: 2, onnotice: () => {}, connection: { search_path: schema } });
try {
  await migrateUpTo(db.kysely, "2026_11_25_0014_snapshot_prunes");
  await raw.unsafe(`insert into devices (id, hostname, vendor, base_url, username, password_enc,
      tls_verify_mode, poll_interval_seconds)
    select ('00000000-0000-4000-8000-' || lpad(d::text, 12, '0'))::uuid, 'dev-' || d, 'fixture-fw',
      'https://10.0.0.1', 'admin', 'v1.x.y.z', 'insecure', 30 from generate_series(1, 100) d`);
  await raw.unsafe(`insert into snapshot_payloads (sha256, payload, size_bytes)
    select encode(sha256(n::text::bytea), 'hex'), '{"n":' || n || '}', 8 from generate_series(1, 20) n`);
  const t0 = performance.now();
  // Bulk rows bypass the per-row trigger (its flags are not what is measured here).
  await raw.unsafe(`alter table snapshots disable trigger snapshots_payload_changed`);
  await raw.unsafe(
    `insert into snapshots (device_id, endpoint_label, payload_sha256, stable_sha256, collected_at,
      adapter_module, adapter_version)
    select ('00000000-0000-4000-8000-' || lpad(d::text, 12, '0'))::uuid, 'label_' || l,
      encode(sha256((1 + (r / 20 + l) % 20)::text::bytea), 'hex'),
      encode(sha256((1 + (r / 20 + l) % 20)::text::bytea), 'hex'),
      now() - interval '30 days' + r * interval '30 seconds', '@dutlab/adapter-fixture', '1.0.0'
    from generate_series(1, ${Math.ceil(n / 700)}) r, generate_series(1, 100) d, generate_series(1, 7) l
    order by r, d, l`,
  );
  await raw.unsafe(`alter table snapshots enable trigger snapshots_payload_changed`);
  await raw.unsafe(`vacuum analyze snapshots`);
  const [c] = await raw.unsafe<[{ n: string }]>(`select count(*)::text as n from snapshots`);
  console.log(`built ${c.n} snapshots in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const dev = (i: number) => `00000000-0000-4000-8000-${String(1 + (i % 100)).padStart(12, "0")}`;
  const [deep] = await raw.unsafe<[{ id: string }]>(`select id::text as id from snapshots
    where device_id = '${dev(0)}' order by id desc offset 5000 limit 1`);
  const median = async (f: (i: number) => Promise<unknown>) => {
    const t: number[] = [];
    for (let i = 0; i < 30; i++) {
      const s = performance.now();
      await f(i);
      t.push(performance.now() - s);
    }
    return Number(t.sort((a, b) => a - b)[15]!.toFixed(2));
  };
  // The listing query as it was before migration 0015 (core/src/snapshots/store.ts at 0014).
  const oldList = (d: string, below: string | null, label: string | null) =>
    raw.unsafe(
      `select s.id::text as id, s.device_id, s.endpoint_label, p.payload, s.payload_sha256, s.collected_at,
        s.test_run_execution_id, s.adapter_module, s.adapter_version
      from snapshots s join snapshot_payloads p on p.sha256 = s.payload_sha256
      where s.device_id = $1 ${label ? "and s.endpoint_label = $3" : ""}
        and ($2::bigint is null or s.id < $2::bigint)
      order by s.id desc limit 101`,
      label ? [d, below, label] : [d, below],
    );
  const listings = async (current: boolean) => {
    const k = db.kysely;
    const cursor = encodeCursor("s", deep!.id);
    return {
      deviceFirstPageMs: await median((i) =>
        current ? listSnapshots(k, { deviceId: dev(i), limit: 100 }) : oldList(dev(i), null, null)
      ),
      deviceDeepPageMs: await median(() =>
        current ? listSnapshots(k, { deviceId: dev(0), limit: 100, cursor }) : oldList(dev(0), deep!.id, null)
      ),
      deviceLabelPageMs: await median((i) =>
        current
          ? listSnapshots(k, { deviceId: dev(i), endpointLabel: "label_3", limit: 100 })
          : oldList(dev(i), null, "label_3")
      ),
    };
  };
  const before = await listings(false);
  // The writer: one snapshot every 5 ms through the production trigger, timed.
  let stop = false, errors = 0, writes = 0, slowest = 0;
  const writer = (async () => {
    let i = 0;
    while (!stop) {
      const s = performance.now();
      try {
        await raw.unsafe(
          `insert into snapshots (device_id, endpoint_label, payload_sha256, stable_sha256,
            collected_at, adapter_module, adapter_version)
          values (('00000000-0000-4000-8000-' || lpad($1::text, 12, '0'))::uuid, 'label_1',
            encode(sha256('1'::bytea), 'hex'), encode(sha256('1'::bytea), 'hex'), now(),
            '@dutlab/adapter-fixture', '1.0.0')`,
          [1 + (i++ % 100)],
        );
        writes++;
      } catch (e) {
        errors++;
        console.error(e);
      }
      slowest = Math.max(slowest, performance.now() - s);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  await new Promise((r) => setTimeout(r, 500));
  const m0 = performance.now();
  const applied = await migrate(db.kysely, schema);
  const ms = performance.now() - m0;
  await new Promise((r) => setTimeout(r, 500));
  stop = true;
  await writer;
  const after = await listings(true);
  console.log(JSON.stringify({
    snapshots: Number(c.n),
    before,
    after,
    applied,
    migrationMs: Math.round(ms),
    writesDuring: writes,
    writerErrors: errors,
    slowestInsertMs: Math.round(slowest),
  }));
} finally {
  await db.close();
  await raw.end({ timeout: 2 });
  await admin.unsafe(`drop schema ${schema} cascade`);
  await admin.end({ timeout: 2 });
}
