/**
 * Result formats (docs/runs.md "Result formats"): a pre-flight, a run's verdict and a run comparison rendered as
 * JUnit XML, Markdown or CSV. Like ANTA's reporters, the renderers are pure functions separate from the
 * results they render: each result kind is first turned into a {@link ResultSet} (suites of cases plus the
 * columns of a table), and each format renders any ResultSet.
 */
import type { PreflightResult } from "../preflight/engine.ts";
import type { Comparison } from "../report/results/compare.ts";
import type { RunView } from "../runs/service.ts";
import { renderJunit } from "./junit.ts";
import { renderMarkdown } from "./markdown.ts";
import { renderCsv } from "./csv.ts";
import type { ResultCase, ResultSet, ResultSuite } from "./result_set.ts";

export type { ResultCase, ResultSet, ResultSuite } from "./result_set.ts";

/** The formats a result is served and written in; `json` is the result object itself. */
export const RESULT_FORMATS = ["json", "junit", "markdown", "csv"] as const;
export type ResultFormat = typeof RESULT_FORMATS[number];

/** The media type each format is served with (`junit`: JUnit XML as Apache Ant writes it). */
export const RESULT_MEDIA_TYPES: Record<ResultFormat, string> = {
  json: "application/json",
  junit: "application/xml",
  markdown: "text/markdown",
  csv: "text/csv",
};

/** The Content-Type header of a format (with its charset; CSV says it has a header row, RFC 4180). */
export const RESULT_CONTENT_TYPES: Record<ResultFormat, string> = {
  json: "application/json; charset=utf-8",
  junit: "application/xml; charset=utf-8",
  markdown: "text/markdown; charset=utf-8; variant=GFM",
  csv: "text/csv; charset=utf-8; header=present",
};

const evidenceLine = (e: PreflightResult["checks"][number]["evidence"]) =>
  e ? `snapshot ${e.snapshotId} sha256:${e.payloadSha256} collected ${e.collectedAt}` : null;

/**
 * A pre-flight as a ResultSet: one suite per device (hostname, in the result's order), one case per check.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { PreflightResult } from "../preflight/engine.ts";
 * // The values a caller has; the example type-checks (deno check --doc) and is not run.
 * async function example(pf: PreflightResult) {
 *   assert.equal(preflightResultSet(pf).kind, "preflight");
 * }
 * ```
 */
export function preflightResultSet(pf: PreflightResult): ResultSet {
  const suites = new Map<string, ResultSuite>();
  for (const c of pf.checks) {
    let s = suites.get(c.deviceHostname);
    if (!s) suites.set(c.deviceHostname, s = { name: c.deviceHostname, cases: [] });
    s.cases.push({
      name: c.checkId,
      status: c.status,
      detail: c.detail,
      evidence: evidenceLine(c.evidence),
      cells: [
        c.deviceHostname,
        c.vendor,
        c.checkId,
        c.status,
        c.detail,
        c.evidence?.snapshotId ?? "",
        c.evidence?.payloadSha256 ?? "",
        c.evidence?.collectedAt ?? "",
      ],
    });
  }
  return {
    kind: "preflight",
    subject: pf.planIdentifier,
    timestamp: pf.ranAt,
    pass: pf.pass,
    summary: pf.summary,
    properties: [
      ["planIdentifier", pf.planIdentifier],
      ["ranAt", pf.ranAt],
      ["checksRun", String(pf.checksRun)],
      ["checksPassed", String(pf.checksPassed)],
      ["checksFailed", String(pf.checksFailed)],
      ["checksSkipped", String(pf.checksSkipped)],
      ["pass", String(pf.pass)],
    ],
    columns: ["device", "vendor", "check", "status", "detail", "snapshotId", "payloadSha256", "collectedAt"],
    suites: [...suites.values()].map(uniqueNames),
  };
}

const VERDICT_STATUS = {
  pass: "pass",
  none: "skipped",
  fail: "fail",
  invalid: "fail",
  inconclusive: "fail",
} as const;

/**
 * A run's verdict as a ResultSet: one suite (the run), one case per verdict input. An input that does not
 * apply (`none`) is skipped; `fail`, `invalid` and `inconclusive` fail, citing the report's SHA-256. An
 * active run (no verdict yet) has one skipped case `verdict`.
 */
export function runResultSet(run: RunView): ResultSet {
  const evidence = run.reportSha256 ? `report sha256:${run.reportSha256}` : null;
  const cases: ResultCase[] = run.verdict
    ? run.verdict.reasons.map((r) => ({
      name: r.input,
      status: VERDICT_STATUS[r.effect],
      detail: r.effect === "pass" || r.effect === "none" ? r.detail : `${r.effect}: ${r.detail}`,
      evidence,
      cells: [run.runId, r.input, r.effect, r.detail, run.reportSha256 ?? ""],
    }))
    : [{
      name: "verdict",
      status: "skipped",
      detail: run.status === "active" ? "the run is active: no verdict yet" : "the report carries no verdict",
      evidence,
      cells: [run.runId, "verdict", "none", "no verdict", run.reportSha256 ?? ""],
    }];
  const verdict = run.verdict?.value ?? null;
  return {
    kind: "run",
    subject: run.planIdentifier,
    timestamp: run.endedAt ?? run.startedAt,
    pass: verdict === "pass",
    summary: `Run ${run.runId} (${run.planIdentifier}, ${run.status}): verdict ${verdict ?? "none yet"}${
      run.outcome ? `, outcome ${run.outcome}` : ""
    }${run.reportSha256 ? `, report sha256:${run.reportSha256}` : ""}`,
    properties: [
      ["executionId", run.executionId],
      ["runId", run.runId],
      ["planIdentifier", run.planIdentifier],
      ["status", run.status],
      ["startedAt", run.startedAt],
      ["endedAt", run.endedAt ?? ""],
      ["outcome", run.outcome ?? ""],
      ["verdict", verdict ?? ""],
      ["reportSha256", run.reportSha256 ?? ""],
    ],
    columns: ["run", "input", "effect", "detail", "reportSha256"],
    suites: [uniqueNames({ name: `run ${run.runId}`, cases })],
  };
}

const num = (v: number | null) => v === null ? "" : String(v);

/**
 * A comparison as a ResultSet: one suite, one case per run (the baseline passes; a regression fails with
 * its reasons and the run's report SHA-256).
 */
export function comparisonResultSet(cmp: Comparison): ResultSet {
  const cases: ResultCase[] = cmp.runs.map((r) => ({
    name: `${r.runId}${r.isBaseline ? " (baseline)" : ""}`,
    status: r.regression ? "fail" : "pass",
    detail: [
      ...r.regressionReasons,
      ...(r.planDiffers ? [`plan differs from the baseline's (${r.planChanges.length} changes)`] : []),
      ...(r.labDiffers ? ["lab differs from the baseline's"] : []),
    ].join("; "),
    evidence: `report sha256:${r.reportSha256}`,
    cells: [
      r.runId,
      r.executionId,
      String(r.isBaseline),
      r.startedAt,
      r.outcome,
      r.kpis.verdict.value ?? "",
      num(r.kpis.p50Ms.value),
      num(r.kpis.p95Ms.value),
      num(r.kpis.p99Ms.value),
      num(r.kpis.throughputRps.value),
      num(r.kpis.errorRatePct.value),
      String(r.regression),
      r.regressionReasons.join("; "),
      String(r.planDiffers),
      String(r.labDiffers),
      r.reportSha256,
    ],
  }));
  const n = cmp.summary.regressions.length;
  return {
    kind: "comparison",
    subject: cmp.baselineExecutionId,
    timestamp: cmp.runs.at(-1)?.endedAt ?? new Date(0).toISOString(),
    pass: n === 0,
    summary: `${cmp.runs.length} runs compared against baseline ${cmp.baselineExecutionId}: ${
      n === 0 ? "no regression" : `${n} regression${n === 1 ? "" : "s"}`
    } (comparison sha256:${cmp.comparisonSha256})`,
    properties: [
      ["baselineExecutionId", cmp.baselineExecutionId],
      ["rule", cmp.rule],
      ["comparisonSha256", cmp.comparisonSha256],
    ],
    columns: [
      "run",
      "executionId",
      "baseline",
      "startedAt",
      "outcome",
      "verdict",
      "p50Ms",
      "p95Ms",
      "p99Ms",
      "throughputRps",
      "errorRatePct",
      "regression",
      "regressionReasons",
      "planDiffers",
      "labDiffers",
      "reportSha256",
    ],
    suites: [uniqueNames({ name: "comparison", cases })],
  };
}

/** The suite with every case name unique: a repeated name gets ` (2)`, ` (3)`, … */
function uniqueNames(suite: ResultSuite): ResultSuite {
  const seen = new Set<string>();
  return {
    ...suite,
    cases: suite.cases.map((c) => {
      let name = c.name;
      for (let i = 2; seen.has(name); i++) name = `${c.name} (${i})`;
      seen.add(name);
      return { ...c, name };
    }),
  };
}

/** A ResultSet rendered in a text format. */
export function renderResultSet(set: ResultSet, format: Exclude<ResultFormat, "json">): string {
  switch (format) {
    case "junit":
      return renderJunit(set);
    case "markdown":
      return renderMarkdown(set);
    case "csv":
      return renderCsv(set);
  }
}
