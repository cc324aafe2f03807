/**
 * k6 end-of-test summaries, in both JSON forms k6 writes:
 *
 * - `--summary-export=file.json` (the legacy export): each metric's values are flat members — a trend
 *   `{avg, min, med, max, "p(90)", "p(95)", "p(99)"}` (the `--summary-trend-stats`), a counter
 *   `{count, rate}`, a rate `{passes, fails, value}` — and `thresholds` maps each expression to a boolean
 *   that is `true` when the threshold was **crossed** (k6 issue #1498);
 * - `JSON.stringify(data)` from `handleSummary(data)`: each metric is `{type, contains, values, thresholds}`
 *   with the same values under `values` (a rate has `{rate, passes, fails}`), `thresholds` maps each
 *   expression to `{ok}`, and `state.testRunDurationMs` is the test's duration.
 *
 * In a rate, `passes` counts the samples that were true: for `http_req_failed` that is the number of
 * failed requests (k6 issue #2386). A metric may be in either form; one document is one form in practice.
 *
 * This file is the validation of a submitted summary (the wire format a finish accepts); reading the figures
 * of an accepted one is the report's (`core/src/report/results/k6.ts`).
 *
 * @module
 */
/** A problem with a submitted k6 summary, at a path below `k6Summary`. */
export interface K6Issue {
  path: Array<string | number>;
  message: string;
}

/** A plain object (not null, not an array). */
export const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
/** A finite number ≥ 0. */
export const isNum = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;

/** Metrics a finish needs; the others are read when present. */
export const K6_REQUIRED = ["http_req_duration", "http_reqs", "http_req_failed"] as const;
const TREND = ["avg", "min", "med", "max", "p(95)", "p(99)"] as const;
/** Metrics read when present, and the values each must then have. */
const K6_OPTIONAL = [
  ["data_sent", ["count"]],
  ["data_received", ["count"]],
  ["iterations", ["count"]],
  ["checks", ["passes", "fails"]],
] as const;
const HINT = 'run k6 with --summary-trend-stats "avg,min,med,max,p(90),p(95),p(99)"';

/** The values of one metric, whichever form it is in, with the path prefix of those values. */
export function valuesOf(
  metric: unknown,
): { v: Record<string, unknown>; at: string[]; nested: boolean } | null {
  if (!isObj(metric)) return null;
  if (isObj(metric.values)) return { v: metric.values, at: ["values"], nested: true };
  return { v: metric, at: [], nested: false };
}

/** Every problem of a k6 summary for a finish (empty when it can be read). */
export function k6Issues(summary: unknown): K6Issue[] {
  if (!isObj(summary) || !isObj(summary.metrics)) {
    return [{ path: ["metrics"], message: "must be the metrics object of a k6 summary" }];
  }
  const metrics = summary.metrics;
  const issues: K6Issue[] = [];
  const need = (name: string, keys: readonly string[], what: string) => {
    const m = valuesOf(metrics[name]);
    if (!m) {
      issues.push({ path: ["metrics", name], message: `required k6 metric ${name} is missing (${what})` });
      return;
    }
    for (const k of keys) {
      if (!isNum(m.v[k])) {
        issues.push({
          path: ["metrics", name, ...m.at, k],
          message: k === "p(99)"
            ? `lacks p(99): ${HINT}`
            : `must be a non-negative number (${name} is a k6 ${what})`,
        });
      }
    }
  };
  need("http_req_duration", TREND, "trend");
  need("http_reqs", ["count"], "counter");
  const failed = valuesOf(metrics.http_req_failed);
  if (!failed) {
    issues.push({
      path: ["metrics", "http_req_failed"],
      message: "required k6 metric http_req_failed is missing (rate of failed requests)",
    });
  } else {
    for (const k of ["passes", "fails"]) {
      if (!isNum(failed.v[k])) {
        issues.push({ path: ["metrics", "http_req_failed", ...failed.at, k], message: "must be a count" });
      }
    }
  }
  for (const [name, keys] of K6_OPTIONAL) {
    if (metrics[name] === undefined) continue;
    const m = valuesOf(metrics[name]);
    for (const k of keys) {
      if (!m || !isNum(m.v[k])) {
        issues.push({
          path: ["metrics", name, ...(m?.at ?? []), k],
          message: "must be a non-negative number",
        });
      }
    }
  }
  return issues;
}

/** The JSON Schema (OpenAPI 3.1) of one metric with `keys`, in either form: values flat or under `values`. */
function metricSchema(keys: readonly string[], description: string): Record<string, unknown> {
  const values = {
    type: "object",
    required: [...keys],
    properties: Object.fromEntries(keys.map((k) => [k, { type: "number", minimum: 0 }])),
  };
  return {
    description,
    anyOf: [
      { type: "object", required: ["values"], properties: { values } },
      { ...values, properties: { ...values.properties, values: { not: { type: "object" } } } },
    ],
  };
}

/**
 * The OpenAPI form of what {@link k6Issues} requires of a summary, from the same lists: the required metrics
 * with the values each must have, and the optional ones with theirs when present.
 */
export function k6SummaryOpenApi(): Record<string, unknown> {
  const props: Record<string, unknown> = {
    http_req_duration: metricSchema(TREND, "Trend of request durations (ms), with p(99)"),
    http_reqs: metricSchema(["count"], "Counter of requests"),
    http_req_failed: metricSchema(["passes", "fails"], "Rate of failed requests (passes = failed)"),
  };
  for (const [name, keys] of K6_OPTIONAL) props[name] = metricSchema(keys, `Read when present`);
  return {
    type: "object",
    required: ["metrics"],
    properties: {
      metrics: { type: "object", required: [...K6_REQUIRED], properties: props, additionalProperties: {} },
    },
  };
}
