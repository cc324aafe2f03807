/**
 * Report assembly: from a run's stored row, the submitted results and the lab at the end, the ReportData
 * that `RunService.finish` freezes (spec 4.11). Aggregation, figures, verdict, topology, TLS decryption and
 * the annexes are put together here; sealing (the hash) is seal.ts's. The caller owns the transaction and
 * the lab state reads, so this file holds no run life cycle, only what the report says.
 *
 * @module
 */
import { type Kysely, type Selectable, sql } from "kysely";
import type { Database, TestRunsTable } from "../db/schema.ts";
import type { Registry } from "../registry.ts";
import type { Plan } from "../plan.ts";
import type { PreflightResult } from "../preflight/engine.ts";
import { jcsSha256 } from "../util/hash.ts";
import { CONTROLLER, serves } from "../capability.ts";
import { jsonValue } from "../db/json.ts";
import type { StartState } from "../lab/state.ts";
import {
  type Aggregate,
  aggregateK6,
  aggregateSamples,
  budgetBurnedPct,
  shareAbove,
  shareAboveK6,
} from "./results/aggregate.ts";
import { readK6 } from "./results/k6.ts";
import { k6Figures, rawFigures } from "./results/figures.ts";
import { driftForVerdict, VERDICT_RULE, VERDICT_RULES } from "./results/verdict.ts";
import { dbDriftSource, driftOf, type DriftSource } from "./results/drift.ts";
import type { RunResults } from "../api/schemas.ts";
import { jsonAnnex, licenseTexts, sealReport } from "./seal.ts";
import type { DecryptAlert, ReportData, StartGate } from "./types.ts";

/**
 * The lab's TLS-decrypt state from its firewalls': `on` or `off` when every firewall with a known state
 * agrees, `mixed` when they differ, `unknown` when none has a readable `decrypt_policy` snapshot.
 */
export function labDecryptState(state: StartState): "on" | "off" | "mixed" | "unknown" {
  const known = new Set(Object.values(state.decrypt).map((d) => d.state).filter((s) => s !== "unknown"));
  if (known.size === 0) return "unknown";
  return known.size > 1 ? "mixed" : [...known][0] as "on" | "off";
}

/** The stored run row members the report is assembled from (a `test_runs` row). */
export type AssembledRun =
  & Pick<
    Selectable<TestRunsTable>,
    | "execution_id"
    | "plan_identifier"
    | "plan_display_name"
    | "plan_catalog_version"
    | "plan_json"
    | "plan_snapshot_sha256"
    | "license_id"
    | "notes"
    | "started_at"
    | "start_state_json"
    | "preflight_json"
    | "lab_name"
    | "customer"
  >
  & { start_gate_json?: unknown }
  & { run_id: string };

/** One snapshot linked to the run (annex `snapshots`), as the run's finish reads it. */
export interface LinkedSnapshot {
  snapshotId: string;
  deviceId: string;
  deviceHostname: string;
  endpointLabel: string;
  payloadSha256: string;
  collectedAt: string;
}

/** The snapshots linked to a run, oldest first (annex `snapshots`). */
export async function linkedSnapshots(db: Kysely<Database>, executionId: string): Promise<LinkedSnapshot[]> {
  // From the tables' own run indexes (a filter on the `snapshots` view would join every row first), then the
  // device, label and hash of each (migration 2026_11_25_0017).
  const rows = (await sql<{
    id: string;
    device_id: string;
    hostname: string;
    endpoint_label: string;
    payload_sha256: string;
    collected_at: Date | string;
  }>`
    select x.id::text as id, x.device_id, d.hostname, x.endpoint_label, x.payload_sha256, x.collected_at
    from (
      select r.id, se.device_id, se.endpoint_label, p.sha256 as payload_sha256, r.collected_at
      from snapshot_rows r join snapshot_series se on se.id = r.series_id
        join snapshot_payloads p on p.id = r.payload_id
      where r.test_run_execution_id = ${executionId}::uuid
      union all
      select l.id, l.device_id, l.endpoint_label, l.payload_sha256, l.collected_at from snapshots_legacy l
      where l.test_run_execution_id = ${executionId}::uuid
    ) x join devices d on d.id = x.device_id
    order by x.id`.execute(db)).rows;
  return rows.map((s) => ({
    snapshotId: s.id,
    deviceId: s.device_id,
    deviceHostname: s.hostname,
    endpointLabel: s.endpoint_label,
    payloadSha256: s.payload_sha256,
    collectedAt: new Date(s.collected_at).toISOString(),
  }));
}

/** Options of {@link assembleReport}. */
export interface AssembleReportOptions {
  /** The transaction finishing the run: the linked snapshots and the drift are read through it. */
  db: Kysely<Database>;
  registry: Registry;
  /** The run's stored row (still active). */
  run: AssembledRun;
  /** The operator's declared outcome. */
  outcome: string;
  /** The results as submitted (raw samples or a k6 summary). */
  results: RunResults;
  /** When the run ends: the report's `generatedAt` and `meta.endedAt`. */
  endedAt: Date;
  /** The lab read at the end (annex `lab-at-end`, `tlsDecrypt.activeAtEnd`). */
  endState: StartState;
  /** The run's TLSDecryptModeChanged alerts, oldest first. */
  alerts: DecryptAlert[];
  /** The lab named in the licence when the run was started before the lab name was recorded. */
  labName: string;
}

/**
 * Assemble and seal the report of a run being finished: reads the linked snapshots and the drift through
 * the transaction, then {@link composeReport}.
 *
 * @example
 * ```ts
 * import type { Kysely } from "kysely";
 * import type { Database } from "../db/schema.ts";
 * import type { Registry } from "../registry.ts";
 * // The values a caller has; the example type-checks (deno check --doc) and is not run.
 * async function example(tx: Kysely<Database>, registry: Registry, opts: AssembleReportOptions) {
 *   const { run: row, endState, alerts } = opts;
 *   const report = await assembleReport({
 *     db: tx, registry, run: row, outcome: "passed", results: { latencySamplesMs: [12.5, 14, 80] },
 *     endedAt: new Date(), endState, alerts, labName: "dutlab test lab",
 *   });
 * }
 * ```
 */
export async function assembleReport(opts: AssembleReportOptions): Promise<ReportData> {
  const { db: tx, run: r } = opts;
  return await composeReport({
    ...opts,
    linked: await linkedSnapshots(tx, r.execution_id),
    drift: dbDriftSource(tx),
  });
}

/** What {@link composeReport} reads: the run's recorded inputs, no database. */
export interface ComposeReportOptions extends Omit<AssembleReportOptions, "db"> {
  /** The snapshots linked to the run, oldest first. */
  linked: LinkedSnapshot[];
  /** Where the drift's snapshots at start and end and their payloads are read. */
  drift: DriftSource;
  /**
   * The verdict rule to judge by (a key of `VERDICT_RULES`; default the current rule), or null for no
   * verdict member (a replay of a report frozen before verdicts existed).
   */
  verdictRule?: string | null;
}

/**
 * What the submitted results make of the report: the aggregate, the share slower than the target, the
 * `results` member and the `results-input` annex's value.
 */
export async function deriveResults(
  plan: Plan,
  submittedResults: RunResults,
  runDurationS: number,
): Promise<
  { aggregate: Aggregate; slower: number; submitted: Record<string, unknown>; results: ReportData["results"] }
> {
  const target = plan.sloTargetP99Ms;
  if ("latencySamplesMs" in submittedResults) {
    const { latencySamplesMs: samples, ...counts } = submittedResults;
    const aggregate = aggregateSamples(samples);
    const source = "latencySamplesMs";
    return {
      aggregate,
      slower: shareAbove(samples, target),
      submitted: {
        source,
        count: samples.length,
        latencySamplesMsSha256: await jcsSha256(samples),
        counts,
        errorBudget: "exact: share of samples slower than targetP99Ms",
      },
      results: {
        source,
        aggregate,
        latencyProvenance: {
          source: "service",
          exactness: "exact",
          basis: "percentiles of the submitted samples, linear interpolation between closest ranks",
        },
        figures: rawFigures(samples.length, counts, runDurationS),
        checks: null,
        thresholds: [],
      },
    };
  }
  const k6 = readK6(submittedResults.k6Summary);
  const m = submittedResults.k6Summary.metrics;
  const aggregate = aggregateK6(k6.duration, Math.round(k6.requests.count));
  const source = "k6-summary";
  return {
    aggregate,
    slower: shareAboveK6(k6.duration, target),
    submitted: {
      source,
      k6Format: k6.format,
      k6SummarySha256: await jcsSha256(submittedResults.k6Summary),
      metricsUsed: Object.fromEntries(
        [
          "http_req_duration",
          "http_reqs",
          "http_req_failed",
          "data_sent",
          "data_received",
          "iterations",
          "checks",
        ]
          .filter((n) => m[n] !== undefined).map((n) => [n, m[n]]),
      ),
      testRunDurationMs: k6.testRunDurationMs,
      errorBudget: "estimated: linear interpolation between the exported trend points",
    },
    results: {
      source,
      aggregate,
      latencyProvenance: {
        source: "load-generator",
        exactness: "exact",
        basis: "k6 http_req_duration trend (p50 = med); count = http_reqs",
      },
      k6Format: k6.format,
      figures: k6Figures(k6, runDurationS),
      checks: k6.checks,
      thresholds: k6.thresholds,
    },
  };
}

/**
 * Compose and seal a report from a run's recorded inputs, without a database: what the finish and the
 * replay (docs/reports.md "Replay") both run, so that a replay proves the service's own derivations.
 */
export async function composeReport(opts: ComposeReportOptions): Promise<ReportData> {
  const { registry, run: r, outcome, results: submittedResults, endedAt, endState, alerts, labName } = opts;
  const plan = jsonValue<Plan>(r.plan_json);
  const target = plan.sloTargetP99Ms;
  const startedAt = new Date(r.started_at);
  const runDurationS = (endedAt.getTime() - startedAt.getTime()) / 1000;
  const { aggregate, slower, submitted, results } = await deriveResults(plan, submittedResults, runDurationS);
  const source = results.source;
  const startState = jsonValue<StartState>(r.start_state_json);
  const invalidated = alerts.length > 0;
  const preflight = jsonValue<PreflightResult>(r.preflight_json);
  // Null for a run started before gating existed: its report carries no startGate, as then.
  const startGate = r.start_gate_json == null ? null : jsonValue<StartGate>(r.start_gate_json);
  const activeAtStart = labDecryptState(startState);
  const activeAtEnd = labDecryptState(endState);
  const drift = await driftOf(opts.drift, registry, startState.devices, startedAt, endedAt);
  const rule = opts.verdictRule === undefined ? VERDICT_RULE : opts.verdictRule;
  const judge = rule === null ? undefined : VERDICT_RULES[rule];
  if (rule !== null && !judge) throw new Error(`Unknown verdict rule "${rule}"`);
  const verdict = judge?.({
    outcome: outcome,
    plan,
    observedP99Ms: aggregate.p99_ms,
    figures: results.figures!,
    thresholds: results.thresholds ?? [],
    preflight,
    alerts,
    decryptAtStart: activeAtStart,
    decryptAtEnd: activeAtEnd,
    drift: driftForVerdict(drift, startState.devices),
    startGate,
  });
  const draft: Omit<ReportData, "reportSha256"> = {
    version: 1,
    generatedAt: endedAt.toISOString(),
    meta: {
      runId: String(r.run_id),
      executionId: r.execution_id,
      planIdentifier: r.plan_identifier,
      planDisplayName: r.plan_display_name,
      planCatalogVersion: r.plan_catalog_version,
      planSnapshotSha256: r.plan_snapshot_sha256,
      durationS: Math.round((endedAt.getTime() - startedAt.getTime()) / 1000),
      startedAt: startedAt.toISOString(),
      endedAt: endedAt.toISOString(),
      outcome: outcome,
      notes: r.notes,
    },
    license: licenseTexts(r.license_id, { lab: r.lab_name ?? labName, customer: r.customer }),
    plan,
    topology: {
      deploymentMode: plan.deploymentMode,
      // Servers: the devices whose adapter is a server management controller's (capability test).
      ucsCount: startState.devices.filter((d) => serves(registry.adapters.get(d.vendor)?.adapter, CONTROLLER))
        .length,
      devices: startState.devices,
      ...(startState.inventory ? { inventory: startState.inventory } : {}),
      ...(startState.testbed ? { testbed: startState.testbed } : {}),
    },
    tlsDecrypt: {
      required: plan.tlsDecrypt,
      activeAtStart,
      activeAtEnd,
      alerts,
      resultsInvalidated: invalidated,
    },
    results,
    slo: {
      targetP99Ms: target,
      observedP99Ms: aggregate.p99_ms,
      pass: aggregate.p99_ms <= target && !invalidated,
      errorBudgetBurnedPct: budgetBurnedPct(slower),
      verdictNote: invalidated
        ? `Results invalidated: TLS decryption changed during the run (${
          alerts.map((a) => `${a.deviceHostname} ${a.from} to ${a.to} at ${a.at}`).join("; ")
        }); the measured latencies span the change and do not reflect the plan`
        : null,
      errorBudgetExactness: source === "k6-summary" ? "estimated" : "exact",
    },
    ...(verdict ? { verdict } : {}),
    ...(startGate ? { startGate } : {}),
    annexes: await annexesOf({
      preflight,
      startState,
      linked: opts.linked,
      alerts,
      endState,
      submitted,
      drift,
    }),
  };
  return await sealReport(draft);
}

/** The annexes of a report, in their order: the inputs as recorded and the drift, each with its hash. */
async function annexesOf(a: {
  preflight: PreflightResult;
  startState: StartState;
  linked: ComposeReportOptions["linked"];
  alerts: ComposeReportOptions["alerts"];
  endState: ComposeReportOptions["endState"];
  submitted: unknown;
  drift: unknown;
}): Promise<ReportData["annexes"]> {
  return [
    await jsonAnnex("preflight-at-start", "Pre-flight result at run start", a.preflight),
    await jsonAnnex(
      "lab-at-start",
      "Lab state at run start (devices, firewall TLS decryption)",
      a.startState,
    ),
    await jsonAnnex("snapshots", "Snapshots linked to the run", a.linked),
    await jsonAnnex("decrypt-alerts", "TLSDecryptModeChanged alerts", a.alerts),
    await jsonAnnex("lab-at-end", "Lab state at run end (firewall TLS decryption)", a.endState),
    await jsonAnnex("results-input", "Results as submitted (digest)", a.submitted),
    await jsonAnnex(
      "configuration-drift",
      "Configuration drift between run start and end (volatile paths left out)",
      a.drift,
    ),
  ];
}
