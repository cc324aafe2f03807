/**
 * Issue 49, "done when": through `GET /api/test-runs/{id}/report.pdf`, a render forced past its time limit
 * answers 503 with a `Retry-After` header, the browser processes that rendered are gone (their resident memory
 * 0) within 10 s, and the next request answers 200 with a new browser.
 */
import assert from "node:assert/strict";
import { fixtureModules } from "@dutlab/core/testing";
import { dbTest } from "../../core/harness/db.ts";
import { findChromium } from "@dutlab/core/testing/chromium";
import { residentBytes } from "../../core/harness/core.ts";
import { testServices } from "../../core/harness/app.ts";
import { finishRun, startRun } from "../../core/harness/runs_lab.ts";

const chromium = findChromium();
const inCi = Boolean(Deno.env.get("CI"));

dbTest(
  "report.pdf past its time limit: 503 with Retry-After, the browser's memory released within 10 s, the next request 200",
  async (db) => {
    assert.ok(chromium, "Chromium is required when CI is set: install the Debian package chromium");
    const { app, auth, svc } = await testServices(db, fixtureModules());
    try {
      const run = await startRun(app, auth, { planIdentifier: "fixture-plan" });
      await finishRun(app, auth, run.executionId, { outcome: "passed", results: { latencySamplesMs: [3] } });
      const url = `/api/test-runs/${run.executionId}/report.pdf`;
      const first = await app.request(url, { headers: auth });
      assert.equal(first.status, 200, await first.clone().text());
      await first.body?.cancel();
      const warm = await svc.pdf.browserPids();
      assert.ok(warm.length > 0 && residentBytes(warm) > 0, "the warm browser's processes are visible");

      // Forced past the limit: the same renderer with a limit no render can meet (DUT_PDF_TIMEOUT_SECONDS
      // cannot go below 1 s, which a warm render of this report may meet).
      const limit = svc.pdf.opts.timeoutMs;
      (svc.pdf.opts as { timeoutMs: number }).timeoutMs = 1;
      const slow = await app.request(url, { headers: auth });
      assert.equal(slow.status, 503);
      assert.equal(slow.headers.get("retry-after"), "30");
      assert.equal(slow.headers.get("content-type"), "application/problem+json");
      const p = await slow.json();
      assert.equal(p.type, "urn:dutlab:problem:pdf-unavailable");
      assert.match(p.detail, /took longer than 1 ms/);
      assert.equal(p.retryAfterSeconds, 30);

      const deadline = Date.now() + 10_000;
      let rss = residentBytes(warm);
      while (rss > 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
        rss = residentBytes(warm);
      }
      assert.equal(rss, 0, "every process of the browser that rendered has ended within 10 s");

      (svc.pdf.opts as { timeoutMs: number }).timeoutMs = limit;
      const next = await app.request(url, { headers: auth });
      assert.equal(next.status, 200, await next.clone().text());
      assert.equal(next.headers.get("content-type"), "application/pdf");
      await next.body?.cancel();
      const fresh = await svc.pdf.browserPids();
      assert.ok(fresh.length > 0 && !fresh.some((pid) => warm.includes(pid)), "a new browser rendered it");
    } finally {
      await svc.pdf.close();
    }
  },
  { ignore: !chromium && !inCi, only: ["postgres"] },
);
