import type { Aggregate } from "./results/aggregate.ts";
import type { Plan } from "../plan.ts";
import type { InventoryEntry } from "../lab/state.ts";

/** One annex of a report: its body is a string (JSON text for data annexes) and `sha256` hashes it. */
export interface Annex {
  id: string;
  title: string;
  /** SHA-256 (lowercase hex) of the UTF-8 bytes of `body`. */
  sha256: string;
  /** Media type of `body`, e.g. `application/json`. */
  mediaType: string;
  body: string;
}

/** A `TLSDecryptModeChanged` alert raised during a run (spec 6). */
export interface DecryptAlert {
  name: "TLSDecryptModeChanged";
  at: string;
  deviceId: string;
  deviceHostname: string;
  from: "on" | "off";
  to: "on" | "off";
  snapshotId: string;
}

/** Where a figure of the report came from. */
export type FigureSource = "load-generator" | "service";

/**
 * One figure of the result: its value and unit, who produced it (`load-generator`: read as the load
 * generator reported it; `service`: computed by dutlab), whether it is `exact` or `estimated`, and how.
 */
export interface Figure {
  value: number;
  unit: string;
  source: FigureSource;
  exactness: "exact" | "estimated";
  basis: string;
}

/** The whole result besides latency; a figure is null when the input does not carry it. */
export interface ResultFigures {
  /** Duration of the load (s). */
  durationS: Figure | null;
  requests: Figure | null;
  requestsPerSecond: Figure | null;
  failedRequests: Figure | null;
  /** Failed requests in percent of all requests. */
  errorRatePct: Figure | null;
  bytesSent: Figure | null;
  bytesReceived: Figure | null;
  /** (bytes sent + bytes received) × 8 per second. */
  bitsPerSecond: Figure | null;
  iterations: Figure | null;
}

/** The overall verdict's values (README "Verdict"). */
export type VerdictValue = "pass" | "fail" | "invalid" | "inconclusive";

/** One input of the verdict rule and what it contributed. */
export interface VerdictReason {
  /** `outcome`, `slo`, `error-rate`, `load-generator-thresholds`, `preflight`, `decrypt-alerts`, `decrypt-config`, `coverage`. */
  input: string;
  /** What this input alone would make the verdict; `none` when the input does not apply. */
  effect: VerdictValue | "none";
  detail: string;
}

/**
 * How a run's start was gated on its pre-flight (README "Test runs", "Gating the start"). Runs started before
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
  version: 1;
  generatedAt: string;
  /** SHA-256 of the RFC 8785 canonical JSON of this object without `reportSha256`. */
  reportSha256: string;
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
  plan: Plan;
  topology: {
    deploymentMode: string;
    ucsCount: number;
    devices: Array<{ id: string; hostname: string; vendor: string; deviceRole: string | null }>;
    /** Device inventory at start, per device id (model, software version, serial number). */
    inventory?: Record<string, InventoryEntry>;
  };
  tlsDecrypt: {
    required: "on" | "off";
    /** `on`/`off` when every firewall with a known state agrees, `mixed` when they differ. */
    activeAtStart: "on" | "off" | "mixed" | "unknown";
    activeAtEnd: "on" | "off" | "mixed" | "unknown";
    alerts: DecryptAlert[];
    /** True when a decrypt-mode change during the run invalidated the results. */
    resultsInvalidated: boolean;
  };
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
  slo: {
    targetP99Ms: number;
    observedP99Ms: number;
    pass: boolean;
    /**
     * Error budget burned in percent. A p99 objective allows 1% of requests to be slower than
     * `targetP99Ms`; burned = (share of requests slower than the target) / 1% × 100. Exact for raw
     * samples; for a k6 summary it is interpolated from the exported percentiles (README "Reports").
     */
    errorBudgetBurnedPct: number;
    /** Why `pass` is false even if the latency met the target (e.g. invalidated by a decrypt change). */
    verdictNote: string | null;
    /** Whether `errorBudgetBurnedPct` is exact (raw samples) or estimated (k6 quantiles). */
    errorBudgetExactness?: "exact" | "estimated";
  };
  /**
   * The overall verdict from every input that can undermine a result, with one reason per input
   * (README "Verdict"). Absent in reports frozen before it existed.
   */
  verdict?: { value: VerdictValue; rule: string; reasons: VerdictReason[] };
  /** How the start was gated on pre-flight (issue 29). Absent in reports frozen before it existed. */
  startGate?: StartGate;
  annexes: Annex[];
}
