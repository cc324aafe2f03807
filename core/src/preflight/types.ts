/** The snapshot a check result cites: the same three values the snapshot listing returns for it. */
export interface Evidence {
  /** Id of the snapshot the result rests on. */
  snapshotId: string;
  /** SHA-256 (hex) of that snapshot's payload. */
  payloadSha256: string;
  /** When the snapshot was collected (ISO 8601). */
  collectedAt: string;
}

/** One check result (spec 2.4). */
export interface CheckResult {
  /** Id of the check that was evaluated. */
  checkId: string;
  /** The check's one-line description. */
  description: string;
  /** Id of the device it was evaluated on (UUID). */
  deviceId: string;
  /** That device's host name. */
  deviceHostname: string;
  /** That device's vendor key. */
  vendor: string;
  /** True only for status `pass`. */
  pass: boolean;
  /**
   * `pass`; `fail`; `skipped` (no snapshot of the label: `evidence` null); `error` (the check threw, met a
   * payload it cannot read or returned no valid outcome: a fail whose detail starts with `check error:`).
   */
  status: "pass" | "fail" | "skipped" | "error";
  /** One line: what the check found, or why it was skipped or could not read the payload. */
  detail: string;
  /** The snapshot the result rests on; null when skipped. */
  evidence: Evidence | null;
}

/** Pre-flight result (spec 2.4). `checksRun` = `checksPassed` + `checksFailed` + `checksSkipped`. */
export interface PreflightResult {
  planIdentifier: string;
  ranAt: string;
  checksRun: number;
  checksPassed: number;
  /** Plain fails and errors. */
  checksFailed: number;
  checksSkipped: number;
  pass: boolean;
  checks: CheckResult[];
  summary: string;
  /**
   * The moment the lab was evaluated as of (request `asOf`): the newest snapshot at or before it per device
   * and label, `snapshot-fresh` judged against it. Absent: the lab as it stands now.
   */
  asOf?: string;
  /** Present when the request filtered devices, checks or tags (docs/preflight.md). */
  selection?: SelectionReport;
}

/** What a filtered pre-flight evaluated and what the filter left out. */
export interface SelectionReport {
  /** The filters as given (hostnames and ids as sent), null when absent. */
  devices: string[] | null;
  checks: string[] | null;
  tags: string[] | null;
  /**
   * The (check, device) pairs the whole plan evaluates that the selection left out, and the devices and checks
   * they name. Non-zero `pairs`: the result is no readiness verdict for the plan and `pass` is false.
   */
  excluded: { pairs: number; devices: string[]; checks: string[] };
  /** True when the selection left out nothing the plan evaluates (`excluded.pairs` is 0). */
  complete: boolean;
}

/** A pre-flight request's filters, resolved against the registry and the devices (see {@link resolveSelection}). */
export interface Selection {
  /** Device ids to evaluate (the named devices, narrowed by the tags); null: every enabled device. */
  deviceIds: Set<string> | null;
  /** Check ids to evaluate; null: every check. */
  checkIds: Set<string> | null;
  /** The filters as the request gave them. */
  given: { devices: string[] | null; checks: string[] | null; tags: string[] | null };
}

/** How a pre-flight reads and filters the lab (all optional: the whole plan, the lab as it stands now). */
export interface PreflightOptions {
  /** Evaluate the lab as of this moment (newest snapshot at or before it per device and label). */
  asOf?: Date;
  /** Only these devices and checks (from {@link resolveSelection}). */
  selection?: Selection;
}

/** One (device, check, label) triple a dry run names, with the snapshot it would read. */
export interface PlannedRead {
  checkId: string;
  deviceId: string;
  deviceHostname: string;
  vendor: string;
  label: string;
  /** `evidence`: the label the result cites; `related`: a further label the check reads (`alsoReads`). */
  reads: "evidence" | "related";
  /** The snapshot it would read, null when none (the check would be skipped, or read `null` as related). */
  snapshot: Evidence | null;
}

/** A dry run's answer: what a pre-flight would evaluate and read, without evaluating (docs/preflight.md). */
export interface PreflightPlan {
  planIdentifier: string;
  dryRun: true;
  ranAt: string;
  asOf?: string;
  /** Distinct (check, device) pairs that would be evaluated. */
  evaluations: number;
  /** Of those, the pairs without a snapshot of the check's label (they would be skipped). */
  wouldSkip: number;
  reads: PlannedRead[];
  summary: string;
  selection?: SelectionReport;
}
