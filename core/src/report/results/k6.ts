/**
 * The figures of a k6 end-of-test summary that {@link k6Issues} accepted (the summary's forms and their
 * validation: `core/src/api/k6_summary.ts`).
 *
 * @module
 */
import type { K6Trend } from "./aggregate.ts";
import { isNum, isObj, valuesOf } from "../../api/k6_summary.ts";
export { K6_REQUIRED, type K6Issue, k6Issues } from "../../api/k6_summary.ts";

/** A k6 summary reduced to what the report reads. */
export interface K6Figures {
  format: "summary-export" | "handleSummary";
  duration: K6Trend;
  requests: { count: number; rate: number | null };
  failed: { failed: number; total: number; rate: number };
  dataSent: { count: number; rate: number | null } | null;
  dataReceived: { count: number; rate: number | null } | null;
  iterations: { count: number; rate: number | null } | null;
  checks: { passes: number; fails: number } | null;
  thresholds: Array<{ metric: string; expression: string; ok: boolean }>;
  /** `state.testRunDurationMs` (handleSummary form), else null. */
  testRunDurationMs: number | null;
}

const counter = (metric: unknown) => {
  const m = valuesOf(metric);
  if (!m || !isNum(m.v.count)) return null;
  return { count: m.v.count, rate: isNum(m.v.rate) ? m.v.rate : null };
};

/** Read a summary that {@link k6Issues} accepted. */
export function readK6(summary: { metrics: Record<string, unknown>; state?: unknown }): K6Figures {
  const m = summary.metrics;
  const d = valuesOf(m.http_req_duration)!;
  const f = valuesOf(m.http_req_failed)!;
  const failedCount = f.v.passes as number;
  const total = failedCount + (f.v.fails as number);
  const checks = valuesOf(m.checks);
  const thresholds: K6Figures["thresholds"] = [];
  for (const [metric, raw] of Object.entries(m).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)) {
    if (!isObj(raw) || !isObj(raw.thresholds)) continue;
    for (const [expression, t] of Object.entries(raw.thresholds)) {
      // handleSummary: {ok}; --summary-export: true when the threshold was crossed.
      if (isObj(t) && typeof t.ok === "boolean") thresholds.push({ metric, expression, ok: t.ok });
      else if (typeof t === "boolean") thresholds.push({ metric, expression, ok: !t });
    }
  }
  const state = isObj(summary.state) ? summary.state : {};
  return {
    format: d.nested ? "handleSummary" : "summary-export",
    duration: d.v as unknown as K6Trend,
    requests: counter(m.http_reqs)!,
    failed: { failed: failedCount, total, rate: total > 0 ? failedCount / total : 0 },
    dataSent: counter(m.data_sent),
    dataReceived: counter(m.data_received),
    iterations: counter(m.iterations),
    checks: checks && isNum(checks.v.passes) && isNum(checks.v.fails)
      ? { passes: checks.v.passes, fails: checks.v.fails }
      : null,
    thresholds,
    testRunDurationMs: isNum(state.testRunDurationMs) ? state.testRunDurationMs : null,
  };
}
