/**
 * N-run comparison (issue 22 point 5, docs/runs.md "Comparing runs"): 2 to 20 finished runs side by side, read
 * from their frozen reports only, with the deltas of each KPI against a baseline run, a regression flag past
 * the thresholds below, the plan parameters that differ and the lab differences (devices added or removed,
 * model, software version or serial number changed) against the baseline.
 *
 * The comparison is a pure function of the reports it cites (no clock, no live lab state), so the same runs
 * and baseline always give the same object and the same `comparisonSha256`, whatever order the ids came in.
 *
 * @module
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../../db/schema.ts";
import { canonicalJson, jcsSha256 } from "../../util/hash.ts";
import { ConflictError, InvalidInputError, NotFoundError } from "../../errors.ts";
import type { ReportData, VerdictValue } from "../types.ts";

/** Identifies the comparison rule below in every comparison that applies it. */
export const COMPARISON_RULE = "dutlab-compare-1";
export const MIN_COMPARED_RUNS = 2;
export const MAX_COMPARED_RUNS = 20;

/**
 * When a run is flagged as a regression against the baseline (each threshold is strict and applies to the
 * delta as reported, percentages rounded to 0.01: exactly 10 % slower is not a regression):
 * - latency (p50, p95 or p99) more than `latencyPct` % above the baseline's;
 * - throughput (requests/s) more than `throughputPct` % below the baseline's;
 * - error rate more than `errorRatePoints` percentage points above the baseline's;
 * - a verdict more severe than the baseline's (pass < inconclusive < fail < invalid).
 * A KPI missing from either report (older reports, raw samples without counts) is not compared.
 */
export const REGRESSION_THRESHOLDS = { latencyPct: 10, throughputPct: 10, errorRatePoints: 1 } as const;

const SEVERITY: Record<VerdictValue, number> = { pass: 0, inconclusive: 1, fail: 2, invalid: 3 };

/** One numeric KPI of one run, with its change against the baseline. */
export interface KpiCell {
  /** The value read from the run's report; null when the report does not carry it. */
  value: number | null;
  /** value − baseline value; null for the baseline or when either is missing. */
  delta: number | null;
  /** delta in percent of the baseline value; null when that is 0 or missing. */
  deltaPct: number | null;
  /** True when this KPI is past its regression threshold. */
  regression: boolean;
}

export type KpiName = "p50Ms" | "p95Ms" | "p99Ms" | "throughputRps" | "errorRatePct";
export const KPI_NAMES: KpiName[] = ["p50Ms", "p95Ms", "p99Ms", "throughputRps", "errorRatePct"];
/** Where each KPI is read in ReportData, for the reader (also printed on the comparison page). */
export const KPI_SOURCE: Record<KpiName, string> = {
  p50Ms: "results.aggregate.p50_ms",
  p95Ms: "results.aggregate.p95_ms",
  p99Ms: "results.aggregate.p99_ms",
  throughputRps: "results.figures.requestsPerSecond.value",
  errorRatePct: "results.figures.errorRatePct.value",
};

export interface PlanChange {
  /** Path in the frozen plan, e.g. `parameters.tlsVersion` or `phases[1].durationS`. */
  path: string;
  /** Value in the baseline's plan (null when absent there). */
  baseline: unknown;
  /** Value in this run's plan (null when absent). */
  value: unknown;
}

export interface LabDevice {
  id: string;
  hostname: string;
  vendor: string;
}

export interface InventoryChange {
  deviceId: string;
  hostname: string;
  field: "model" | "softwareVersion" | "serialNumber";
  baseline: string | null;
  value: string | null;
}

export interface ComparedRun {
  executionId: string;
  runId: string;
  reportSha256: string;
  planIdentifier: string;
  planSnapshotSha256: string;
  licenseId: string;
  startedAt: string;
  endedAt: string;
  outcome: string;
  isBaseline: boolean;
  kpis: Record<KpiName, KpiCell> & {
    verdict: { value: VerdictValue | null; worseThanBaseline: boolean };
  };
  /** True when any KPI or the verdict is past its threshold. */
  regression: boolean;
  /** One sentence per KPI past its threshold. */
  regressionReasons: string[];
  /** True when this run's `planSnapshotSha256` differs from the baseline's. */
  planDiffers: boolean;
  /** Every leaf of the frozen plan that differs from the baseline's (empty when the plans are equal). */
  planChanges: PlanChange[];
  /** Lab at start against the baseline's lab at start (report `topology`). */
  lab: {
    devicesAdded: LabDevice[];
    devicesRemoved: LabDevice[];
    inventoryChanged: InventoryChange[];
  };
  labDiffers: boolean;
}

/** The comparison object (`POST /api/test-runs/compare`). */
export interface Comparison {
  version: 1;
  rule: string;
  baselineExecutionId: string;
  thresholds: typeof REGRESSION_THRESHOLDS;
  /** Oldest first (start time, then executionId). */
  runs: ComparedRun[];
  summary: {
    runs: number;
    regressions: string[];
    planDiffers: string[];
    labDiffers: string[];
  };
  /** SHA-256 of the RFC 8785 canonical JSON of this object without `comparisonSha256`. */
  comparisonSha256: string;
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;
const r2 = (x: number) => Math.round(x * 100) / 100;
const finite = (x: unknown): number | null => typeof x === "number" && Number.isFinite(x) ? x : null;

function kpiValues(r: ReportData): Record<KpiName, number | null> {
  const a = r.results?.aggregate;
  const f = r.results?.figures;
  return {
    p50Ms: finite(a?.p50_ms),
    p95Ms: finite(a?.p95_ms),
    p99Ms: finite(a?.p99_ms),
    throughputRps: finite(f?.requestsPerSecond?.value),
    errorRatePct: finite(f?.errorRatePct?.value),
  };
}

const LABEL: Record<KpiName, string> = {
  p50Ms: "p50",
  p95Ms: "p95",
  p99Ms: "p99",
  throughputRps: "throughput",
  errorRatePct: "error rate",
};

function cell(name: KpiName, value: number | null, base: number | null, isBaseline: boolean) {
  const out: KpiCell = { value, delta: null, deltaPct: null, regression: false };
  let reason: string | null = null;
  if (isBaseline || value === null || base === null) return { cell: out, reason };
  out.delta = r3(value - base);
  out.deltaPct = base !== 0 ? r2((value - base) / Math.abs(base) * 100) : null;
  const t = REGRESSION_THRESHOLDS;
  if (name === "throughputRps") {
    out.regression = base > 0 && out.deltaPct! < -t.throughputPct;
    if (out.regression) {
      reason = `throughput ${value} requests/s is ${-out.deltaPct!} % below the baseline's ${base} ` +
        `(threshold ${t.throughputPct} %)`;
    }
  } else if (name === "errorRatePct") {
    out.regression = out.delta > t.errorRatePoints;
    if (out.regression) {
      reason = `error rate ${value} % is ${out.delta} points above the baseline's ${base} % ` +
        `(threshold ${t.errorRatePoints} point${t.errorRatePoints === 1 ? "" : "s"})`;
    }
  } else {
    out.regression = base > 0 ? out.deltaPct! > t.latencyPct : value > 0;
    if (out.regression) {
      reason = `${LABEL[name]} ${value} ms is ${
        out.deltaPct === null ? "above 0" : `${out.deltaPct} % above`
      } the baseline's ${base} ms (threshold ${t.latencyPct} %)`;
    }
  }
  return { cell: out, reason };
}

/** Leaves of a JSON value by path (`a.b`, `a[0].c`); an empty object or array is a leaf. */
function leaves(v: unknown, path: string, out: Map<string, unknown>): Map<string, unknown> {
  if (Array.isArray(v) && v.length) v.forEach((x, i) => leaves(x, `${path}[${i}]`, out));
  else if (v !== null && typeof v === "object" && Object.keys(v).length) {
    for (const [k, x] of Object.entries(v)) {
      leaves(x, path ? `${path}.${/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k)}` : k, out);
    }
  } else out.set(path, v);
  return out;
}

/** Every leaf of the plan that differs from the baseline's, in path order. */
export function planChanges(baseline: unknown, plan: unknown): PlanChange[] {
  const a = leaves(baseline, "", new Map());
  const b = leaves(plan, "", new Map());
  const paths = [...new Set([...a.keys(), ...b.keys()])].sort();
  const out: PlanChange[] = [];
  for (const p of paths) {
    const x = a.has(p) ? a.get(p) : null;
    const y = b.has(p) ? b.get(p) : null;
    if (canonicalJson(x ?? null) !== canonicalJson(y ?? null)) out.push({ path: p, baseline: x, value: y });
  }
  return out;
}

function labDiff(base: ReportData, r: ReportData): ComparedRun["lab"] {
  const dev = (d: { id: string; hostname: string; vendor: string }) => ({
    id: d.id,
    hostname: d.hostname,
    vendor: d.vendor,
  });
  const baseDevs = new Map(base.topology.devices.map((d) => [d.id, d]));
  const devs = new Map(r.topology.devices.map((d) => [d.id, d]));
  const byHost = (a: LabDevice, b: LabDevice) =>
    a.hostname.localeCompare(b.hostname) || a.id.localeCompare(b.id);
  const devicesAdded = r.topology.devices.filter((d) => !baseDevs.has(d.id)).map(dev).sort(byHost);
  const devicesRemoved = base.topology.devices.filter((d) => !devs.has(d.id)).map(dev).sort(byHost);
  const inventoryChanged: InventoryChange[] = [];
  const bi = base.topology.inventory;
  const ri = r.topology.inventory;
  if (bi && ri) {
    for (const d of [...devs.values()].filter((d) => baseDevs.has(d.id)).sort(byHost)) {
      const x = bi[d.id];
      const y = ri[d.id];
      // Compare only what both runs read: an unread inventory is unknown, not changed.
      if (x?.status !== "read" || y?.status !== "read") continue;
      for (const field of ["model", "softwareVersion", "serialNumber"] as const) {
        if (x[field] !== y[field]) {
          inventoryChanged.push({
            deviceId: d.id,
            hostname: d.hostname,
            field,
            baseline: x[field],
            value: y[field],
          });
        }
      }
    }
  }
  return { devicesAdded, devicesRemoved, inventoryChanged };
}

/**
 * Compare finished runs' reports. `baseline` (an executionId among them) defaults to the oldest run.
 * Throws a 400 problem when `baseline` is not among the reports.
 */
export async function compareReports(reports: ReportData[], baseline?: string): Promise<Comparison> {
  const sorted = [...reports].sort((a, b) =>
    Date.parse(a.meta.startedAt) - Date.parse(b.meta.startedAt) ||
    a.meta.executionId.localeCompare(b.meta.executionId)
  );
  const base = baseline === undefined ? sorted[0] : sorted.find((r) => r.meta.executionId === baseline);
  if (!base) {
    throw new InvalidInputError(`"baseline": must be one of executionIds`, {
      errors: [{ field: "baseline", message: "must be one of executionIds" }],
    });
  }
  const baseKpis = kpiValues(base);
  const baseVerdict = base.verdict?.value ?? null;
  const runs: ComparedRun[] = sorted.map((r) => {
    const isBaseline = r === base;
    const values = kpiValues(r);
    const reasons: string[] = [];
    const kpis = {} as ComparedRun["kpis"];
    for (const k of KPI_NAMES) {
      const { cell: c, reason } = cell(k, values[k], baseKpis[k], isBaseline);
      kpis[k] = c;
      if (reason) reasons.push(reason);
    }
    const v = r.verdict?.value ?? null;
    const worse = !isBaseline && v !== null && baseVerdict !== null && SEVERITY[v] > SEVERITY[baseVerdict];
    kpis.verdict = { value: v, worseThanBaseline: worse };
    if (worse) reasons.push(`verdict ${v} is more severe than the baseline's ${baseVerdict}`);
    const planDiffers = r.meta.planSnapshotSha256 !== base.meta.planSnapshotSha256;
    const lab = labDiff(base, r);
    return {
      executionId: r.meta.executionId,
      runId: r.meta.runId,
      reportSha256: r.reportSha256,
      planIdentifier: r.meta.planIdentifier,
      planSnapshotSha256: r.meta.planSnapshotSha256,
      licenseId: r.license.id,
      startedAt: r.meta.startedAt,
      endedAt: r.meta.endedAt,
      outcome: r.meta.outcome,
      isBaseline,
      kpis,
      regression: reasons.length > 0,
      regressionReasons: reasons,
      planDiffers,
      planChanges: planDiffers ? planChanges(base.plan, r.plan) : [],
      lab,
      labDiffers: lab.devicesAdded.length + lab.devicesRemoved.length + lab.inventoryChanged.length > 0,
    };
  });
  const draft: Omit<Comparison, "comparisonSha256"> = {
    version: 1,
    rule: COMPARISON_RULE,
    baselineExecutionId: base.meta.executionId,
    thresholds: REGRESSION_THRESHOLDS,
    runs,
    summary: {
      runs: runs.length,
      regressions: runs.filter((r) => r.regression).map((r) => r.executionId),
      planDiffers: runs.filter((r) => r.planDiffers).map((r) => r.executionId),
      labDiffers: runs.filter((r) => r.labDiffers).map((r) => r.executionId),
    },
  };
  return { ...draft, comparisonSha256: await jcsSha256(draft) };
}

/** Annex-free reports already read, by executionId (a frozen report never changes: migration 0005). */
const cache = new Map<string, { sha256: string; report: ReportData }>();
const CACHE_MAX = 500;
/** Forget the reports read so far (benchmarks measure the first read with it). */
export const clearReportCache = () => cache.clear();

/**
 * The frozen reports of the given runs without their annexes (`annexes: []`), in the order asked: a 404
 * problem naming every unknown id, then a 409 problem naming every run that has not finished (its report
 * does not exist yet). Reports already read are kept in memory (at most 500, without annexes) and used
 * again while the run still exists with the same reportSha256; the returned objects are shared: read only.
 */
export async function loadFinishedReports(db: Kysely<Database>, ids: string[]): Promise<ReportData[]> {
  const rows = await db.selectFrom("test_runs").select(["execution_id", "report_sha256"])
    .where("execution_id", "in", ids).execute();
  const sha = new Map(rows.map((r) => [String(r.execution_id).toLowerCase(), r.report_sha256]));
  const unknown = ids.filter((id) => !sha.has(id));
  if (unknown.length) {
    throw new NotFoundError(`No test run with executionId ${unknown.map((i) => `"${i}"`).join(", ")}`);
  }
  const active = ids.filter((id) => !sha.get(id));
  if (active.length) {
    throw new ConflictError(
      `Run${active.length === 1 ? "" : "s"} ${active.map((i) => `"${i}"`).join(", ")} ha${
        active.length === 1 ? "s" : "ve"
      } not finished: only finished runs (with a frozen report) can be compared`,
      { extra: { unfinishedExecutionIds: active } },
    );
  }
  const missing = ids.filter((id) => cache.get(id)?.sha256 !== sha.get(id));
  if (missing.length) {
    // The annexes (most of a report's bytes: every snapshot of the run) are left in the database.
    const read = await db.selectFrom("test_runs")
      .select([
        "execution_id",
        "report_sha256",
        sql<string>`(report_json::jsonb - 'annexes')::text`.as("report"),
      ])
      .where("execution_id", "in", missing).where("report_json", "is not", null).execute();
    for (const r of read) {
      if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
      cache.set(String(r.execution_id).toLowerCase(), {
        sha256: r.report_sha256!,
        report: { ...JSON.parse(r.report), annexes: [] } as ReportData,
      });
    }
  }
  return ids.map((id) => {
    const hit = cache.get(id);
    // Finished between the two reads is impossible; deleted between them is a 404 like any unknown id.
    if (!hit) throw new NotFoundError(`No test run with executionId "${id}"`);
    return hit.report;
  });
}

/** Load and compare (see {@link compareReports}, {@link loadFinishedReports}). */
export async function compareRuns(
  db: Kysely<Database>,
  ids: string[],
  baseline?: string,
): Promise<Comparison> {
  if (baseline !== undefined && !ids.includes(baseline)) {
    throw new InvalidInputError(`"baseline": must be one of executionIds`, {
      errors: [{ field: "baseline", message: "must be one of executionIds" }],
    });
  }
  return await compareReports(await loadFinishedReports(db, ids), baseline);
}
