import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import type { Db } from "../db/open.ts";
import { fixtureModules, startFixtureDevice } from "../../testing/fixture_modules.ts";
import { hashSnapshot } from "../poller/store.ts";
import { sha256Hex } from "@dutlab/core";
import { verifyReportBytes } from "./verify.ts";
import { citedSnapshots, pruneSnapshots } from "../snapshots/prune.ts";
import {
  type App,
  type Auth,
  fetchReport,
  finishRun,
  register,
  snapshot,
  startRun,
} from "../../harness/runs_lab.ts";

const LABELS = ["system_info", "ntp_config", "decrypt_policy"] as const;
const HOUR = 3_600_000;

/**
 * History of one device, written as the poll store writes it (payload rows, then snapshot rows in collection
 * order, the insert trigger setting `payload_changed` and `stable_changed`), `rows` polls every `stepMin`
 * minutes from `from`: `system_info` carries an uptime that moves on every poll (volatile) and a real change
 * at poll 150; `ntp_config` changes at poll 100; `decrypt_policy` has no stable hash (a writer that did not
 * compute it) and changes at poll 120 and 121.
 */
async function seedHistory(db: Db, deviceId: string, from: Date, rows: number, stepMin: number) {
  for (let k0 = 0; k0 < rows; k0 += 100) {
    const snaps: Array<{ label: string; sha: string; stable: string | null; at: Date }> = [];
    for (let k = k0; k < Math.min(rows, k0 + 100); k++) {
      const at = new Date(from.getTime() + k * stepMin * 60_000);
      for (const label of LABELS) {
        const config = label === "system_info"
          ? (k < 150 ? "a" : "b")
          : label === "ntp_config"
          ? (k < 100 ? "pool.ntp.org" : "time.example")
          : (k === 120 ? "off" : "on");
        const payload = label === "system_info" ? { config, uptime: k } : { config };
        const h = await hashSnapshot(label, payload);
        await db.kysely.insertInto("snapshot_payloads")
          .values({ sha256: h.sha256, payload: h.text, size_bytes: h.size })
          .onConflict((oc) => oc.column("sha256").doNothing()).execute();
        const stable = label === "decrypt_policy" ? null : await sha256Hex(`${label}:${config}`);
        snaps.push({ label, sha: h.sha256, stable, at });
      }
    }
    await db.kysely.insertInto("snapshots").values(snaps.map((s) => ({
      device_id: deviceId,
      endpoint_label: s.label,
      payload_sha256: s.sha,
      stable_sha256: s.stable,
      collected_at: s.at,
      adapter_module: "seed",
      adapter_version: "0.0.0",
    }))).execute();
  }
}

/** Move every snapshot `days` into the past (the fixture's stand-in for time passing; guards lifted for it). */
async function age(db: Db, days: number) {
  await db.kysely.transaction().execute(async (tx) => {
    for (const t of ["snapshot_rows", "snapshots_legacy"]) {
      await sql`alter table ${sql.table(t)} disable trigger user`.execute(tx);
      await sql`update ${sql.table(t)} set collected_at = collected_at - make_interval(days => ${days}::int)`
        .execute(tx);
      await sql`alter table ${sql.table(t)} enable trigger user`.execute(tx);
    }
  });
}

interface SnapRow {
  id: string;
  device_id: string;
  endpoint_label: string;
  payload_sha256: string;
  collected_at: Date;
  payload_changed: boolean;
  stable_changed: boolean | null;
  test_run_execution_id: string | null;
}

async function allSnapshots(db: Db): Promise<SnapRow[]> {
  const r = await sql<SnapRow>`select id::text as id, device_id, endpoint_label, payload_sha256, collected_at,
    payload_changed, stable_changed, test_run_execution_id from snapshots order by snapshots.id`.execute(
    db.kysely,
  );
  return r.rows.map((x) => ({ ...x, collected_at: new Date(x.collected_at) }));
}

/** The policy, written independently of the SQL: which snapshots a prune must delete. */
function expectedDeletions(
  rows: SnapRow[],
  cutoff: Date,
  unit: "hour" | "day",
  cited: Set<string>,
): Set<string> {
  const groups = new Map<string, SnapRow[]>();
  for (const r of rows) {
    const k = `${r.device_id}/${r.endpoint_label}`;
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  const bucket = (d: Date) =>
    unit === "hour" ? Math.floor(d.getTime() / HOUR) : Math.floor(d.getTime() / 86_400_000);
  const real = (r: SnapRow | undefined) => !!r && r.payload_changed && r.stable_changed !== false;
  const out = new Set<string>();
  for (const g of groups.values()) {
    g.forEach((s, i) => {
      const prev = g[i - 1];
      const next = g[i + 1];
      const keep = s.collected_at >= cutoff || s.test_run_execution_id !== null || cited.has(s.id) ||
        real(s) ||
        real(next) || next === undefined || prev === undefined ||
        bucket(prev.collected_at) !== bucket(s.collected_at);
      if (!keep) out.add(s.id);
    });
  }
  return out;
}

/** Every page of a device's change history (the real changes, the default). */
async function changes(app: App, auth: Auth, device: string): Promise<unknown[]> {
  const out: unknown[] = [];
  let cursor: string | null = null;
  do {
    const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
    const res = await app.request(`/api/admin/dut/devices/${device}/changes?limit=100${q}`, {
      headers: auth,
    });
    assert.equal(res.status, 200);
    const page = await res.json();
    out.push(...page.changes);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

/** Snapshot ids a text cites, read with a pattern (JSON text, or JSON text inside a JSON string). */
const citedIn = (text: string) => [...text.matchAll(/[sS]napshotId\\*"\s*:\s*\\*"(\d+)/g)].map((m) => m[1]!);

async function lab(app: App, auth: Auth, db: Db) {
  const dev = await startFixtureDevice();
  const creds = { username: "admin", password: dev.state.password };
  const a = await register(app, auth, "fixture-fw", "fw-prune-a", { sim: dev.sim, credentials: creds });
  const b = await register(app, auth, "fixture-fw", "fw-prune-b", { sim: dev.sim, credentials: creds });
  const from = new Date(Date.now() - 60 * 86_400_000);
  await seedHistory(db, a, from, 240, 7);
  await seedHistory(db, b, from, 200, 25);
  const runs: string[] = [];
  try {
    for (let i = 0; i < 2; i++) {
      await snapshot(app, auth, a);
      await snapshot(app, auth, b);
      const run = await startRun(app, auth, { planIdentifier: "fixture-plan" });
      await snapshot(app, auth, a);
      await finishRun(app, auth, run.executionId, {
        outcome: "passed",
        results: { latencySamplesMs: [4, 8, 15] },
      });
      runs.push(run.executionId);
    }
    await age(db, 40);
    await snapshot(app, auth, a); // younger than any cut-off below
  } finally {
    await dev.sim.close();
  }
  return { devices: [a, b], runs };
}

const prune = async (app: App, auth: Auth, body: unknown) => {
  const res = await app.request("/api/admin/dut/snapshots/prune", jsonReq("POST", body, auth));
  return { status: res.status, body: await res.json() };
};

dbTest(
  "a prune deletes exactly what its dry run counted, keeps every cited snapshot, real change, newest and one per hour, and every report still verifies",
  async (db) => {
    const { app, auth } = await testServices(db, fixtureModules());
    const { devices, runs } = await lab(app, auth, db);
    const reports = new Map<string, string>();
    const cited = new Set<string>();
    for (const id of runs) {
      const r = await fetchReport(app, auth, id);
      assert.equal(r.status, 200);
      reports.set(id, r.text);
      for (const s of citedIn(r.text)) cited.add(s);
    }
    const runRows = await db.kysely.selectFrom("test_runs").select(sql<string>`preflight_json::text`.as("p"))
      .execute();
    for (const r of runRows) for (const s of citedIn(r.p)) cited.add(s);
    assert.ok(cited.size > 0);
    const changesBefore = new Map<string, unknown>();
    for (const d of devices) {
      changesBefore.set(d, await changes(app, auth, d));
    }
    const before = await allSnapshots(db);

    const dry = await prune(app, auth, { olderThanDays: 30, keepOnePer: "hour", dryRun: true });
    assert.equal(dry.status, 200, JSON.stringify(dry.body));
    assert.equal(dry.body.pruneId, null);
    assert.equal((await allSnapshots(db)).length, before.length, "a dry run changes nothing");
    const expected = expectedDeletions(before, new Date(dry.body.cutoff), "hour", cited);
    assert.ok(expected.size > 100, `only ${expected.size} to delete: the fixture exercises nothing`);
    assert.equal(dry.body.snapshots, expected.size);

    const real = await prune(app, auth, { olderThanDays: 30 });
    assert.equal(real.status, 200, JSON.stringify(real.body));
    assert.equal(real.body.cutoff, dry.body.cutoff);
    for (const k of ["snapshots", "snapshotBytes", "payloads", "payloadBytes", "bytes", "counts"]) {
      assert.deepEqual(real.body[k], dry.body[k], k);
    }
    assert.ok(real.body.payloads > 0, "volatile-only payloads were freed");
    const after = await allSnapshots(db);
    const gone = new Set(before.map((r) => r.id).filter((id) => !after.some((a) => a.id === id)));
    assert.deepEqual([...gone].sort(), [...expected].sort());
    for (const id of cited) assert.ok(after.some((a) => a.id === id), `cited snapshot ${id} kept`);
    // One per device, label and hour; the newest of each device and label.
    const buckets = (rows: SnapRow[]) =>
      new Set(
        rows.map((r) => `${r.device_id}/${r.endpoint_label}/${Math.floor(r.collected_at.getTime() / HOUR)}`),
      );
    assert.deepEqual(buckets(after), buckets(before));
    const latest = await db.kysely.selectFrom("snapshot_latest").select(
      sql<string>`snapshot_id::text`.as("id"),
    )
      .execute();
    for (const l of latest) assert.ok(after.some((a) => a.id === l.id));
    // Every payload still referenced re-hashes; no payload is left that nothing refers to.
    const payloads = await db.kysely.selectFrom("snapshot_payloads").select(["sha256", "payload"]).execute();
    for (const p of payloads) assert.equal(await sha256Hex(p.payload), p.sha256);
    const orphans = await sql<{ n: number }>`select count(*)::int as n from snapshot_payloads p
    where not exists (select 1 from snapshots s where s.payload_sha256 = p.sha256)`.execute(db.kysely);
    assert.equal(orphans.rows[0]!.n, 0);
    // Every real change is still listed, with the same diff.
    for (const d of devices) {
      const list = await changes(app, auth, d);
      assert.ok(list.length > 0);
      assert.deepEqual(list, changesBefore.get(d));
    }
    // Every report: the same bytes, and they verify.
    for (const [id, text] of reports) {
      const r = await fetchReport(app, auth, id);
      assert.equal(r.text, text);
      const v = await verifyReportBytes(new TextEncoder().encode(r.text));
      assert.equal(v.ok, true, JSON.stringify(v.findings));
    }
    // The audit record.
    const audit = await db.kysely.selectFrom("snapshot_prunes").selectAll().execute();
    assert.equal(audit.length, 1);
    assert.equal(audit[0]!.actor, "token:bootstrap-admin");
    assert.equal(audit[0]!.status, "finished");
    assert.equal(Number(audit[0]!.deleted_snapshots), expected.size);
    assert.deepEqual(typeof audit[0]!.policy === "string" ? JSON.parse(audit[0]!.policy) : audit[0]!.policy, {
      olderThanDays: 30,
      keepOnePer: "hour",
    });
    // The record through the API.
    const listed = await app.request("/api/admin/dut/snapshot-prunes", { headers: auth });
    assert.equal(listed.status, 200);
    const [record] = (await listed.json()).prunes;
    assert.equal(record.actor, "token:bootstrap-admin");
    assert.equal(record.status, "finished");
    assert.equal(record.snapshots, real.body.snapshots);
    assert.deepEqual(record.counts, real.body.counts);
    // A second prune finds nothing more.
    const again = await prune(app, auth, { olderThanDays: 30, dryRun: true });
    assert.equal(again.body.snapshots, 0);
    // Outside a prune, a snapshot still cannot be deleted, nor a prune record changed.
    await assert.rejects(
      sql`delete from snapshots where id = ${after[0]!.id}::bigint`.execute(db.kysely),
      /append-only/,
    );
    await assert.rejects(
      sql`delete from snapshot_rows where id = ${after[0]!.id}::bigint`.execute(db.kysely),
      /append-only/,
    );
    // Checked once per statement (migration 0020): a delete that matches nothing is refused too.
    await assert.rejects(sql`delete from snapshot_rows where id = -1`.execute(db.kysely), /append-only/);
    await assert.rejects(sql`delete from snapshot_series`.execute(db.kysely), /append-only/);
    await assert.rejects(sql`delete from snapshot_prunes`.execute(db.kysely), /audit trail/);
    await assert.rejects(sql`update snapshot_prunes set actor = 'x'`.execute(db.kysely), /audit trail/);
  },
);

dbTest("a day policy keeps one snapshot per device, label and UTC day", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  await lab(app, auth, db);
  const before = await allSnapshots(db);
  const real = await prune(app, auth, { olderThanDays: 30, keepOnePer: "day" });
  assert.equal(real.status, 200, JSON.stringify(real.body));
  const after = await allSnapshots(db);
  const days = (rows: SnapRow[]) =>
    new Set(
      rows.map((r) => `${r.device_id}/${r.endpoint_label}/${r.collected_at.toISOString().slice(0, 10)}`),
    );
  assert.deepEqual(days(after), days(before));
  assert.equal(before.length - after.length, real.body.snapshots);
  assert.ok(real.body.snapshots > 0);
});

dbTest("an interrupted prune is resumed by the next one, and the totals equal its dry run", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  await lab(app, auth, db);
  const policy = { olderThanDays: 30, keepOnePer: "hour" as const };
  const dry = await pruneSnapshots(db.kysely, { ...policy, dryRun: true, actor: "test", batchSize: 300 });
  const first = await pruneSnapshots(db.kysely, {
    ...policy,
    dryRun: false,
    actor: "killed",
    batchSize: 300,
    stopAfterBatches: 2,
  });
  assert.equal(first.batches, 2);
  assert.ok(first.snapshots > 0 && first.snapshots < dry.snapshots);
  const row = await db.kysely.selectFrom("snapshot_prunes").selectAll().executeTakeFirstOrThrow();
  assert.equal(row.status, "running");
  // A live prune is not taken over.
  const busy = await prune(app, auth, { olderThanDays: 7 });
  assert.equal(busy.status, 409, JSON.stringify(busy.body));
  const rest = await pruneSnapshots(db.kysely, {
    olderThanDays: 7,
    keepOnePer: "day",
    dryRun: false,
    actor: "second",
    batchSize: 300,
    staleAfterMs: 0,
  });
  assert.equal(rest.resumed, true);
  assert.equal(rest.actor, "killed");
  assert.deepEqual(rest.policy, policy);
  assert.equal(rest.snapshots, dry.snapshots);
  assert.deepEqual(rest.counts, dry.counts);
  assert.equal(rest.payloads, dry.payloads);
  assert.equal(rest.payloadBytes, dry.payloadBytes);
});

dbTest("batches of any size decide the same: a row's neighbours across a batch's edges count", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  await lab(app, auth, db);
  const policy = { olderThanDays: 30, keepOnePer: "hour" as const };
  const whole = await pruneSnapshots(db.kysely, {
    ...policy,
    dryRun: true,
    actor: "test",
    batchSize: 100_000,
  });
  assert.equal(whole.batches, 1);
  assert.ok(whole.snapshots > 0);
  // One id a batch: every neighbour is outside the batch, found at its edges.
  for (const batchSize of [1, 4]) {
    const dry = await pruneSnapshots(db.kysely, { ...policy, dryRun: true, actor: "test", batchSize });
    assert.ok(dry.batches > 100);
    assert.equal(dry.snapshots, whole.snapshots, `batches of ${batchSize}`);
    assert.deepEqual(dry.counts, whole.counts, `batches of ${batchSize}`);
  }
  const before = await allSnapshots(db);
  const real = await pruneSnapshots(db.kysely, { ...policy, dryRun: false, actor: "test", batchSize: 4 });
  assert.deepEqual(real.counts, whole.counts);
  assert.equal((await allSnapshots(db)).length, before.length - whole.snapshots);
});

dbTest("only an admin may prune, and the policy is validated field by field", async (db) => {
  const { app, auth, svc } = await testServices(db, fixtureModules());
  for (const role of ["viewer", "operator"] as const) {
    const t = await svc.tokens.create(`prune-${role}`, role);
    const res = await app.request(
      "/api/admin/dut/snapshots/prune",
      jsonReq("POST", { olderThanDays: 30, dryRun: true }, { authorization: `Bearer ${t.token}` }),
    );
    assert.equal(res.status, 403);
    await res.body?.cancel();
  }
  for (
    const [body, field] of [
      [{ olderThanDays: 0 }, "olderThanDays"],
      [{ olderThanDays: 1.5 }, "olderThanDays"],
      [{ olderThanDays: 30, keepOnePer: "week" }, "keepOnePer"],
      [{ olderThanDays: 30, dryRun: "yes" }, "dryRun"],
      [{ olderThanDays: 30, extra: 1 }, "extra"],
      [{}, "olderThanDays"],
    ] as const
  ) {
    const res = await prune(app, auth, body);
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.ok(JSON.stringify(res.body.errors).includes(field), JSON.stringify(res.body));
  }
});

dbTest(
  "an active run's drift start (each device's last snapshot per label at its start) is cited",
  async (db) => {
    const { app, auth } = await testServices(db, fixtureModules());
    await lab(app, auth, db);
    const run = await startRun(app, auth, { planIdentifier: "fixture-plan" });
    const { started_at } = await db.kysely.selectFrom("test_runs").select("started_at")
      .where("execution_id", "=", run.executionId).executeTakeFirstOrThrow();
    const expected = new Map<string, string>();
    for (const r of await allSnapshots(db)) {
      if (r.collected_at <= new Date(started_at)) expected.set(`${r.device_id}/${r.endpoint_label}`, r.id);
    }
    // Its pre-flight and start state cite most of them too: blank those (an active run may still change) so only
    // the drift rule is left to cite them.
    await sql`update test_runs set preflight_json = '{}'::jsonb, start_state_json = '{}'::jsonb
    where status = 'active'`.execute(db.kysely);
    const cited = await citedSnapshots(db.kysely);
    for (const id of expected.values()) assert.ok(cited.ids.has(id), `drift start ${id} cited`);
  },
);
