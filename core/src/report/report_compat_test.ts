/**
 * Reports frozen before issue 19 (no verdict, figures, inventory, lab or customer) still verify, render and
 * are served. `core/src/report/testdata/report-before-issue-19.json` was produced by the service as of
 * commit 366929e (a fixture-plan run finished with a k6 summary export) and is never regenerated.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest } from "../../harness/db.ts";
import { testServices } from "../../harness/app.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";
import { verifyReportBytes } from "./verify.ts";
import { renderReportPage } from "./render/page.tsx";
import type { ReportData } from "./types.ts";

const FILE = new URL("./testdata/report-before-issue-19.json", import.meta.url);

Deno.test("a report frozen before the verdict still verifies and renders, saying what it lacks", async () => {
  const bytes = await Deno.readFile(FILE);
  const outcome = await verifyReportBytes(bytes);
  assert.equal(outcome.ok, true, JSON.stringify(outcome.findings.filter((f) => !f.ok)));
  const report = JSON.parse(new TextDecoder().decode(bytes)) as ReportData;
  assert.equal(report.version, 1);
  assert.equal(report.verdict, undefined);
  // Text without Preact's empty comments between adjacent text parts.
  const html = renderReportPage(report).replaceAll("<!-- -->", "");
  assert.ok(html.includes("This report was frozen before reports carried an overall verdict"));
  assert.ok(html.includes('data-slo="pass"') && html.includes("Outcome: passed"), "its badges as before");
  assert.ok(html.includes("frozen before the whole result was recorded"));
  assert.ok(html.includes("not recorded (report frozen before device inventories)"));
  assert.ok(html.includes("percentiles computed by the load generator (k6)"), "k6 computed them");
  for (const a of report.annexes) assert.ok(html.includes(`data-body-of="${a.id}"`), a.id);
  assert.ok(html.includes('data-annex-table="preflight"') && html.includes('data-annex-table="snapshots"'));
});

dbTest("a finished run stored with an old report is served as frozen, its view read from it", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const text = await Deno.readTextFile(FILE);
  const r = JSON.parse(text) as ReportData;
  const annex = (id: string) => r.annexes.find((a) => a.id === id)!.body;
  const json = (v: string) => sql`cast(${v}::text as jsonb)`;
  await sql`insert into test_runs (execution_id, plan_identifier, plan_display_name, plan_catalog_version,
      plan_json, plan_snapshot_sha256, license_id, notes, status, started_at, ended_at, outcome,
      start_state_json, preflight_json, results_json, report_json, report_sha256)
    values (${r.meta.executionId}, ${r.meta.planIdentifier}, ${r.meta.planDisplayName}, ${r.meta.planCatalogVersion},
      ${
    json(JSON.stringify(r.plan))
  }, ${r.meta.planSnapshotSha256}, ${r.license.id}, ${r.meta.notes}, 'finished',
      ${r.meta.startedAt}, ${r.meta.endedAt}, ${r.meta.outcome}, ${json(annex("lab-at-start"))},
      ${json(annex("preflight-at-start"))}, ${json("{}")}, ${text}, ${r.reportSha256})`.execute(db.kysely);

  const view = await (await app.request(`/api/test-runs/${r.meta.executionId}`, { headers: auth })).json();
  assert.equal(view.verdict, null);
  assert.equal(view.customer, null);
  assert.equal(view.reportSha256, r.reportSha256);
  assert.equal(view.outcome, "passed");
  const served = await app.request(`/api/test-runs/${r.meta.executionId}/report.json`, { headers: auth });
  assert.equal(await served.text(), text, "the same bytes");
  const page = await app.request(`/runs/${r.meta.executionId}/report`, { headers: auth });
  assert.equal(page.status, 200);
  assert.ok((await page.text()).includes(r.reportSha256));
});
