import type { Plan } from "../plan.ts";
import type { CheckContext, CheckDefinition, CheckDevice, CheckSnapshot } from "../check.ts";
import type { AdapterDefinition } from "../adapter.ts";
import type { FactName } from "../capability.ts";
import { planSelects, serves } from "../capability.ts";
import type { CheckResult, Evidence, PreflightResult, SelectionReport } from "./types.ts";

const MAX_ERROR_TEXT = 300;

function message(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  return m.length > MAX_ERROR_TEXT ? `${m.slice(0, MAX_ERROR_TEXT)}…` : m;
}

/** Freeze a payload so that a check cannot change what the next check reads. */
function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/** Whether a check applies to a device and plan: a boolean, or what `appliesTo` threw. */
export type Applies = boolean | { threw: string };

/**
 * Whether a check applies to a device and plan: the plan selects the device (role and vendor), the device's
 * adapter serves the check (collects its label, offers the facts it needs), then the check's own
 * `appliesTo` if it has one.
 */
export function applies(
  check: CheckDefinition,
  device: CheckDevice,
  plan: Plan,
  adapter: Pick<AdapterDefinition, "labels" | "facts" | "deviceRoles"> | undefined,
): Applies {
  if (check.optIn && !(plan.checks ?? []).includes(check.id)) return false;
  if (!planSelects(plan, device, adapter?.deviceRoles[0] ?? null) || !serves(adapter, check)) return false;
  if (!check.appliesTo) return true;
  try {
    return !!check.appliesTo(device, plan);
  } catch (e) {
    return { threw: message(e) };
  }
}

/**
 * Evaluate one check against one device exactly as the pre-flight engine does, without a database:
 * `null` when the check does not apply to the device and plan (the plan does not select the device, the
 * adapter does not serve the check, or `appliesTo` says no; without `adapter`, the label counts as
 * collected and `ctx.facts` as the offered facts); `skipped` without a snapshot; `error` when
 * `appliesTo` or `evaluate` throws, `ctx.facts` lacks a fact the check `needs` (`vendor V offers no F
 * reading`) or `evaluate` returns no `{pass: boolean, detail: string}`; else the
 * check's own pass or fail. The payload is frozen before the check sees it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { AdapterDefinition, CheckDefinition, CheckDevice, CheckSnapshot, Plan } from "@dutlab/core";
 * // The values a caller has; the example type-checks (deno check --doc) and is not run.
 * async function example(check: CheckDefinition, device: CheckDevice, plan: Plan, snapshot: CheckSnapshot, adapter: AdapterDefinition) {
 *   const r = evaluateCheck(check, device, plan, snapshot, { now: new Date(), facts: adapter.facts ?? {} });
 *   assert.equal(r?.status, "pass");
 * }
 * ```
 */
export function evaluateCheck(
  check: CheckDefinition,
  device: CheckDevice,
  plan: Plan,
  snapshot: CheckSnapshot | null,
  ctx: CheckContext,
  adapter?: Pick<AdapterDefinition, "labels" | "facts" | "deviceRoles">,
): CheckResult | null {
  const a = applies(
    check,
    device,
    plan,
    adapter ?? { labels: [check.label, ...(check.alsoReads ?? [])], facts: ctx.facts, deviceRoles: [] },
  );
  if (a === false) return null;
  const view = () => {
    deepFreeze(snapshot!.payload);
    return { ...snapshot!, collectedAt: new Date(snapshot!.collectedAt) };
  };
  const evidence = snapshot && {
    snapshotId: snapshot.id,
    payloadSha256: snapshot.payloadSha256,
    collectedAt: snapshot.collectedAt.toISOString(),
  };
  return evaluateApplicable({ check, device, plan, evidence, view, ctx, applied: a });
}

/**
 * Whether a check applies to a device of an adapter (undefined: the vendor has no enabled adapter) under a
 * plan, as the pre-flight engine decides it: the plan selects the device, the adapter serves the check, and
 * the check's `appliesTo` (if any) does not say no.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { AdapterDefinition, CheckDefinition, Plan } from "@dutlab/core";
 * // The values a caller has; the example type-checks (deno check --doc) and is not run.
 * async function example(check: CheckDefinition, plan: Plan, adapter: AdapterDefinition) {
 *   assert.equal(checkApplies(check, { id: "d", hostname: "fw", vendor: "x", deviceRole: null }, plan, adapter), true);
 * }
 * ```
 */
export function checkApplies(
  check: CheckDefinition,
  device: CheckDevice,
  plan: Plan,
  adapter: Pick<AdapterDefinition, "labels" | "facts" | "deviceRoles"> | undefined,
): boolean {
  return applies(check, device, plan, adapter) !== false;
}

/** One (check, device) evaluation once `appliesTo` has answered, as {@link evaluateApplicable} takes it. */
export interface Applicable {
  check: CheckDefinition;
  device: CheckDevice;
  plan: Plan;
  /** The snapshot the result cites; null without a snapshot of the check's label (`skipped`). */
  evidence: Evidence | null;
  /** Builds the snapshot the check evaluates, a fresh object whose payload is frozen. */
  view: () => CheckSnapshot;
  ctx: CheckContext;
  /** What `appliesTo` answered (anything but `false`). */
  applied: true | { threw: string };
}

/** The rest of `evaluateCheck` once `appliesTo` has answered. */
export function evaluateApplicable(
  { check, device, plan, evidence, view, ctx, applied }: Applicable,
): CheckResult {
  const base = {
    checkId: check.id,
    description: check.description,
    deviceId: device.id,
    deviceHostname: device.hostname,
    vendor: device.vendor,
  };
  const error = (detail: string): CheckResult => ({
    ...base,
    pass: false,
    status: "error",
    detail: `check error: ${detail}`,
    evidence,
  });
  // A broken predicate must not hide the check (a lab would look ready): it is reported as an error.
  if (applied !== true) return error(`appliesTo failed for this device (${applied.threw})`);
  if (!evidence) {
    return {
      ...base,
      pass: false,
      status: "skipped",
      detail: `no ${check.label} snapshot of this device yet: take a snapshot, then re-run pre-flight`,
      evidence: null,
    };
  }
  const seen = view();
  // The check's `needs` are typed as present in `ctx.facts`: a check carries no guard, the engine checks once.
  // Reached only when `ctx.facts` is not the adapter's own (the capability test has already required them).
  const missing = check.needs?.find((f) => !ctx.facts[f]);
  if (missing) {
    return error(
      `could not evaluate the ${check.label} payload (vendor ${seen.vendor} offers no ${missing} reading)`,
    );
  }
  let r: unknown;
  try {
    // Every fact in `needs` is present (checked above); a check reads only the facts it needs.
    r = check.evaluate(seen, plan, ctx as CheckContext<FactName>);
  } catch (e) {
    return error(`could not evaluate the ${check.label} payload (${message(e)})`);
  }
  const o = r as { pass?: unknown; detail?: unknown } | null;
  if (typeof o !== "object" || o === null || typeof o.pass !== "boolean" || typeof o.detail !== "string") {
    return error("evaluate returned no {pass: boolean, detail: string} (checks are synchronous)");
  }
  return { ...base, pass: o.pass, status: o.pass ? "pass" : "fail", detail: o.detail, evidence };
}

/**
 * Counts and the summary line of a list of results. With a `selection` the summary says the result is
 * filtered, and `pass` is true only when the selection left out nothing the plan evaluates
 * (docs/preflight.md: a filtered result never says a plan is ready when devices or checks it requires were left
 * out).
 */
export function summarize(
  plan: Pick<Plan, "identifier">,
  checks: CheckResult[],
  now: Date,
  opts: { asOf?: Date; selection?: SelectionReport } = {},
): PreflightResult {
  const passed = checks.filter((c) => c.status === "pass").length;
  const skipped = checks.filter((c) => c.status === "skipped").length;
  const errors = checks.filter((c) => c.status === "error").length;
  const failed = checks.length - passed - skipped;
  const sel = opts.selection;
  const allPassed = checks.length > 0 && passed === checks.length;
  const pass = allPassed && (!sel || sel.complete);
  const at = opts.asOf ? ` as of ${opts.asOf.toISOString()}` : "";
  const head = `${passed}/${checks.length} checks passed${sel ? " on a filtered selection" : ""}${at}`;
  const notReady = (why: string) => `${head} — not ready for ${plan.identifier}: ${why}`;
  const counts = `${failed} failed${errors ? ` (${errors} could not be evaluated)` : ""}, ${skipped} skipped`;
  let summary: string;
  if (sel && !sel.complete) {
    const left = sel.excluded;
    summary = `${head} — not a readiness verdict for ${plan.identifier}: the filter left out ${left.pairs} ` +
      `(check, device) pair(s) the plan requires (devices: ${left.devices.join(", ") || "none"}; checks: ${
        left.checks.join(", ") || "none"
      })${allPassed ? "" : `; in the selection ${counts}`}`;
  } else if (checks.length === 0) {
    summary = notReady(
      sel ? "no check of the selection applies" : "no enabled device takes part in the plan",
    );
  } else if (pass) {
    summary = `${head} — ready for ${plan.identifier}${
      sel ? " (the filter left out nothing it requires)" : ""
    }`;
  } else summary = notReady(counts);
  const result: PreflightResult = {
    planIdentifier: plan.identifier,
    ranAt: now.toISOString(),
    checksRun: checks.length,
    checksPassed: passed,
    checksFailed: failed,
    checksSkipped: skipped,
    pass,
    checks,
    summary,
  };
  if (opts.asOf) result.asOf = opts.asOf.toISOString();
  if (sel) result.selection = sel;
  return result;
}
