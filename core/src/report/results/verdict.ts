import type { Plan } from "../../plan.ts";
import type { PreflightResult } from "../../preflight/engine.ts";
import type { DecryptAlert, ResultFigures, StartGate, VerdictReason, VerdictValue } from "../types.ts";

/**
 * Identifies the rule below in every report that applies it (docs/runs.md). A report records the rule it
 * was judged by and is never re-judged, so a new input means a new identifier: `dutlab-verdict-1` is this
 * table without the `configuration-drift` row, and reports frozen under it keep saying so.
 */
export const VERDICT_RULE = "dutlab-verdict-2";

/** Share of the planned phases a run must cover to be judged (the load's duration against the plan's). */
export const MIN_COVERAGE = 0.95;

/** Everything the verdict reads. */
export interface VerdictInputs {
  outcome: string;
  plan: Plan;
  observedP99Ms: number;
  figures: ResultFigures;
  thresholds: Array<{ metric: string; expression: string; ok: boolean }>;
  preflight: PreflightResult;
  alerts: DecryptAlert[];
  decryptAtStart: "on" | "off" | "mixed" | "unknown";
  decryptAtEnd: "on" | "off" | "mixed" | "unknown";
  /** The run's configuration drift (annex `configuration-drift`), each entry with its device's role. */
  drift: VerdictDrift[];
  /**
   * How the start was gated (absent or null: ungated, as before gating existed). An override of a failed
   * pre-flight is named in the `preflight` reason's detail; it changes no effect.
   */
  startGate?: StartGate | null;
}

/** One drifted device label, as the verdict reads it. */
export interface VerdictDrift {
  deviceHostname: string;
  /** The device's role in the lab at start (null: none recorded). */
  deviceRole: string | null;
  endpointLabel: string;
  /** How many non-volatile changes the diff lists. */
  changeCount: number;
}

/**
 * The verdict's view of the drift annex: each drifted entry with its device's role from the lab at start
 * (the annex names devices by id; the plan's `dependsOn` names roles).
 */
export function driftForVerdict(
  annex: {
    drift: ReadonlyArray<
      { deviceId: string; deviceHostname: string; endpointLabel: string; changes: unknown[] }
    >;
  },
  devices: ReadonlyArray<{ id: string; deviceRole?: string | null }>,
): VerdictDrift[] {
  const role = new Map(devices.map((d) => [d.id, d.deviceRole ?? null]));
  return annex.drift.map((d) => ({
    deviceHostname: d.deviceHostname,
    deviceRole: role.get(d.deviceId) ?? null,
    endpointLabel: d.endpointLabel,
    changeCount: d.changes.length,
  }));
}

/** Severity order: the verdict is the most severe effect among the reasons. */
const ORDER: VerdictValue[] = ["invalid", "fail", "inconclusive", "pass"];

const pct = (x: number) =>
  `${Math.abs(x) < 1 && x !== 0 ? Number(x.toPrecision(2)) : Math.round(x * 1000) / 1000} %`;

/**
 * The overall verdict of a run and one reason per input (rule `dutlab-verdict-2`):
 *
 * | input | pass | fail | invalid | inconclusive |
 * | --- | --- | --- | --- | --- |
 * | `outcome` (operator) | passed | failed | aborted | |
 * | `slo` | p99 ≤ target | p99 > target | | |
 * | `error-rate` | ≤ plan's `maxErrorRatePct` | above it | | threshold set, failures unknown |
 * | `load-generator-thresholds` | all held | one crossed | | |
 * | `preflight` at start | passed | | | failed, skipped or errored checks |
 * | `decrypt-alerts` | none | | a TLSDecryptModeChanged alert | |
 * | `decrypt-config` at start and end | matches plan | | differs from plan (or mixed) | unknown |
 * | `coverage` | load ≥ 95 % of the plan's phases | | | shorter |
 * | `configuration-drift` | nothing the plan depends on drifted | | a label in the plan's `dependsOn` drifted | |
 *
 * `configuration-drift` is `invalid`, not `inconclusive`, because the run measured two configurations:
 * a firewall whose NTP source, decrypt rules or access rules changed mid-run was not the device the plan
 * describes for the whole run, and no amount of extra evidence turns that run into a pass of the planned
 * configuration; it has to be repeated. Drift only on labels the plan does not depend on has effect `none`
 * (listed in the detail and the annex), and so has any drift under a plan without `dependsOn`.
 *
 * The verdict is the most severe effect: `invalid` > `fail` > `inconclusive` > `pass`. An input that does
 * not apply (no threshold in the plan, no load-generator thresholds, a plan without phases) has effect
 * `none`.
 */
export function computeVerdict(
  i: VerdictInputs,
): { value: VerdictValue; rule: string; reasons: VerdictReason[] } {
  const reasons: VerdictReason[] = [];
  const add = (input: string, effect: VerdictReason["effect"], detail: string) =>
    reasons.push({ input, effect, detail });

  add(
    "outcome",
    i.outcome === "passed" ? "pass" : i.outcome === "failed" ? "fail" : "invalid",
    i.outcome === "aborted"
      ? "The operator aborted the run: the results cover an incomplete run"
      : `The operator declared the run ${i.outcome}`,
  );

  const target = i.plan.sloTargetP99Ms;
  add(
    "slo",
    i.observedP99Ms <= target ? "pass" : "fail",
    `p99 ${i.observedP99Ms} ms ${i.observedP99Ms <= target ? "≤" : ">"} target ${target} ms`,
  );

  errorRate(i, add);
  loadGeneratorThresholds(i, add);
  preflightReason(i, add);
  decryptAlerts(i, add);
  decryptConfig(i, add);
  coverage(i, add);
  configurationDrift(i, add);

  const value = ORDER.find((v) => reasons.some((r) => r.effect === v)) ?? "pass";
  return { value, rule: VERDICT_RULE, reasons };
}

/** Records one input's reason. */
type AddReason = (input: string, effect: VerdictReason["effect"], detail: string) => void;

/** The error rate against the plan's `maxErrorRatePct`. */
function errorRate(i: VerdictInputs, add: AddReason): void {
  const max = i.plan.maxErrorRatePct;
  const rate = i.figures.errorRatePct;
  if (max === undefined) add("error-rate", "none", "The plan sets no error-rate threshold");
  else if (!rate) {
    add(
      "error-rate",
      "inconclusive",
      `The plan allows at most ${pct(max)} failed requests, but the results do not say how many failed`,
    );
  } else {
    const failed = i.figures.failedRequests?.value;
    const of = i.figures.requests?.value;
    add(
      "error-rate",
      rate.value <= max ? "pass" : "fail",
      `${pct(rate.value)} of requests failed${
        failed !== undefined && of !== undefined ? ` (${failed} of ${of})` : ""
      }; ` +
        `the plan allows at most ${pct(max)}`,
    );
  }
}

/** The load generator's own thresholds. */
function loadGeneratorThresholds(i: VerdictInputs, add: AddReason): void {
  if (!i.thresholds.length) {
    add("load-generator-thresholds", "none", "The load generator reported no threshold");
  } else {
    const crossed = i.thresholds.filter((t) => !t.ok);
    add(
      "load-generator-thresholds",
      crossed.length ? "fail" : "pass",
      crossed.length
        ? `Crossed: ${crossed.map((t) => `${t.metric} ${t.expression}`).join(", ")}`
        : `All ${i.thresholds.length} held`,
    );
  }
}

/** The pre-flight at start, and a start gate overridden over it. */
function preflightReason(i: VerdictInputs, add: AddReason): void {
  const pf = i.preflight;
  const bad = pf.checks.filter((c) => !c.pass);
  const o = i.startGate?.override;
  add(
    "preflight",
    pf.pass ? "pass" : "inconclusive",
    (o
      ? `The run started over a failed pre-flight: the start gate (${
        i.startGate!.source === "plan" ? "the plan's startGate" : "requirePreflightPass"
      }) was overridden by ${o.by} (${o.role}) at ${o.at}, reason: ${JSON.stringify(o.reason)}. `
      : "") +
      (pf.pass ? `Pre-flight at start: ${pf.summary}` : `The lab was not ready at start: ${pf.summary}` +
        (bad.length
          ? ` (${bad.slice(0, 3).map((c) => `${c.checkId} on ${c.deviceHostname}: ${c.status}`).join("; ")}${
            bad.length > 3 ? `; ${bad.length - 3} more in annex preflight-at-start` : ""
          })`
          : "")),
  );
}

/** TLS decryption alerts during the run. */
function decryptAlerts(i: VerdictInputs, add: AddReason): void {
  add(
    "decrypt-alerts",
    i.alerts.length ? "invalid" : "pass",
    i.alerts.length
      ? `TLS decryption changed during the run (${
        i.alerts.map((a) => `${a.deviceHostname} ${a.from} to ${a.to} at ${a.at}`).join("; ")
      }): the measurements span the change`
      : "No TLSDecryptModeChanged alert during the run",
  );
}

/** TLS decryption at start and end against the plan. */
function decryptConfig(i: VerdictInputs, add: AddReason): void {
  const want = i.plan.tlsDecrypt;
  const states = [["start", i.decryptAtStart], ["end", i.decryptAtEnd]] as const;
  const differs = states.filter(([, s]) => s === "mixed" || ((s === "on" || s === "off") && s !== want));
  const unknown = states.filter(([, s]) => s === "unknown");
  add(
    "decrypt-config",
    differs.length ? "invalid" : unknown.length ? "inconclusive" : "pass",
    differs.length
      ? `The plan requires TLS decryption ${want}; it was ${
        differs.map(([at, s]) => `${s} at ${at}`).join(", ")
      }`
      : unknown.length
      ? `The plan requires TLS decryption ${want}; the firewalls' state was unknown at ${
        unknown.map(([at]) => at).join(" and ")
      }`
      : `TLS decryption ${want} at start and end, as the plan requires`,
  );
}

/** How much of the plan's timed phases the load covered. */
function coverage(i: VerdictInputs, add: AddReason): void {
  const planned = i.plan.phases.reduce((t, p) => t + Math.max(0, p.durationS), 0);
  const ran = i.figures.durationS;
  if (planned <= 0 || !ran) add("coverage", "none", "The plan has no timed phase");
  else {
    const share = ran.value / planned;
    add(
      "coverage",
      share >= MIN_COVERAGE ? "pass" : "inconclusive",
      `The load ran ${Math.round(ran.value)} s of the plan's ${planned} s (${
        Math.round(share * 1000) / 10
      } %; ` +
        `at least ${MIN_COVERAGE * 100} % needed)`,
    );
  }
}

/** Configuration drift, against what the plan depends on. */
function configurationDrift(i: VerdictInputs, add: AddReason): void {
  const deps = i.plan.dependsOn;
  const matters = (d: VerdictDrift) =>
    deps?.some((e) => e.deviceRole === d.deviceRole && e.labels.includes(d.endpointLabel)) ?? false;
  const hit = i.drift.filter(matters);
  const other = i.drift.filter((d) => !matters(d));
  const list = (ds: VerdictDrift[]) =>
    ds.map((d) =>
      `${d.deviceHostname} ${d.endpointLabel} (${d.changeCount} change${d.changeCount === 1 ? "" : "s"})`
    )
      .join(", ");
  if (hit.length) {
    add(
      "configuration-drift",
      "invalid",
      `The configuration the plan depends on changed during the run: ${list(hit)}; the measurements span ` +
        `the change (annex configuration-drift)` + (other.length ? `. Also changed: ${list(other)}` : ""),
    );
  } else if (other.length) {
    add(
      "configuration-drift",
      "none",
      `Changed during the run, but not what the plan depends on${
        deps ? "" : " (the plan names no dependency)"
      }: ${list(other)}`,
    );
  } else add("configuration-drift", "pass", "No configuration drift between run start and end");
}

/** A verdict as a report records it. */
export type Verdict = ReturnType<typeof computeVerdict>;

/**
 * The verdict rules this code can still apply, by the id a report records (a replay judges a report by the
 * rule it names, never by today's). `dutlab-verdict-1` is {@link computeVerdict}'s table without the
 * `configuration-drift` row (the only change of rule 2): rule 1 is applied by leaving that row out. Older
 * reports without a verdict name no rule.
 */
export const VERDICT_RULES: Readonly<Record<string, (i: VerdictInputs) => Verdict>> = {
  [VERDICT_RULE]: computeVerdict,
  "dutlab-verdict-1": (i) => {
    const reasons = computeVerdict({ ...i, drift: [] }).reasons.filter((r) =>
      r.input !== "configuration-drift"
    );
    const value = ORDER.find((v) => reasons.some((r) => r.effect === v)) ?? "pass";
    return { value, rule: "dutlab-verdict-1", reasons };
  },
};
