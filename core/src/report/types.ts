import type { Aggregate } from "./results/aggregate.ts";
import type { Plan } from "../plan.ts";
import type { InventoryEntry } from "../lab/state.ts";

/** One annex of a report: its body is a string (JSON text for data annexes) and `sha256` hashes it. */
export interface Annex {
  /** Annex id. */
  id: string;
  /** Annex title. */
  title: string;
  /** SHA-256 (lowercase hex) of the UTF-8 bytes of `body`. */
  sha256: string;
  /** Media type of `body`, e.g. `application/json`. */
  mediaType: string;
  /** The annex content. */
  body: string;
}

/** A `TLSDecryptModeChanged` alert raised during a run (spec 6). */
export interface DecryptAlert {
  /** The alert's name. */
  name: "TLSDecryptModeChanged";
  /** When the change was seen (ISO 8601). */
  at: string;
  /** The firewall's device id. */
  deviceId: string;
  /** The firewall's hostname. */
  deviceHostname: string;
  /** Decrypt mode before the change. */
  from: "on" | "off";
  /** Decrypt mode after the change. */
  to: "on" | "off";
  /** The snapshot that showed the change. */
  snapshotId: string;
}

/** Where a figure of the report came from. */
export type FigureSource = "load-generator" | "service";

/**
 * One figure of the result: its value and unit, who produced it (`load-generator`: read as the load
 * generator reported it; `service`: computed by dutlab), whether it is `exact` or `estimated`, and how.
 */
export interface Figure {
  /** The figure's value, in `unit`. */
  value: number;
  /** Unit of `value` (e.g. `s`, `requests`, `bytes`, `%`). */
  unit: string;
  /** Who produced the figure. */
  source: FigureSource;
  /** Whether the figure is exact or estimated. */
  exactness: "exact" | "estimated";
  /** How the figure was obtained, for a person. */
  basis: string;
}

/** The whole result besides latency; a figure is null when the input does not carry it. */
export interface ResultFigures {
  /** Duration of the load (s). */
  durationS: Figure | null;
  /** Requests completed. */
  requests: Figure | null;
  /** Requests per second. */
  requestsPerSecond: Figure | null;
  /** Requests that failed. */
  failedRequests: Figure | null;
  /** Failed requests in percent of all requests. */
  errorRatePct: Figure | null;
  /** Bytes sent by the load generator. */
  bytesSent: Figure | null;
  /** Bytes received by the load generator. */
  bytesReceived: Figure | null;
  /** (bytes sent + bytes received) × 8 per second. */
  bitsPerSecond: Figure | null;
  /** Iterations of the load script. */
  iterations: Figure | null;
}

/** The overall verdict's values (docs/runs.md). */
export type VerdictValue = "pass" | "fail" | "invalid" | "inconclusive";

/** One input of the verdict rule and what it contributed. */
export interface VerdictReason {
  /** `outcome`, `slo`, `error-rate`, `load-generator-thresholds`, `preflight`, `decrypt-alerts`, `decrypt-config`, `coverage`. */
  input: string;
  /** What this input alone would make the verdict; `none` when the input does not apply. */
  effect: VerdictValue | "none";
  /** Why, for a person. */
  detail: string;
}

/**
 * How a run's start was gated on its pre-flight (docs/runs.md, "Gating the start"). Runs started before
 * gating existed have none (their start was ungated).
 */
export interface StartGate {
  /** Whether the start required a passing pre-flight. */
  gated: boolean;
  /** What required it: the plan's `startGate`, the request's `requirePreflightPass`; null when ungated. */
  source: "plan" | "request" | null;
  /** Whether the pre-flight at start passed. */
  preflightPass: boolean;
  /** Set when a gated run was started over a failed pre-flight: who overrode the gate, when and why. */
  override: { reason: string; by: string; role: string; at: string } | null;
}

/** ReportData version 1 (spec 2.5). */
export interface ReportData {
  /** Format version. */
  version: 1;
  /** When the report was built (ISO 8601). */
  generatedAt: string;
  /** SHA-256 of the RFC 8785 canonical JSON of this object without `reportSha256`. */
  reportSha256: string;
  /** The run: ids, plan, timing (`durationS` in seconds; times ISO 8601), outcome and notes. */
  meta: {
    runId: string;
    executionId: string;
    planIdentifier: string;
    planDisplayName: string;
    planCatalogVersion: number;
    /** SHA-256 of the RFC 8785 canonical JSON of `plan`. */
    planSnapshotSha256: string;
    durationS: number;
    startedAt: string;
    endedAt: string;
    /** `passed`, `failed` or `aborted` (as reported by the operator at finish). */
    outcome: string;
    notes: string | null;
  };
  /** The report's license: who may use it and under which restrictions (in each report language). */
  license: {
    id: string;
    name: string;
    /** Who may use the report: the customer named at start, else the lab itself (internal use). */
    holder: string;
    /** The lab that issued the report (`DUT_LAB_NAME`). */
    issuer?: string;
    /** The customer named at the run's start, or null. */
    licensee?: string | null;
    restrictions: { en: string; "pt-BR": string; es: string };
  };
  /** The plan as it was at the run's start. */
  plan: Plan;
  /** The lab under test: deployment mode, UCS count and devices. */
  topology: {
    deploymentMode: string;
    ucsCount: number;
    devices: Array<{ id: string; hostname: string; vendor: string; deviceRole: string | null }>;
    /** Device inventory at start, per device id (model, software version, serial number). */
    inventory?: Record<string, InventoryEntry>;
    /** The testbed the run held (docs/reservations.md); absent for a run on the whole lab, as in older reports. */
    testbed?: string;
  };
  /** TLS decryption: the mode the plan requires, what the firewalls showed at start and end, alerts. */
  tlsDecrypt: {
    required: "on" | "off";
    /** `on`/`off` when every firewall with a known state agrees, `mixed` when they differ. */
    activeAtStart: "on" | "off" | "mixed" | "unknown";
    activeAtEnd: "on" | "off" | "mixed" | "unknown";
    alerts: DecryptAlert[];
    /** True when a decrypt-mode change during the run invalidated the results. */
    resultsInvalidated: boolean;
  };
  /** The load results: where they came from and their aggregate latency figures. */
  results: {
    source: "latencySamplesMs" | "k6-summary";
    aggregate: Aggregate;
    /** Provenance of `aggregate` (absent in reports frozen before it was recorded). */
    latencyProvenance?: { source: FigureSource; exactness: "exact" | "estimated"; basis: string };
    /** Which k6 JSON form was submitted. */
    k6Format?: "summary-export" | "handleSummary";
    figures?: ResultFigures;
    /** The load generator's checks (k6 `checks`), when given. */
    checks?: { passes: number; fails: number } | null;
    /** The load generator's own thresholds, when given. */
    thresholds?: Array<{ metric: string; expression: string; ok: boolean }>;
  };
  /** The latency objective: target and observed p99 in ms, and whether it was met. */
  slo: {
    targetP99Ms: number;
    observedP99Ms: number;
    pass: boolean;
    /**
     * Error budget burned in percent. A p99 objective allows 1% of requests to be slower than
     * `targetP99Ms`; burned = (share of requests slower than the target) / 1% × 100. Exact for raw
     * samples; for a k6 summary it is interpolated from the exported percentiles (docs/reports.md).
     */
    errorBudgetBurnedPct: number;
    /** Why `pass` is false even if the latency met the target (e.g. invalidated by a decrypt change). */
    verdictNote: string | null;
    /** Whether `errorBudgetBurnedPct` is exact (raw samples) or estimated (k6 quantiles). */
    errorBudgetExactness?: "exact" | "estimated";
  };
  /**
   * The overall verdict from every input that can undermine a result, with one reason per input
   * (docs/runs.md). Absent in reports frozen before it existed.
   */
  verdict?: { value: VerdictValue; rule: string; reasons: VerdictReason[] };
  /** How the start was gated on pre-flight (issue 29). Absent in reports frozen before it existed. */
  startGate?: StartGate;
  /** Evidence attached to the report (snapshots and submitted results), each with its SHA-256. */
  annexes: Annex[];
}
