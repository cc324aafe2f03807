/**
 * The online compaction of old snapshots (issue 31 point 2; core/src/snapshots/compact.ts): a database filled
 * at migration 0016 (rows with the adapter as text as before 0015, rows with a release id, run ids, stable
 * hashes of their own, equal to the payload's, and unknown), then 0017, then the compaction while a writer
 * inserts through the `snapshots` view. Every row keeps its id, device, label, payload hash, time, adapter
 * module and version, flags and run id; the listings and the change history answer the same before and after
 * (and half-way), and so does the lab read (pre-flight's, now and as of moments in the old history); a
 * compaction stopped after a few batches resumes; a second runner finds the lock taken;
 * `serve`'s background job and `deno task compact` move everything.
 */
import assert from "node:assert/strict";
import { type Kysely, sql } from "kysely";
import { buildRegistry } from "../registry.ts";
import { childEnv } from "../../harness/process.ts";
import { dbTest, testMigrator } from "../../harness/db.ts";
import { listChanges } from "../snapshots/changes.ts";
import { listSnapshots } from "../snapshots/store.ts";
import type { Database } from "../db/schema.ts";
import type { Db } from "../db/open.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";
import { compactSnapshots } from "../snapshots/compact.ts";
import { readLab } from "../lab/read.ts";
import { startCompaction } from "./compaction.ts";
import type { Runtime } from "./bootstrap.ts";

const BEFORE = "2026_11_25_0016_labs";
const RUN = "11111111-2222-4333-8444-555555555555";
const dev = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
const DEVICES = [1, 2, 3];

async function ok(p: Promise<{ error?: unknown }>) {
  const { error } = await p;
  if (error) throw error;
}

/**
 * At migration 0016: three devices, labels a (a stable hash of its own for payloads 1-3: volatile-only
 * changes) and b (stable = payload hash, some unknown), 40 polls each, one statement per row so that the
 * insert trigger of the time sets the flags. The first 15 polls are written as before migration 0015 (the
 * adapter as text, no release id); polls 10-12 belong to a run.
 */
async function fill(k: Kysely<Database>) {
  for (const n of DEVICES) {
    await sql`insert into devices (id, hostname, vendor, base_url, username, password_enc, tls_verify_mode,
        poll_interval_seconds, created_at) values (${dev(n)}::uuid, ${"dev-" + n}, 'fixture-fw',
        'https://10.0.0.1', 'admin', 'v1.x.y.z', 'insecure', 300, '2026-09-01T00:00:00Z')`.execute(k);
  }
  await sql`insert into snapshot_payloads (sha256, payload, size_bytes)
    select repeat(n::text, 64), '{"n":' || n || '}', 7 from generate_series(1, 9) n`.execute(k);
  await sql`alter table snapshots disable trigger snapshots_adapter_release`.execute(k);
  await polls(k, 1, 15, "0.9.0");
  await sql`alter table snapshots enable trigger snapshots_adapter_release`.execute(k);
  await polls(k, 16, 40, "1.0.0");
  // What the poller keeps beside the rows: each (device, label)'s last stored snapshot.
  await sql`insert into snapshot_latest (device_id, endpoint_label, snapshot_id)
    select device_id, endpoint_label, max(id) from snapshots group by device_id, endpoint_label`.execute(k);
}

async function polls(k: Kysely<Database>, from: number, to: number, version: string) {
  await sql`do $$
    declare
      p text;
    begin
      for r in ${sql.lit(from)}..${sql.lit(to)} loop
        for d in 1..3 loop
          for l in 0..1 loop
            p := repeat((1 + (r / 4 + d + l * 3) % 9)::text, 64);
            insert into snapshots (device_id, endpoint_label, payload_sha256, stable_sha256, collected_at,
              adapter_module, adapter_version, test_run_execution_id)
            values (('00000000-0000-4000-8000-' || lpad(d::text, 12, '0'))::uuid,
              case when l = 0 then 'a' else 'b' end, p,
              case when l = 0 and left(p, 1) in ('1', '2', '3') then repeat('a', 64)
                when l = 1 and r % 7 = 0 then null else p end,
              timestamptz '2026-10-01T00:00:00Z' + r * interval '1 minute' + d * interval '1 second',
              '@dutlab/adapter-fixture', ${sql.lit(version)},
              case when r between 10 and 12 then ${sql.lit(RUN)}::uuid end);
          end loop;
        end loop;
      end loop;
    end $$`.execute(k);
}

type Row = Record<string, unknown>;

/** Every snapshot as the view shows it (the old table's columns but the stable hash, which rows no longer keep). */
async function rows(k: Kysely<Database>): Promise<Row[]> {
  return (await sql<Row>`select s.id::text, s.device_id, s.endpoint_label, s.payload_sha256, s.collected_at,
      s.test_run_execution_id, coalesce(s.adapter_module, a.module) as adapter_module,
      coalesce(s.adapter_version, a.version) as adapter_version, s.payload_changed, s.stable_changed
    from snapshots s left join adapter_releases a on a.id = s.adapter_release_id order by s.id`.execute(k))
    .rows;
}

/** Every page of a listing (small pages, so that cursors cross the two tables). */
async function pages(k: Kysely<Database>, f: Parameters<typeof listSnapshots>[1]) {
  const out: string[][] = [];
  let cursor: string | undefined;
  for (;;) {
    const r = await listSnapshots(k, { ...f, limit: 7, cursor });
    if ("badCursor" in r) throw new Error("bad cursor");
    out.push(
      r.snapshots.map((s) =>
        `${s.id}/${s.deviceId}/${s.endpointLabel}/${s.payloadSha256}/${s.adapterVersion}`
      ),
    );
    if (!r.nextCursor) return out;
    cursor = r.nextCursor;
  }
}

const registry = buildRegistry(fixtureModules());

async function changes(k: Kysely<Database>, d: number, volatile: "include" | "exclude") {
  const out: unknown[] = [];
  let cursor: string | undefined;
  for (;;) {
    const r = await listChanges(k, registry, dev(d), { limit: 4, cursor, volatile });
    if (!("changes" in r)) throw new Error(JSON.stringify(r));
    out.push(r.changes.map((c) => [c.snapshotId, c.previousId, c.endpointLabel, c.payloadSha256]));
    if (!r.nextCursor) return out;
    cursor = r.nextCursor;
  }
}

/**
 * The lab read of labels a and b of one device (pre-flight's, core/src/lab/read.ts): now, or as of a moment
 * (per label the last snapshot collected by then), as [label, id, payload hash, time] per label.
 */
async function labRead(k: Kysely<Database>, d: number, asOf?: Date) {
  const read = await readLab(k, [() => new Map([["a", new Set([dev(d)])], ["b", new Set([dev(d)])]])], {
    asOf,
    payloads: false,
  });
  return [...read.latest].flatMap(([label, byDevice]) =>
    [...byDevice.values()].map((s) => [label, s.id, s.sha, s.at.toISOString()])
  ).sort();
}

/**
 * Moments in the old history (polls 1-40 a minute apart from 00:01, device d at second d): before it, among the
 * rows the first three batches leave in the old table, among those they move, and at its end.
 */
const MOMENTS = [
  "2026-10-01T00:00:30Z",
  "2026-10-01T00:07:02Z",
  "2026-10-01T00:25:00Z",
  "2026-10-01T00:37:02Z",
  "2026-10-01T00:40:03Z",
];

/** What every reader answers: listings by device, by device and label, by run, unfiltered; the change history. */
async function answers(k: Kysely<Database>, devices = DEVICES) {
  const a: Record<string, unknown> = {};
  for (const d of devices) {
    a[`lab ${d} now`] = await labRead(k, d);
    for (const m of MOMENTS) a[`lab ${d} as of ${m}`] = await labRead(k, d, new Date(m));
    a[`device ${d}`] = await pages(k, { deviceId: dev(d) });
    for (const l of ["a", "b"]) {
      a[`device ${d} ${l}`] = await pages(k, { deviceId: dev(d), endpointLabel: l });
    }
    a[`changes ${d}`] = await changes(k, d, "exclude");
    a[`changes ${d} include`] = await changes(k, d, "include");
  }
  a.run = await pages(k, { testRunExecutionId: RUN });
  if (devices === DEVICES) a.all = await pages(k, {});
  return a;
}

async function legacyCount(k: Kysely<Database>) {
  return Number(
    (await sql<{ n: string }>`select count(*)::text as n from snapshots_legacy`.execute(k)).rows[0]!.n,
  );
}

/** At 0017 with 240 rows in snapshots_legacy, and what every reader answers then. */
async function prepared(db: Db) {
  const k = db.kysely;
  const m = await testMigrator(k);
  await ok(m.migrateTo(BEFORE));
  await fill(k);
  const before = await rows(k);
  await ok(m.migrateToLatest());
  assert.equal(await legacyCount(k), 240);
  assert.deepEqual(await rows(k), before);
  const a = await answers(k);
  // The lab read finds labels a and b of each device, none before the history began.
  assert.equal((a["lab 1 now"] as unknown[]).length, 2);
  assert.equal((a[`lab 1 as of ${MOMENTS[0]}`] as unknown[]).length, 0);
  assert.equal((a[`lab 1 as of ${MOMENTS[1]}`] as unknown[]).length, 2);
  return { k, before, answers: a };
}

/** A writer of device 1 through the view, one row after another until stopped: its ids and errors. */
function writer(k: Kysely<Database>) {
  let stop = false;
  const ids: string[] = [];
  const errors: unknown[] = [];
  const done = (async () => {
    for (let i = 0; !stop; i++) {
      const p = String(1 + (i >> 1) % 9).repeat(64);
      try {
        const r = await sql<{ id: string }>`insert into snapshots (device_id, endpoint_label, payload_sha256,
            stable_sha256, collected_at, adapter_module, adapter_version)
          values (${dev(1)}::uuid, 'b', ${p}, ${p}, now(), '@dutlab/adapter-fixture', '2.0.0')
          returning id::text`.execute(k);
        ids.push(r.rows[0]!.id);
      } catch (e) {
        errors.push(e);
      }
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  return {
    ids,
    errors,
    async stop() {
      stop = true;
      await done;
    },
  };
}

dbTest(
  "compaction moves every old row with its columns and flags while a writer inserts; readers answer the same",
  async (db) => {
    const { k, before, answers: a0 } = await prepared(db);
    const w = writer(k);
    await new Promise((r) => setTimeout(r, 30));
    // Killed after three batches: the newest 30 old rows moved, the rest still read from the old table.
    const first = await compactSnapshots(k, { batchSize: 10, maxBatches: 3 });
    assert.equal(first.end, "maxBatches");
    assert.equal(first.moved, 30);
    assert.equal(await legacyCount(k), 210);
    const moved =
      (await sql<{ id: string }>`select id::text from snapshot_rows where id <= ${before.at(-1)!.id}::bigint
    order by id`.execute(k)).rows.map((r) => r.id);
    assert.deepEqual(moved, before.slice(-30).map((r) => r.id), "the newest old rows go first");
    assert.deepEqual(
      await answers(k, [2, 3]),
      Object.fromEntries(Object.entries(a0).filter(([n]) => !/ 1|all/.test(n))),
    );
    // Resumed: everything else.
    const second = await compactSnapshots(k, { batchSize: 25 });
    await w.stop();
    assert.equal(second.end, "done");
    assert.equal(second.moved, 210);
    assert.equal(second.left, 0);
    assert.ok(second.longestBatchMs >= 0);
    assert.equal(await legacyCount(k), 0);
    // The emptied table gave its space back (a TRUNCATE its guard allows once it is empty), and a TRUNCATE of
    // a table with rows is still refused.
    const size = await sql<{ n: string }>`select pg_relation_size('snapshots_legacy')::text as n`.execute(k);
    assert.equal(size.rows[0]!.n, "0");
    await assert.rejects(sql`truncate snapshot_rows`.execute(k), /append-only/);
    assert.deepEqual(w.errors, []);
    assert.ok(w.ids.length > 0, "the writer wrote during the compaction");
    // Every old row, column by column; the writer's rows after them.
    const after = await rows(k);
    assert.deepEqual(after.slice(0, before.length), before);
    assert.deepEqual(after.slice(before.length).map((r) => r.id), w.ids);
    // The writer's rows were compared with the series' newest row, wherever it was: the flags the old trigger
    // gave (its stable hash is the payload's, so a change is a real one).
    const flags = await sql<{ id: string; changed: boolean; stable: boolean | null; want: boolean }>`
    select id::text, payload_changed as changed, stable_changed as stable,
      coalesce(lag(payload_sha256) over w <> payload_sha256, false) as want
    from snapshots where device_id = ${dev(1)}::uuid and endpoint_label = 'b' window w as (order by id)
    order by id`.execute(k);
    const written = flags.rows.filter((r) => w.ids.includes(r.id));
    assert.equal(written.length, w.ids.length);
    for (const r of written) {
      assert.equal(r.changed, r.want, `payload_changed of ${r.id}`);
      assert.equal(r.stable, r.want, `stable_changed of ${r.id}`);
    }
    // Readers: the same answers (device 1 has the writer's rows on top of the same history).
    const a1 = await answers(k);
    for (const [name, v] of Object.entries(a0)) {
      if (/^device 1$|^device 1 b$|^all$|^changes 1/.test(name)) continue;
      assert.deepEqual(a1[name], v, name);
    }
    const flat = (x: unknown) => (x as string[][]).flat();
    const writtenOnTop = (name: string) =>
      assert.deepEqual(
        flat(a1[name]).slice(w.ids.length),
        flat(a0[name]),
        `${name}: same history below the writer's rows`,
      );
    writtenOnTop("device 1");
    writtenOnTop("device 1 b");
    writtenOnTop("all");
    for (const name of ["changes 1", "changes 1 include"]) {
      const old = new Set(before.map((r) => r.id));
      const kept = (a1[name] as string[][][]).flat().filter((c) => old.has(c[0]!));
      assert.deepEqual(kept, (a0[name] as string[][][]).flat(), name);
    }
    // The series the compaction added (all but the writer's) compare the next insert with their newest row.
    const series = await sql<{ n: string }>`select count(*)::text as n from snapshot_series se
    where se.last_id <> (select max(r.id) from snapshot_rows r where r.series_id = se.id)`.execute(k);
    assert.equal(series.rows[0]!.n, "0");
    const next = async (d: number, l: string, same: boolean) => {
      const last = before.filter((r) => r.device_id === dev(d) && r.endpoint_label === l).at(-1)!;
      const p = same
        ? String(last.payload_sha256)
        : "9".repeat(64) === last.payload_sha256
        ? "8".repeat(64)
        : "9".repeat(64);
      const r = await sql<{ c: boolean; s: boolean | null }>`insert into snapshots (device_id, endpoint_label,
        payload_sha256, stable_sha256, collected_at, adapter_module, adapter_version)
      values (${
        dev(d)
      }::uuid, ${l}, ${p}, ${p}, now(), 'x', '1') returning payload_changed as c, stable_changed as s`
        .execute(k);
      return [r.rows[0]!.c, r.rows[0]!.s];
    };
    assert.deepEqual(await next(2, "b", true), [false, false]);
    assert.deepEqual(await next(3, "b", false), [true, true]);
    // Nothing left to do: a new run says so at once.
    const again = await compactSnapshots(k);
    assert.deepEqual([again.end, again.moved, again.batches], ["done", 0, 0]);
  },
);

dbTest("a second runner finds the compaction lock taken and moves nothing", async (db) => {
  const { k } = await prepared(db);
  const holder = await db.reserve();
  try {
    await holder.query("begin");
    await holder.query(
      "select pg_advisory_xact_lock(20261125, hashtext(current_schema()))",
    );
    const r = await compactSnapshots(k, { batchSize: 10 });
    assert.equal(r.end, "busy");
    assert.equal(r.moved, 0);
    await holder.query("rollback");
  } finally {
    await holder.release();
  }
  assert.equal(await legacyCount(k), 240);
  assert.equal((await compactSnapshots(k, { batchSize: 100 })).end, "done");
}, { only: ["postgres"] });

dbTest("serve's background compaction moves everything, and stops between batches at close", async (db) => {
  const { k, before } = await prepared(db);
  const deferred: Array<() => Promise<void>> = [];
  const rt = (batch: number, mode: "on" | "off") =>
    ({
      config: { DUT_SNAPSHOT_COMPACTION: mode, DUT_SNAPSHOT_COMPACTION_BATCH: batch },
      db,
      defer: (f: () => Promise<void>) => deferred.push(f),
    }) as unknown as Runtime;
  await startCompaction(rt(10, "off"));
  assert.equal(deferred.length, 0);
  assert.equal(await legacyCount(k), 240);
  // Closed at once: at most the batch in flight moves.
  const stopped = startCompaction(rt(100, "on"));
  await deferred.pop()!();
  await stopped;
  assert.ok(await legacyCount(k) >= 140);
  await startCompaction(rt(50, "on"));
  assert.equal(await legacyCount(k), 0);
  assert.deepEqual(await rows(k), before);
});

const ROOT = new URL("../../..", import.meta.url).pathname;

dbTest("deno task compact: bad arguments, then every old row moved", async (db) => {
  const { k, before } = await prepared(db);
  const tasks = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks;
  const script = tasks.compact.replace(/^deno run -A /, "");
  const { url, schema } = db as Db & { url: string; schema: string };
  const u = new URL(url);
  u.searchParams.set("search_path", schema);
  const pg = { DATABASE_URL: u.toString() };
  const run = async (...args: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", script, ...args],
      cwd: ROOT,
      clearEnv: true,
      env: childEnv(pg),
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const dec = new TextDecoder();
    return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
  };
  const bad = await run("--batch-size", "5");
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /--batch-size: 100-100000/);
  const r = await run("--batch-size", "100");
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual([out.end, out.moved, out.batches, out.left], ["done", 240, 3, 0]);
  assert.equal(await legacyCount(k), 0);
  assert.deepEqual(await rows(k), before);
}, { only: ["postgres"] });
