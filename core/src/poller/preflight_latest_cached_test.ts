/**
 * `snapshot_latest` keeps the latest snapshot's payload hash and collection time (migration 0021), written by
 * the poll store with the pointer, so the pre-flight's lab read (core/src/lab/read.ts `latestSql`) answers its
 * pairs from that table alone; rows without them (written before 0021, or a pointer moved by hand, which
 * clears them) are answered from the snapshot rows, with the same result.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import type { Db } from "../db/open.ts";
import { dbTest } from "../../harness/db.ts";
import { hashSnapshot, type Outcome, PollStore } from "./store.ts";
import { latestSql } from "../lab/read.ts";
import { addDevice, setup } from "../../harness/poller_lab.ts";

const MODULE = { name: "@dutlab/adapter-fixture", version: "0.0.1" };
const LABELS = ["deploy_status", "ntp_config"];

async function outcome(n: number, round: number): Promise<Outcome> {
  return {
    status: "ok",
    error: "collected 2 snapshot(s)",
    snapshots: [
      await hashSnapshot("deploy_status", { device: n, round: n % 2 ? round : 0 }), // odd devices change
      await hashSnapshot("ntp_config", { servers: ["10.0.0.1"] }), // the same payload everywhere
    ],
  };
}

/** The lab read's statement (now) for every device and both labels, sorted, in both of its forms. */
async function answers(db: Db, ids: string[]) {
  const out: Record<string, string>[][] = [];
  for (const legacyLeft of [true, false]) {
    const q = latestSql(LABELS, LABELS.map(() => ids.join(",")), legacyLeft);
    const rows = (await q.execute(db.kysely)).rows.map((r) => ({ ...r }));
    rows.sort((a, b) =>
      `${a.device_id}${a.endpoint_label}`.localeCompare(`${b.device_id}${b.endpoint_label}`)
    );
    out.push(rows);
  }
  return out;
}

/** Whether running the statement read `snapshot_rows` at all (a plan node on it that ran). */
async function readsRows(db: Db, ids: string[]) {
  const q = latestSql(LABELS, LABELS.map(() => ids.join(",")), false);
  const plan = (await sql<Record<string, string>>`explain (analyze, costs off, timing off, summary off) ${q}`
    .execute(db.kysely)).rows.map((r) => Object.values(r)[0]!);
  const onRows = plan.filter((l) => /\bon snapshot_rows\b/.test(l));
  assert.ok(onRows.length > 0, `the fallback look-up is in the plan:\n${plan.join("\n")}`);
  return onRows.some((l) => !l.includes("never executed"));
}

dbTest(
  "the lab read answers from snapshot_latest's hash and time, and from the rows where they are missing",
  async (db) => {
    const { svc } = await setup(db);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await addDevice(svc, `https://192.0.2.${i + 1}`));
    const rows = await Promise.all(ids.map((id) => svc.devices.get(id)));
    const store = new PollStore(db.kysely, {});
    for (const round of [1, 2]) {
      await Promise.all(rows.map(async (r, i) => store.write(r, MODULE, await outcome(i, round))));
    }
    // The poll store wrote each pair's hash and time with its pointer: those of the snapshot it names.
    const kept = await sql<{ a: string; b: string; at: Date; row_at: Date }>`
    select l.payload_sha256 as a, s.payload_sha256 as b, l.collected_at as at, s.collected_at as row_at
    from snapshot_latest l join snapshots s on s.id = l.snapshot_id`.execute(db.kysely);
    assert.equal(kept.rows.length, ids.length * LABELS.length);
    for (const k of kept.rows) {
      assert.equal(k.a, k.b);
      assert.equal(new Date(k.at).getTime(), new Date(k.row_at).getTime());
    }
    const filled = await answers(db, ids);
    assert.equal(filled[0]!.length, ids.length * LABELS.length);
    assert.deepEqual(filled[0], filled[1]);
    assert.equal(
      await readsRows(db, ids),
      false,
      "a filled snapshot_latest answers without the snapshot rows",
    );

    // Rows written before migration 0021: the same answers, from the snapshot rows.
    await sql`update snapshot_latest set payload_sha256 = null, collected_at = null`.execute(db.kysely);
    assert.deepEqual(await answers(db, ids), filled);
    assert.equal(await readsRows(db, ids), true);

    // A pointer moved without a new time (by hand, or a writer that does not know the columns) loses them, so
    // they never describe another snapshot than the one named: the read answers the snapshot now named.
    await Promise.all(rows.map(async (r, i) => store.write(r, MODULE, await outcome(i, 3))));
    const [older] = (await sql<{ id: string; sha: string; at: Date }>`
    select s.id::text as id, s.payload_sha256 as sha, s.collected_at as at from snapshots s
    where s.device_id = ${ids[1]} and s.endpoint_label = 'deploy_status' order by s.id limit 1`.execute(
      db.kysely,
    )).rows;
    await sql`update snapshot_latest set snapshot_id = ${older!.id}
    where device_id = ${ids[1]} and endpoint_label = 'deploy_status'`.execute(db.kysely);
    const moved = await sql<{ sha: string | null; at: Date | null }>`
    select payload_sha256 as sha, collected_at as at from snapshot_latest
    where device_id = ${ids[1]} and endpoint_label = 'deploy_status'`.execute(db.kysely);
    assert.deepEqual(moved.rows[0], { sha: null, at: null });
    for (const form of await answers(db, ids)) {
      const r = form.find((x) => x.device_id === ids[1] && x.endpoint_label === "deploy_status")!;
      assert.equal(r.snapshot_id, older!.id);
      assert.equal(r.sha256, older!.sha);
      assert.equal(Number(r.collected_ms), new Date(older!.at).getTime());
    }
  },
);
