/**
 * The lab read's snapshot statements answer `collected_at` as epoch milliseconds computed by PostgreSQL
 * (core/src/lab/read.ts `collectedMs`): the instant truncated to the millisecond, exactly, for times just below,
 * at and just above millisecond boundaries, on both statements (now and as of a moment) and both layouts.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest } from "@dutlab/core/testing";
import { latestAsOfSql, latestSql } from "../../core/harness/core.ts";
import { testServices } from "../../core/harness/app.ts";
import { modules } from "../../modules.gen.ts";

// Microseconds after 2026-11-26T12:34:56Z, and the milliseconds the read must answer (truncated, not rounded).
const TIMES: Array<[string, number]> = [
  ["2026-11-26 12:34:56.789999+00", Date.UTC(2026, 10, 26, 12, 34, 56, 789)],
  ["2026-11-26 12:34:56.999999+00", Date.UTC(2026, 10, 26, 12, 34, 56, 999)],
  ["2026-11-26 12:34:57+00", Date.UTC(2026, 10, 26, 12, 34, 57, 0)],
  ["2026-11-26 12:34:57.000001+00", Date.UTC(2026, 10, 26, 12, 34, 57, 0)],
  ["2026-11-26 12:34:57.0005+00", Date.UTC(2026, 10, 26, 12, 34, 57, 0)],
  ["2026-11-26 12:34:57.123+00", Date.UTC(2026, 10, 26, 12, 34, 57, 123)],
  ["1999-12-31 23:59:59.999999+00", Date.UTC(1999, 11, 31, 23, 59, 59, 999)],
  ["2099-06-30 00:00:00.000999+00", Date.UTC(2099, 5, 30, 0, 0, 0, 0)],
];

dbTest(
  "the lab read answers collected_at as the epoch milliseconds of the instant, truncated",
  async (db) => {
    const { svc } = await testServices(db, modules);
    const ids: string[] = [];
    for (let i = 0; i < TIMES.length; i++) {
      ids.push(
        await svc.devices.create({
          hostname: `ms-${i}`,
          vendor: "vendor-a-switch",
          baseUrl: "https://192.0.2.1",
          username: "u",
          password: "p",
          tlsVerifyMode: "strict",
          pollIntervalSeconds: 300,
          enabled: true,
        }),
      );
    }
    const sha = "0".repeat(64);
    await sql`insert into snapshot_payloads (sha256, payload, size_bytes) values (${sha}, '{}', 2)`.execute(
      db.kysely,
    );
    for (const [i, [at]] of TIMES.entries()) {
      await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, collected_at, adapter_module,
      adapter_version) values (${ids[i]}, 'ntp_config', ${sha}, ${at}::timestamptz, 'bench', '0')`.execute(
        db.kysely,
      );
    }
    // (The poller's store keeps snapshot_latest; this test writes it as the store would.)
    await sql`insert into snapshot_latest (device_id, endpoint_label, snapshot_id)
    select device_id, endpoint_label, max(id) from snapshots group by device_id, endpoint_label`.execute(
      db.kysely,
    );
    const want = Object.fromEntries(ids.map((id, i) => [id, TIMES[i]![1]]));
    const asOf = new Date(Date.UTC(2100, 0, 1));
    for (const legacyLeft of [true, false]) {
      for (
        const q of [
          latestSql(["ntp_config"], [ids.join(",")], legacyLeft),
          latestAsOfSql(["ntp_config"], [ids.join(",")], asOf, legacyLeft),
        ]
      ) {
        const { rows } = await q.execute(db.kysely);
        assert.equal(rows.length, TIMES.length);
        assert.deepEqual(Object.fromEntries(rows.map((r) => [r.device_id, Number(r.collected_ms)])), want);
      }
    }
  },
);
