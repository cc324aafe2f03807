/**
 * Migration 2026_11_25_0017 (the narrow layout) and the online compaction of the old rows on a large
 * PostgreSQL database while a writer polls and a reader lists (issue 31 point 2, BENCHMARKS.md section 3b):
 * `deno run -A --lock=deno.dev.lock bench/compact_migration.ts [snapshots=1000000] [batch=2000]`.
 *
 * 1. Builds a schema at migration 0016 with `snapshots` of 100 devices × 7 labels in poll order by SQL (as
 *    bench/_store_sql.ts does): the first half written as before migration 0015 (the adapter as text, full
 *    stable hashes), the second half as since (a release id, the '' stable marker); 20 payloads, which have
 *    no id yet. VACUUM ANALYZE; sizes.
 * 2. Starts a writer (one snapshot every 5 ms through the insert triggers, then through the `snapshots`
 *    view), runs migration 0017 and times it.
 * 3. Starts a reader (a device's first page, a device and label's first page, a device's page 5,000 rows back,
 *    in turn, back to back) and runs `compactSnapshots` to its end: total time, rows/s, the longest batch
 *    transaction, the writer's and the reader's slowest call and their errors.
 *    With BENCH_NO_KEY_UPDATE=1 the view's insert trigger is first changed to lock its series FOR NO KEY
 *    UPDATE (an experiment, see BENCHMARKS.md 3b).
 * 4. VACUUM, sizes; then VACUUM FULL of the emptied `snapshots_legacy` (only that returns its space to the
 *    operating system, as would pg_repack) and sizes again. Listings (median of 30) before and after.
 *
 * @module
 */
// deno-lint-ignore no-import-prefix -- test-only: kept out of deno.json and deno.lock (tests/gate/lockfiles_test.ts)
import postgres from "npm:postgres@3.4.9";
import { migrate, migrateUpTo, openDatabase } from "../core/harness/core.ts";
import { listSnapshots } from "../core/harness/core.ts";
import { compactSnapshots } from "../core/harness/core.ts";
import { encodeCursor } from "../core/harness/core.ts";

const URL = Deno.env.get("BENCH_DATABASE_URL") ?? "postgres://postgres@127.0.0.1:5432/test";
const n = Number(Deno.args[0] ?? 1_000_000);
const batchSize = Number(Deno.args[1] ?? 2000);
/** BENCH_NO_KEY_UPDATE=1: the series lock of the view's insert trigger as proposed in BENCHMARKS.md 3b. */
const noKeyUpdate = Deno.env.get("BENCH_NO_KEY_UPDATE") === "1";
const schema = `bench_mig_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
const admin = postgres(URL, { max: 1, onnotice: () => {} });
await admin.unsafe(`create schema ${schema}`);
const db = await openDatabase({ url: URL, schema });
const raw = postgres(URL, { max: 3, onnotice: () => {}, connection: { search_path: schema } });
const dev = (i: number) => `00000000-0000-4000-8000-${String(1 + (i % 100)).padStart(12, "0")}`;
const sec = (ms: number) => Number((ms / 1000).toFixed(1));

/** Bytes of each table with its indexes and TOAST (`pg_total_relation_size`), of this schema's snapshot tables. */
async function sizes() {
  const rows = await raw.unsafe<{ t: string; b: string }[]>(`select c.relname as t,
      pg_total_relation_size(c.oid)::text as b from pg_class c
    where c.relnamespace = '${schema}'::regnamespace and c.relkind = 'r'
      and c.relname in ('snapshots', 'snapshots_legacy', 'snapshot_rows', 'snapshot_series', 'snapshot_payloads',
        'adapter_releases')
    order by 1`);
  const out: Record<string, number> = {};
  for (const r of rows) out[r.t] = Number(r.b);
  out.total = Object.values(out).reduce((a, b) => a + b, 0);
  return out;
}

async function median(f: (i: number) => Promise<unknown>) {
  const t: number[] = [];
  for (let i = 0; i < 30; i++) {
    const s = performance.now();
    await f(i);
    t.push(performance.now() - s);
  }
  return Number(t.sort((a, b) => a - b)[15]!.toFixed(2));
}

/** A loop calling `f` until stopped (pausing `pauseMs` between calls): calls, errors, p50, p99, slowest. */
function loop(pauseMs: number, f: (i: number) => Promise<unknown>) {
  let stop = false, errors = 0, calls = 0, slowest = 0;
  const times: number[] = [];
  const done = (async () => {
    for (let i = 0; !stop; i++) {
      const s = performance.now();
      try {
        await f(i);
        calls++;
      } catch (e) {
        errors++;
        console.error(e);
      }
      slowest = Math.max(slowest, performance.now() - s);
      times.push(performance.now() - s);
      if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
    }
  })();
  return {
    async stop() {
      stop = true;
      await done;
      times.sort((a, b) => a - b);
      const q = (f: number) => Number((times[Math.floor(f * (times.length - 1))] ?? 0).toFixed(1));
      return { calls, errors, p50Ms: q(0.5), p99Ms: q(0.99), slowestMs: Math.round(slowest) };
    },
  };
}

async function build() {
  await migrateUpTo(db.kysely, "2026_11_25_0016_labs");
  await raw.unsafe(`insert into devices (id, hostname, vendor, base_url, username, password_enc,
      tls_verify_mode, poll_interval_seconds)
    select ('00000000-0000-4000-8000-' || lpad(d::text, 12, '0'))::uuid, 'dev-' || d, 'fixture-fw',
      'https://10.0.0.1', 'admin', 'v1.x.y.z', 'insecure', 30 from generate_series(1, 100) d`);
  await raw.unsafe(`insert into snapshot_payloads (sha256, payload, size_bytes)
    select encode(sha256(n::text::bytea), 'hex'), '{"n":' || n || '}', 8 from generate_series(1, 20) n`);
  await raw.unsafe(
    `insert into adapter_releases (module, version) values ('@dutlab/adapter-fixture', '1.0.0')`,
  );
  const polls = Math.ceil(n / 700);
  // Bulk rows bypass the per-row triggers (their flags are not what is measured here; every 20th poll of a
  // label changes its payload, and is flagged so).
  await raw.unsafe(`alter table snapshots disable trigger user`);
  await raw.unsafe(
    `insert into snapshots (device_id, endpoint_label, payload_sha256, stable_sha256, collected_at,
      adapter_module, adapter_version, adapter_release_id, payload_changed, stable_changed)
    select ('00000000-0000-4000-8000-' || lpad(d::text, 12, '0'))::uuid, 'label_' || l,
      encode(sha256((1 + (r / 20 + l) % 20)::text::bytea), 'hex'),
      case when r <= ${
      polls / 2
    } then encode(sha256((1 + (r / 20 + l) % 20)::text::bytea), 'hex') else '' end,
      now() - interval '30 days' + r * interval '30 seconds',
      case when r <= ${polls / 2} then '@dutlab/adapter-fixture' end,
      case when r <= ${polls / 2} then '1.0.0' end,
      case when r > ${polls / 2} then 1 end,
      r > 1 and r % 20 = 0, case when r > 1 and r % 20 = 0 then true else false end
    from generate_series(1, ${polls}) r, generate_series(1, 100) d, generate_series(1, 7) l
    order by r, d, l`,
  );
  await raw.unsafe(`alter table snapshots enable trigger user`);
  await raw.unsafe(`vacuum analyze snapshots`);
}

try {
  const t0 = performance.now();
  await build();
  const [c] = await raw.unsafe<[{ n: string }]>(`select count(*)::text as n from snapshots`);
  const buildS = sec(performance.now() - t0);
  console.error(`built ${c.n} snapshots at migration 0016 in ${buildS} s`);
  const bytesAt0016 = await sizes();
  const insert = (i: number) =>
    raw.unsafe(
      `insert into snapshots (device_id, endpoint_label, payload_sha256, stable_sha256,
        collected_at, adapter_module, adapter_version)
      values ($1::uuid, 'label_1', encode(sha256('1'::bytea), 'hex'), encode(sha256('1'::bytea), 'hex'), now(),
        '@dutlab/adapter-fixture', '1.0.0')`,
      [dev(i)],
    );
  const writer = loop(5, insert);
  await new Promise((r) => setTimeout(r, 500));
  const m0 = performance.now();
  const applied = await migrate(db.kysely, schema);
  const migrationMs = Math.round(performance.now() - m0);
  console.error(`migration ${applied.join(", ")}: ${migrationMs} ms`);
  if (noKeyUpdate) {
    // The experiment proposed to the lead (not the product): the view's insert trigger locks its series FOR
    // NO KEY UPDATE, which the compaction's foreign-key checks (FOR KEY SHARE) do not wait for nor block.
    const [f] = await raw.unsafe<[{ d: string }]>(
      `select pg_get_functiondef('snapshots_view_insert'::regproc) as d`,
    );
    if (!f.d.includes("for update;")) throw new Error("snapshots_view_insert has no FOR UPDATE to change");
    await raw.unsafe(f.d.replace("for update;", "for no key update;"));
  }
  const k = db.kysely;
  const [deep] = await raw.unsafe<[{ id: string }]>(`select id::text as id from snapshots_legacy
    where device_id = '${dev(0)}' order by id desc offset ${Math.min(5000, Math.floor(n / 200))} limit 1`);
  const cursor = encodeCursor("s", deep!.id);
  const listings = async () => ({
    deviceFirstPageMs: await median((i) => listSnapshots(k, { deviceId: dev(i), limit: 100 })),
    deviceDeepPageMs: await median(() => listSnapshots(k, { deviceId: dev(0), limit: 100, cursor })),
    deviceLabelPageMs: await median((i) =>
      listSnapshots(k, { deviceId: dev(i), endpointLabel: "label_3", limit: 100 })
    ),
  });
  const listingsBefore = await listings();
  const reader = loop(
    0,
    (i) =>
      i % 3 === 0
        ? listSnapshots(k, { deviceId: dev(i), limit: 100 })
        : i % 3 === 1
        ? listSnapshots(k, { deviceId: dev(i), endpointLabel: "label_3", limit: 100 })
        : listSnapshots(k, { deviceId: dev(0), limit: 100, cursor }),
  );
  let lastLine = 0;
  const c0 = performance.now();
  const r = await compactSnapshots(k, {
    batchSize,
    logEveryMs: 0,
    onProgress(p) {
      if (performance.now() - lastLine < 10_000) return;
      lastLine = performance.now();
      console.error(`compaction: ${p.moved} moved, ${p.left} left, ${p.rowsPerSecond} rows/s`);
    },
  });
  const compactionMs = performance.now() - c0;
  const readerStats = await reader.stop();
  await new Promise((r) => setTimeout(r, 200));
  const writerStats = await writer.stop();
  const listingsAfterUnanalyzed = await listings();
  const bytesUnvacuumed = await sizes();
  const v0 = performance.now();
  await raw.unsafe(`vacuum analyze snapshots_legacy`);
  await raw.unsafe(`vacuum analyze snapshot_rows`);
  const vacuumMs = Math.round(performance.now() - v0);
  const bytesVacuumed = await sizes();
  const listingsAfter = await listings();
  const f0 = performance.now();
  await raw.unsafe(`vacuum full snapshots_legacy`);
  const vacuumFullMs = Math.round(performance.now() - f0);
  const bytesVacuumFull = await sizes();
  console.log(JSON.stringify({
    snapshots: Number(c.n),
    buildS,
    batchSize,
    noKeyUpdate,
    migrationMs,
    compaction: {
      ...r,
      totalS: sec(compactionMs),
      rowsPerSecond: Math.round(r.moved / (compactionMs / 1000)),
    },
    writer: writerStats,
    reader: readerStats,
    listingsBefore,
    listingsAfterUnanalyzed,
    listingsAfter,
    bytes: {
      at0016: bytesAt0016,
      afterCompaction: bytesUnvacuumed,
      afterVacuum: bytesVacuumed,
      afterVacuumFullOfLegacy: bytesVacuumFull,
    },
    vacuumMs,
    vacuumFullMs,
  }));
} finally {
  await db.close();
  await raw.end({ timeout: 2 });
  await admin.unsafe(`drop schema ${schema} cascade`);
  await admin.end({ timeout: 2 });
}
