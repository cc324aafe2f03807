import assert from "node:assert/strict";
import { k6Issues, readK6 } from "./k6.ts";

const trend = { avg: 18.4, min: 3.1, med: 14.9, max: 412.5, "p(90)": 31.2, "p(95)": 44.8, "p(99)": 97.3 };

/** `--summary-export`: flat values; a threshold's boolean is true when it was crossed. */
const exportForm = {
  metrics: {
    http_req_duration: { ...trend, thresholds: { "p(95)<500": false } },
    http_reqs: { count: 12000, rate: 133.3 },
    http_req_failed: { passes: 434, fails: 11566, value: 0.036166, thresholds: { "rate<0.01": true } },
    data_sent: { count: 1000, rate: 10 },
    checks: { passes: 11566, fails: 434, value: 0.96 },
  },
};

/** `handleSummary(data)`: values nested, thresholds `{ok}`, the duration in `state`. */
const handleForm = {
  state: { testRunDurationMs: 90000 },
  metrics: {
    http_req_duration: { type: "trend", contains: "time", values: trend },
    http_reqs: { type: "counter", contains: "default", values: { count: 12000, rate: 133.3 } },
    http_req_failed: {
      type: "rate",
      contains: "default",
      values: { rate: 0.036166, passes: 434, fails: 11566 },
      thresholds: { "rate<0.01": { ok: false } },
    },
    iterations: { type: "counter", contains: "default", values: { count: 600, rate: 6.6 } },
  },
};

Deno.test("both k6 JSON forms read the same: passes of http_req_failed are the failed requests", () => {
  assert.deepEqual(k6Issues(exportForm), []);
  assert.deepEqual(k6Issues(handleForm), []);
  const a = readK6(exportForm);
  const b = readK6(handleForm);
  assert.equal(a.format, "summary-export");
  assert.equal(b.format, "handleSummary");
  for (const k of [a, b]) {
    assert.deepEqual(k.requests, { count: 12000, rate: 133.3 });
    assert.equal(k.failed.failed, 434);
    assert.equal(k.failed.total, 12000);
    assert.equal(k.duration["p(99)"], 97.3);
  }
  assert.deepEqual(a.thresholds, [
    { metric: "http_req_duration", expression: "p(95)<500", ok: true },
    { metric: "http_req_failed", expression: "rate<0.01", ok: false },
  ]);
  assert.deepEqual(b.thresholds, [{ metric: "http_req_failed", expression: "rate<0.01", ok: false }]);
  assert.deepEqual(a.checks, { passes: 11566, fails: 434 });
  assert.equal(a.testRunDurationMs, null);
  assert.equal(b.testRunDurationMs, 90000);
  assert.deepEqual(b.iterations, { count: 600, rate: 6.6 });
  assert.equal(b.dataSent, null);
});

Deno.test("a missing required k6 metric is named, in either form", () => {
  for (const name of ["http_req_duration", "http_reqs", "http_req_failed"]) {
    for (const form of [exportForm, handleForm]) {
      const metrics = { ...form.metrics } as Record<string, unknown>;
      delete metrics[name];
      const issues = k6Issues({ ...form, metrics });
      assert.equal(issues.length, 1, JSON.stringify(issues));
      assert.deepEqual(issues[0]!.path, ["metrics", name]);
      assert.match(issues[0]!.message, new RegExp(`required k6 metric ${name} is missing`));
    }
  }
  const noP99 = structuredClone(handleForm);
  delete (noP99.metrics.http_req_duration.values as Record<string, number>)["p(99)"];
  const [issue] = k6Issues(noP99);
  assert.ok(issue, "a missing p(99) is an issue");
  assert.deepEqual(issue.path, ["metrics", "http_req_duration", "values", "p(99)"]);
  assert.match(issue.message, /--summary-trend-stats/);
  const badCount = structuredClone(exportForm) as { metrics: Record<string, Record<string, unknown>> };
  badCount.metrics.data_sent!.count = "1000";
  assert.deepEqual(k6Issues(badCount).map((i) => i.path.join(".")), ["metrics.data_sent.count"]);
  assert.deepEqual(k6Issues({}).map((i) => i.path.join(".")), ["metrics"]);
});
