/**
 * Scenario 8, compare (issue 22 point 6): a comparison of 20 finished runs (target ≤ 200 ms). Twenty runs of
 * one plan are stored as the service freezes them (the current report fixture with a 1,000-snapshot annex,
 * about the size of a run on a 143-device lab, and a different p99 each), then timed:
 * `compareRuns` (load the 20 frozen reports without their annexes, parse, compare, hash) on the first read
 * of the reports and once they are in the in-memory cache of frozen reports, `POST /api/test-runs/compare`
 * through the whole HTTP stack (auth, validation, ETag) and `GET /runs/compare` (plus the print page).
 *
 * @module
 */
import { sql } from "kysely";
import { type Figure, pct, round, TOKEN } from "../_util.ts";
import type { Ctx } from "../main.ts";
import { benchServices, freshDb } from "../_db.ts";
import { createApp } from "../../core/harness/core.ts";
import { clearReportCache, compareRuns } from "../../core/harness/core.ts";
import { currentReportFixture } from "../../core/harness/report_fixture_current.ts";
import { canonicalJson, jcsSha256, sha256Hex } from "../../core/harness/core.ts";
import type { ReportData } from "../../core/harness/core.ts";
import { fixtureModules } from "@dutlab/core/testing";

const RUNS = 20;
const SNAPSHOTS_PER_RUN = 1000;
const jsonb = (v: unknown) => sql<string>`cast(${canonicalJson(v)}::text as jsonb)`;

async function report(n: number): Promise<ReportData> {
  const r = structuredClone(await currentReportFixture({ clean: true }));
  r.meta.executionId = crypto.randomUUID();
  r.meta.runId = String(1000 + n);
  r.meta.startedAt = new Date(Date.parse(r.meta.startedAt) + n * 3_600_000).toISOString();
  r.meta.endedAt = new Date(Date.parse(r.meta.endedAt) + n * 3_600_000).toISOString();
  r.results.aggregate.p99_ms = round(r.results.aggregate.p99_ms * (1 + (n % 7) * 0.04), 3);
  const snaps = Array.from({ length: SNAPSHOTS_PER_RUN }, (_, i) => ({
    snapshotId: crypto.randomUUID(),
    deviceId: `dev-${i % 143}`,
    endpointLabel:
      ["system_info", "ntp_config", "decrypt_policy", "ha_state", "interfaces", "sensors", "power"][i % 7],
    payloadSha256: "ab".repeat(32),
    collectedAt: new Date(Date.parse(r.meta.startedAt) + i * 1000).toISOString(),
  }));
  const body = JSON.stringify(snaps, null, 2);
  r.annexes.push({
    id: "snapshots",
    title: "Snapshots collected during the run",
    sha256: await sha256Hex(body),
    mediaType: "application/json",
    body,
  });
  const { reportSha256: _, ...rest } = r;
  r.reportSha256 = await jcsSha256(rest);
  return r;
}

export async function run(ctx: Ctx): Promise<Figure[]> {
  const figures: Figure[] = [];
  const reps = ctx.quick ? 20 : 100;
  const backends = ["pglite", "postgres"] as const;
  const reports: ReportData[] = [];
  for (let n = 0; n < RUNS; n++) reports.push(await report(n));
  const bytes = reports.reduce((a, r) => a + JSON.stringify(r, null, 2).length, 0);
  ctx.log(`${RUNS} reports, ${round(bytes / RUNS / 1024)} KiB each`);
  for (const backend of backends) {
    await using db = await freshDb(backend, { memory: true });
    const { svc } = await benchServices(db, fixtureModules());
    const app = createApp(svc);
    for (const r of reports) {
      await db.kysely.insertInto("test_runs").values({
        execution_id: r.meta.executionId,
        plan_identifier: r.meta.planIdentifier,
        plan_display_name: r.meta.planDisplayName,
        plan_catalog_version: r.meta.planCatalogVersion,
        plan_json: jsonb(r.plan),
        plan_snapshot_sha256: r.meta.planSnapshotSha256,
        license_id: r.license.id,
        notes: null,
        status: "finished",
        started_at: new Date(r.meta.startedAt),
        ended_at: new Date(r.meta.endedAt),
        outcome: r.meta.outcome,
        start_state_json: jsonb({ devices: r.topology.devices, decrypt: {} }),
        preflight_json: jsonb({}),
        results_json: jsonb({}),
        report_json: JSON.stringify(r, null, 2) + "\n",
        report_sha256: r.reportSha256,
        lab_name: null,
        customer: null,
      }).execute();
    }
    const ids = reports.map((r) => r.meta.executionId);
    const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
    const time = async (f: () => Promise<unknown>) => {
      await f(); // warm-up
      const ms: number[] = [];
      for (let i = 0; i < reps; i++) {
        const t = performance.now();
        await f();
        ms.push(performance.now() - t);
      }
      return ms;
    };
    const cold = await time(async () => {
      clearReportCache();
      const c = await compareRuns(db.kysely, ids);
      if (c.runs.length !== RUNS) throw new Error("bench comparison lost runs");
    });
    const direct = await time(async () => {
      const c = await compareRuns(db.kysely, ids);
      if (c.runs.length !== RUNS) throw new Error("bench comparison lost runs");
    });
    const post = await time(async () => {
      const res = await app.request("/api/test-runs/compare", {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ executionIds: ids }),
      });
      if (res.status !== 200) throw new Error(`compare answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
    });
    const page = await time(async () => {
      const res = await app.request(`/runs/compare?ids=${ids.join(",")}`, { headers: auth });
      if (res.status !== 200) throw new Error(`compare page answered ${res.status}`);
      await res.arrayBuffer();
    });
    const params = { runs: RUNS, snapshotsPerRun: SNAPSHOTS_PER_RUN, backend, reps };
    const timed = [
      ["compareRuns, first read of the reports", cold],
      ["compareRuns, reports read before", direct],
      ["POST /api/test-runs/compare, reports read before", post],
    ] as const;
    for (const [name, ms] of timed) {
      const p95 = round(pct(ms, 95));
      ctx.log(`${backend} ${name}: p50 ${round(pct(ms, 50))} ms, p95 ${p95} ms`);
      figures.push({
        scenario: "compare",
        name: `${name}, 20 runs (p95)`,
        value: p95,
        unit: "ms",
        params: { ...params, p50: round(pct(ms, 50)) },
        target: "≤ 200 ms",
        pass: p95 <= 200,
        command: ctx.command,
      });
    }
    ctx.log(`${backend} GET /runs/compare: p50 ${round(pct(page, 50))} ms, p95 ${round(pct(page, 95))} ms`);
    figures.push({
      scenario: "compare",
      name: "GET /runs/compare (print page), 20 runs (p95)",
      value: round(pct(page, 95)),
      unit: "ms",
      params: { ...params, p50: round(pct(page, 50)) },
      command: ctx.command,
    });
  }
  return figures;
}
