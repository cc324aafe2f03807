// Reservations (issue 52): all-or-nothing grants under 200 concurrent attempts from two service instances,
// 1,000 abandoned holders leaving no lease past its end, the queue (first come, priority, timeout), runs
// holding their reservation. Both back ends.
import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest, insertDeviceRow } from "../../harness/db.ts";
import { openDatabase } from "../db/open.ts";
import type { Db } from "../db/open.ts";
import { ReservationService } from "./service.ts";

async function addDevices(db: Db, n: number, tag = "pool"): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = crypto.randomUUID();
    ids.push(id);
    await insertDeviceRow(db.kysely, id, {
      hostname: `dev-${String(i).padStart(3, "0")}-${id.slice(0, 4)}`,
      device_role: "ngfw",
      base_url: `https://dev${i}.lab.example`,
      tls_verify_mode: "strict",
      poll_interval_seconds: 300,
      tags: sql<string[]>`array[${tag}]::text[]` as unknown as string[],
    });
  }
  return ids.sort();
}

/** A deterministic pseudo-random sequence (mulberry32). */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6D2B79F5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A second instance over the same schema (PostgreSQL), or the same database (PGlite: one session). */
async function secondInstance(db: Db & { url?: string; schema?: string }): Promise<Db> {
  if (!db.url) return db;
  return await openDatabase({ url: db.url, schema: db.schema, poolSize: 5 });
}

dbTest("200 concurrent reservations over overlapping testbeds never grant a device twice", async (db) => {
  const ids = await addDevices(db, 12);
  const other = await secondInstance(db);
  try {
    const services = [new ReservationService(db.kysely), new ReservationService(other.kysely)];
    // Overlapping testbeds: each takes 3 of 12 devices, windows sliding by one.
    for (let i = 0; i < 12; i++) {
      await services[0]!.testbeds.put(
        `tb${i}`,
        { deviceIds: [0, 1, 2].map((k) => ids[(i + k) % 12]!) },
        null,
      );
    }
    const rand = rng(52);
    const plan = Array.from({ length: 200 }, (_, i) => ({
      svc: services[i % 2]!,
      testbed: `tb${Math.floor(rand() * 12)}`,
      hold: Math.floor(rand() * 5),
    }));
    // Each attempt tries up to 5 times; most release after a few milliseconds, one in ten keeps its devices.
    let refusals = 0;
    const outcomes = await Promise.all(plan.map(async (p, i) => {
      for (let attempt = 0; attempt < 5; attempt++) {
        try {
          const v = await p.svc.reserve({ holder: `holder-${i}`, testbed: p.testbed, leaseSeconds: 600 });
          assert.equal(v.state, "held");
          await new Promise((r) => setTimeout(r, p.hold));
          if (i % 10 !== 0) await p.svc.release(v.id, "test done");
          return "granted";
        } catch (e) {
          assert.match(
            String(e),
            /reserved by "holder-\d+" \(reservation [0-9a-f-]{36}, testbed tb\d+\) until/,
          );
          refusals++;
          await new Promise((r) => setTimeout(r, 2 + p.hold));
        }
      }
      return "refused";
    }));
    const granted = outcomes.filter((o) => o === "granted").length;
    // More grants than 4 disjoint testbeds: devices were granted again after a release; refusals: overlap.
    assert.ok(granted > 4, `only ${granted} granted`);
    assert.ok(refusals > 0, "no attempt was refused: the attempts did not overlap");
    // History: per device, the held intervals of its reservations never overlap.
    const rows = await db.kysely.selectFrom("reservations").select([
      "id",
      "device_ids",
      "granted_at",
      "ended_at",
      "state",
    ])
      .where("granted_at", "is not", null).execute();
    assert.equal(rows.length, granted);
    const far = new Date("2100-01-01").getTime();
    for (const d of ids) {
      const spans = rows.filter((r) => r.device_ids.includes(d))
        .map((r) => [new Date(r.granted_at!).getTime(), r.ended_at ? new Date(r.ended_at).getTime() : far])
        .sort((a, b) => a[0]! - b[0]!);
      for (let k = 1; k < spans.length; k++) {
        assert.ok(spans[k]![0]! >= spans[k - 1]![1]!, `device ${d} was granted twice at once`);
      }
    }
    // Each held reservation holds all its devices (none partially); each hold belongs to a held one.
    const held = rows.filter((r) => r.state === "held");
    const holds = await db.kysely.selectFrom("reservation_holds").selectAll().execute();
    assert.equal(holds.length, held.reduce((n, r) => n + r.device_ids.length, 0));
    for (const r of held) {
      for (const d of r.device_ids) {
        assert.ok(holds.some((h) => h.device_id === d && h.reservation_id === r.id));
      }
    }
  } finally {
    if (other !== db) await other.close();
  }
});

dbTest("1,000 holders killed (renewals stop) leave no reservation past its lease", async (db) => {
  const ids = await addDevices(db, 10);
  let clock = Date.parse("2026-11-29T00:00:00Z");
  const svc = new ReservationService(db.kysely, undefined, () => new Date(clock));
  const rand = rng(1000);
  const past = async () =>
    Number(
      (await sql<{ n: number }>`select count(*)::int as n from reservations
        where state = 'held' and expires_at <= ${new Date(clock)}`.execute(db.kysely)).rows[0]!.n,
    );
  let granted = 0;
  for (let i = 0; i < 1000; i++) {
    const want = ids.filter(() => rand() < 0.3);
    try {
      const v = await svc.reserve({
        holder: `job-${i}`,
        deviceIds: want.length ? want : [ids[i % 10]!],
        leaseSeconds: 30,
      });
      granted++;
      // The holder renews a few times, then dies: its renewals stop.
      for (let r = Math.floor(rand() * 3); r > 0; r--) {
        clock += 10_000;
        await svc.renew(v.id);
      }
    } catch (e) {
      assert.match(String(e), /reserved by/);
    }
    clock += Math.floor(rand() * 20_000);
    // Every reservation call sweeps first: after one, nothing is held past its lease.
    await svc.list();
    assert.equal(await past(), 0, `after holder ${i}`);
  }
  assert.ok(granted > 300, `only ${granted} of 1,000 granted`);
  clock += 31_000;
  await svc.sweep();
  assert.equal(await past(), 0);
  const left = await db.kysely.selectFrom("reservation_holds").selectAll().execute();
  assert.deepEqual(left, []);
  const expired = await db.kysely.selectFrom("reservations").select(["end_reason", "state"])
    .where("granted_at", "is not", null).execute();
  assert.equal(expired.length, granted);
  for (const r of expired) {
    assert.equal(r.state, "expired");
    assert.match(
      r.end_reason!,
      /^lease ended at 2026-11-\d\dT\d\d:\d\d:\d\dZ without renewal \(holder job-\d+\)$/,
    );
  }
});

dbTest(
  "a queued request is granted when the holder releases; priority first, then first come; timeout",
  async (db) => {
    const [a, b, c] = await addDevices(db, 3);
    let clock = Date.parse("2026-11-29T00:00:00Z");
    const svc = new ReservationService(db.kysely, undefined, () => new Date(clock));
    const first = await svc.reserve({ holder: "ci-1", deviceIds: [a!, b!], leaseSeconds: 600 });
    assert.equal(first.state, "held");
    await assert.rejects(
      svc.reserve({ holder: "ci-2", deviceIds: [b!, c!], leaseSeconds: 600 }),
      /Not reserved: dev-\d+-\w+ is reserved by "ci-1" \(reservation [0-9a-f-]+\) until 2026-11-29T00:10:00.000Z/,
    );
    // Nothing of the refused request was taken: c is free.
    assert.equal((await svc.holds([c!])).length, 0);
    clock += 1000;
    const low = await svc.reserve({ holder: "ci-low", deviceIds: [b!], leaseSeconds: 60, waitSeconds: 300 });
    clock += 1000;
    const high = await svc.reserve({
      holder: "ci-high",
      deviceIds: [a!],
      leaseSeconds: 60,
      waitSeconds: 300,
      priority: 5,
    });
    clock += 1000;
    const late = await svc.reserve({ holder: "ci-late", deviceIds: [b!], leaseSeconds: 60, waitSeconds: 10 });
    assert.deepEqual([low.state, high.state, late.state], ["queued", "queued", "queued"]);
    const cal = await svc.list();
    assert.deepEqual(cal.map((r) => r.holder), ["ci-1", "ci-high", "ci-low", "ci-late"]);
    // A fresh request does not jump the queue for b.
    await assert.rejects(svc.reserve({ holder: "ci-jump", deviceIds: [b!], leaseSeconds: 60 }));
    clock += 20_000; // ci-late's wait ends
    await svc.sweep();
    const lateNow = await svc.get(late.id);
    assert.equal(lateNow.state, "timed_out");
    assert.match(lateNow.endReason!, /^waited until .*: the devices stayed held$/);
    await svc.release(first.id, "released by ci-1");
    assert.equal((await svc.get(high.id)).state, "held");
    assert.equal((await svc.get(low.id)).state, "held");
    assert.equal((await svc.get(first.id)).endReason, "released by ci-1");
    // Renewal moves the lease; after release it is a 409.
    clock += 5000;
    const renewed = await svc.renew(high.id, 120);
    assert.equal(renewed.expiresAt, new Date(clock + 120_000).toISOString());
    await assert.rejects(svc.renew(first.id), /is released: released by ci-1/);
  },
);

dbTest("a reservation bound to an active run does not expire until the run ends", async (db) => {
  const [a] = await addDevices(db, 1);
  let clock = Date.parse("2026-11-29T00:00:00Z");
  const svc = new ReservationService(db.kysely, undefined, () => new Date(clock));
  const r = await svc.reserve({ holder: "run", deviceIds: [a!], leaseSeconds: 30 });
  const executionId = crypto.randomUUID();
  await sql`insert into test_runs (execution_id, plan_identifier, plan_display_name, plan_catalog_version,
    plan_json, plan_snapshot_sha256, license_id, status, started_at, start_state_json, preflight_json)
    values (${executionId}, 'p', 'P', 1, '{}'::jsonb, 'x', 'l', 'active', now(), '{"devices":[]}'::jsonb, '{}'::jsonb)`
    .execute(db.kysely);
  await svc.bindRun(r.id, executionId);
  clock += 3600_000;
  await svc.sweep();
  assert.equal((await svc.get(r.id)).state, "held");
  await svc.releaseRun(executionId);
  const ended = await svc.get(r.id);
  assert.equal(ended.state, "released");
  assert.equal(ended.endReason, `run ${executionId} finished`);
});
