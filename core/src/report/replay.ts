/**
 * Replay (spec 4.12, docs/reports.md "Replay"): recompute, from a run's raw inputs alone (the frozen plan, the cited
 * snapshot payloads, the submitted results, the alerts), everything its report derived, with the very code
 * the service ran ({@link composeReport}, the pre-flight engine's `preflightOf`, `labStateOf`, the drift
 * and verdict rules), and compare each derived figure with the sealed one.
 *
 * No database here: the inputs come from an evidence bundle (`verify_report.ts --replay`, which bundles
 * this file) or from the database through `evidence.ts` (`POST /api/test-runs/{id}/replay`).
 *
 * @module
 */
import type { Registry } from "../registry.ts";
import type { Plan } from "../plan.ts";
import type { RunResults } from "../api/schemas.ts";
import type { CheckDevice } from "../check.ts";
import { type LabRead, type Latest, PayloadEntry } from "../lab/read.ts";
import { preflightOf, type PreflightResult } from "../preflight/engine.ts";
import { labStateOf } from "../lab/state.ts";
import type { StartState } from "../lab/state.ts";
import type { DriftSource, Snap } from "./results/drift.ts";
import { VERDICT_RULES } from "./results/verdict.ts";
import { jcsSha256, sha256Hex } from "../util/hash.ts";
import { composeReport, type LinkedSnapshot } from "./assemble.ts";
import { compare, isObj, type ReplayLine } from "./replay_compare.ts";

export type { ReplayLine } from "./replay_compare.ts";
import type { DecryptAlert, ReportData, StartGate } from "./types.ts";

/** One snapshot a lab read returned: the latest of its label for its device at that moment. */
export interface ReadSnapshot {
  deviceId: string;
  endpointLabel: string;
  snapshotId: string;
  payloadSha256: string;
  collectedAt: string;
  /**
   * `cited`: the report names this snapshot; `inferred`: it does not (a check's `alsoReads` label), and the
   * bundle took the last snapshot of the label collected at or before the read.
   */
  basis: "cited" | "inferred";
}

/** A lab read (at the run's start or end): the enabled devices and the snapshots it read. */
export interface LabReadInput {
  /** When the pre-flight evaluated the read (its `ranAt`; the end's read: the run's end). */
  at: string;
  devices: CheckDevice[];
  snapshots: ReadSnapshot[];
}

/** One drift lookup: the last snapshot of a device label collected at or before `at`, or null. */
export interface DriftRead {
  deviceId: string;
  endpointLabel: string;
  at: string;
  snapshot: Snap | null;
}

/** What the run recorded besides its inputs below (`inputs/run.json` of a bundle). */
export interface RunInput {
  runId: string;
  executionId: string;
  planIdentifier: string;
  planDisplayName: string;
  planCatalogVersion: number;
  licenseId: string;
  notes: string | null;
  labName: string;
  customer: string | null;
  startedAt: string;
  endedAt: string;
  outcome: string;
  /** How the start was gated (docs/runs.md "Gating the start"); absent or null: ungated, or a bundle made before
   * gating existed. */
  startGate?: StartGate | null;
}

/** Everything a replay reads (the files under `inputs/` and `payloads/` of an evidence bundle). */
export interface ReplayInputs {
  run: RunInput;
  plan: Plan;
  /** The results as submitted; null when the run stored none (reports frozen before they were kept). */
  results: RunResults | null;
  alerts: DecryptAlert[];
  labAtStart: LabReadInput;
  labAtEnd: LabReadInput;
  linkedSnapshots: LinkedSnapshot[];
  driftReads: DriftRead[];
  /** Payload texts by the SHA-256 their file is named by. */
  payloads: Map<string, string>;
}

/** The outcome of a replay. `exitCode`: 0 reproduced, 1 something differs, 3 partly not reproducible. */
export interface ReplayResult {
  lines: ReplayLine[];
  reproduced: boolean;
  exitCode: 0 | 1 | 3;
  replayedReportSha256: string | null;
}

/** A lab read rebuilt from its recorded snapshots and the bundle's payloads. */
function labRead(input: LabReadInput, payloads: Map<string, string>): LabRead {
  const latest = new Map<string, Map<string, Latest>>();
  const entries = new Map<string, PayloadEntry>();
  for (const s of input.snapshots) {
    let byDevice = latest.get(s.endpointLabel);
    if (!byDevice) latest.set(s.endpointLabel, byDevice = new Map());
    byDevice.set(s.deviceId, { id: s.snapshotId, sha: s.payloadSha256, at: new Date(s.collectedAt) });
    const text = payloads.get(s.payloadSha256);
    if (text !== undefined) entries.set(s.payloadSha256, new PayloadEntry(text, text.length));
  }
  return { devices: input.devices, latest, payloads: entries };
}

/** The drift's reads answered from the bundle (a lookup the bundle does not hold throws). */
function bundleDriftSource(reads: DriftRead[], payloads: Map<string, string>): DriftSource {
  const key = (d: string, l: string, t: string) => `${d}\n${l}\n${new Date(t).toISOString()}`;
  const byKey = new Map(reads.map((r) => [key(r.deviceId, r.endpointLabel, r.at), r.snapshot]));
  return {
    lastAt: (deviceId, label, when) => {
      const k = key(deviceId, label, when.toISOString());
      if (!byKey.has(k)) {
        return Promise.reject(
          new Error(`the bundle has no drift read of ${label} on ${deviceId} at ${when.toISOString()}`),
        );
      }
      return Promise.resolve(byKey.get(k) ?? undefined);
    },
    payload: (sha) => {
      const text = payloads.get(sha);
      return text === undefined
        ? Promise.reject(new Error(`the bundle has no payload ${sha}`))
        : Promise.resolve(JSON.parse(text));
    },
  };
}

/**
 * Replay a sealed report from its inputs and compare figure by figure. The verdict is judged under the
 * rule the sealed report names ({@link VERDICT_RULES}); a rule this code does not carry, or a report frozen
 * before verdicts, is said as not reproducible rather than judged by today's rule.
 *
 * @example
 * ```ts
 * import type { Registry } from "../registry.ts";
 * import type { ReportData } from "./types.ts";
 * // The values a caller has; the example type-checks (deno check --doc) and is not run.
 * async function example(registry: Registry, inputs: ReplayInputs, sealed: ReportData) {
 *   const r = await replayReport(registry, sealed, inputs);
 *   for (const l of r.lines) console.log(l.status, l.what, l.sealed, l.replayed);
 * }
 * ```
 */
export async function replayReport(
  registry: Registry,
  sealed: ReportData,
  inputs: ReplayInputs,
): Promise<ReplayResult> {
  const lines: ReplayLine[] = [];
  const line = (l: ReplayLine) => lines.push(l);

  const { planSha, verdictRule } = await checkInputs(line, sealed, inputs);

  const unreadable = resultsProblem(inputs.results);
  if (unreadable || !inputs.results) {
    line({ what: "submitted results", status: "not-reproducible", detail: unreadable ?? "none" });
    return finish(lines, null);
  }

  // The same derivations as the run's start and finish.
  const startRead = labRead(inputs.labAtStart, inputs.payloads);
  const preflight: PreflightResult = preflightOf(registry, inputs.plan).evaluate(
    startRead,
    new Date(inputs.labAtStart.at),
  );
  const startState: StartState = labStateOf(registry, startRead);
  const endState: StartState = labStateOf(registry, labRead(inputs.labAtEnd, inputs.payloads));
  const run = inputs.run;
  let replayed: ReportData;
  try {
    replayed = await composeReport({
      registry,
      run: {
        run_id: run.runId,
        execution_id: run.executionId,
        plan_identifier: run.planIdentifier,
        plan_display_name: run.planDisplayName,
        plan_catalog_version: run.planCatalogVersion,
        plan_json: inputs.plan,
        plan_snapshot_sha256: planSha,
        license_id: run.licenseId,
        notes: run.notes,
        started_at: new Date(run.startedAt),
        start_state_json: startState,
        preflight_json: preflight,
        lab_name: run.labName,
        customer: run.customer,
        start_gate_json: run.startGate ?? null,
      },
      outcome: run.outcome,
      results: inputs.results,
      endedAt: new Date(run.endedAt),
      endState,
      alerts: inputs.alerts,
      labName: run.labName,
      linked: inputs.linkedSnapshots,
      drift: bundleDriftSource(inputs.driftReads, inputs.payloads),
      verdictRule,
    });
  } catch (e) {
    line({ what: "replay", status: "not-reproducible", detail: (e as Error).message });
    return finish(lines, null);
  }
  const inferred = new Map<string, string[]>();
  for (const s of inputs.labAtStart.snapshots) {
    if (s.basis === "inferred") {
      inferred.set(s.deviceId, [...inferred.get(s.deviceId) ?? [], s.endpointLabel]);
    }
  }
  compare(lines, sealed, replayed, inferred);
  return finish(lines, replayed.reportSha256);
}

/**
 * The inputs themselves: every payload is what its name says, the plan is the one the report froze, the
 * verdict's rule is one this code carries. Returns the plan's hash and the rule to judge under (null: none).
 */
async function checkInputs(
  line: (l: ReplayLine) => void,
  sealed: ReportData,
  inputs: ReplayInputs,
): Promise<{ planSha: string; verdictRule: string | null }> {
  let badPayloads = 0;
  for (const [sha, text] of inputs.payloads) {
    const h = await sha256Hex(text);
    if (h !== sha) {
      badPayloads++;
      line({
        what: `payload ${sha}`,
        status: "input",
        sealed: sha,
        replayed: h,
        detail: "content hashes to",
      });
    }
  }
  if (!badPayloads) {
    line({ what: `payloads (${inputs.payloads.size}) named by their SHA-256`, status: "same" });
  }
  const cited = [...inputs.labAtStart.snapshots, ...inputs.labAtEnd.snapshots].map((s) => s.payloadSha256)
    .concat(inputs.driftReads.flatMap((d) => d.snapshot ? [d.snapshot.payload_sha256] : []));
  for (const sha of new Set(cited)) {
    if (!inputs.payloads.has(sha)) {
      line({ what: `payload ${sha}`, status: "input", detail: "cited but missing from the bundle" });
    }
  }
  const planSha = await jcsSha256(inputs.plan);
  line({
    what: "plan (meta.planSnapshotSha256)",
    status: planSha === sealed.meta.planSnapshotSha256 ? "same" : "differs",
    sealed: sealed.meta.planSnapshotSha256,
    replayed: planSha,
  });
  // The verdict's rule: the one the sealed report names.
  const sealedRule = sealed.verdict?.rule;
  let verdictRule: string | null = null;
  if (sealedRule === undefined) {
    line({
      what: "verdict",
      status: "not-reproducible",
      detail: "the sealed report has no verdict (frozen before verdicts existed, issue 19): no rule to apply",
    });
  } else if (!VERDICT_RULES[sealedRule]) {
    line({
      what: `verdict (rule ${sealedRule})`,
      status: "not-reproducible",
      detail: `this code carries the rules ${Object.keys(VERDICT_RULES).join(", ")}, not ${sealedRule}`,
    });
  } else verdictRule = sealedRule;
  return { planSha, verdictRule };
}

/** Why the stored results cannot be replayed, or null when they have one of the two submitted forms. */
function resultsProblem(r: unknown): string | null {
  if (r === null || r === undefined) {
    return "the run stored no submitted results (frozen before they were kept)";
  }
  const o = r as Record<string, unknown>;
  if (Array.isArray(o.latencySamplesMs) && o.latencySamplesMs.every((x) => typeof x === "number")) {
    return null;
  }
  const k6 = o.k6Summary as Record<string, unknown> | undefined;
  if (isObj(k6) && isObj(k6.metrics)) return null;
  return "the stored results are neither {latencySamplesMs: number[]} nor {k6Summary: {metrics}} " +
    "(a run frozen before its submitted results were kept whole)";
}

function finish(lines: ReplayLine[], replayedReportSha256: string | null): ReplayResult {
  const differs = lines.some((l) => l.status === "differs" || l.status === "input");
  const partial = lines.some((l) => l.status === "not-reproducible");
  return {
    lines,
    reproduced: !differs && !partial,
    exitCode: differs ? 1 : partial ? 3 : 0,
    replayedReportSha256,
  };
}

/** Replay lines as printable text: `same`, `DIFFERS`, `INPUT`, `--` (not sealed / not reproducible). */
export function describeReplay(lines: ReplayLine[]): string[] {
  return lines.map((l) => {
    const v = l.sealed !== undefined || l.replayed !== undefined
      ? ` sealed ${l.sealed ?? "(none)"} | replayed ${l.replayed ?? "(none)"}`
      : "";
    const d = l.detail ? ` (${l.detail})` : "";
    switch (l.status) {
      case "same":
        return `  same      ${l.what}${v ? `:${v}` : ""}`;
      case "differs":
        return `  DIFFERS   ${l.what}:${v}${d}`;
      case "input":
        return `  INPUT     ${l.what}: ${l.detail ?? ""}${l.replayed ? ` ${l.replayed}` : ""}`;
      case "not-sealed":
        return `  --        ${l.what}: not in the sealed report${
          l.replayed ? ` (replayed ${l.replayed})` : ""
        }${d}`;
      default:
        return `  NOT REPRODUCIBLE  ${l.what}:${v}${d}`;
    }
  });
}
