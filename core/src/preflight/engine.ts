import type { Kysely } from "kysely";
import type { Database } from "../db/schema.ts";
import type { Registry } from "../registry.ts";
import type { Plan } from "../plan.ts";
import type { CheckContext, CheckDefinition, CheckDevice, CheckSnapshot } from "../check.ts";
import { type LabRead, type LabWants, type Latest, readLab } from "../lab/read.ts";
import { type Applies, applies, evaluateApplicable, summarize } from "./evaluate.ts";
import type {
  CheckResult,
  PlannedRead,
  PreflightOptions,
  PreflightPlan,
  PreflightResult,
  Selection,
  SelectionReport,
} from "./types.ts";

export type {
  CheckResult,
  Evidence,
  PlannedRead,
  PreflightOptions,
  PreflightPlan,
  PreflightResult,
  Selection,
  SelectionReport,
} from "./types.ts";

/** A (check, device) pair visitor: `applied` true or what `appliesTo` threw; `selected`: the selection keeps it. */
type PairVisitor = (
  check: CheckDefinition,
  device: CheckDevice,
  applied: true | { threw: string },
  selected: boolean,
) => void;

/** The (check, device) pairs a plan evaluates over a device list, and what a selection leaves out of them. */
interface Pairs {
  /** Calls `f` for every (check, device) the plan evaluates. */
  each(devices: CheckDevice[], f: PairVisitor): void;
  /** What the selection left out of the plan's pairs, or undefined without a selection. */
  report(devices: CheckDevice[]): SelectionReport | undefined;
}

function pairsOf(registry: Registry, plan: Plan, selection?: Selection): Pairs {
  const defs = registry.checks.map((c) => c.check);
  const checkSelected = defs.map((c) => !selection?.checkIds || selection.checkIds.has(c.id));
  const deviceSelected = (d: CheckDevice) => !selection?.deviceIds || selection.deviceIds.has(d.id);
  // appliesTo needs only the device and the plan: asked once per device list, kept for the evaluation.
  let memo: { devices: CheckDevice[]; verdicts: Applies[][] } | undefined;
  const verdictsOf = (devices: CheckDevice[]): Applies[][] => {
    if (memo?.devices === devices) return memo.verdicts;
    const adapters = devices.map((d) => registry.adapters.get(d.vendor)?.adapter);
    const verdicts = defs.map((check) =>
      devices.map((device, j) => applies(check, device, plan, adapters[j]))
    );
    memo = { devices, verdicts };
    return verdicts;
  };
  /** Calls `f` for every (check, device) the plan evaluates; `selected`: whether the selection keeps it. */
  const eachPair = (devices: CheckDevice[], f: PairVisitor) => {
    const verdicts = verdictsOf(devices);
    defs.forEach((check, i) => {
      const row = verdicts[i]!; // verdictsOf: one row per check, one verdict per device
      devices.forEach((device, j) => {
        const applied = row[j]!;
        if (applied !== false) f(check, device, applied, checkSelected[i]! && deviceSelected(device));
      });
    });
  };
  /** What the selection left out of the plan's pairs, or undefined without a selection. */
  const report = (devices: CheckDevice[]): SelectionReport | undefined => {
    if (!selection) return undefined;
    let pairs = 0;
    const outDevices = new Set<string>();
    const outChecks = new Set<string>();
    eachPair(devices, (check, device, _applied, selected) => {
      if (selected) return;
      pairs++;
      if (!deviceSelected(device)) outDevices.add(device.hostname);
      if (selection.checkIds && !selection.checkIds.has(check.id)) outChecks.add(check.id);
    });
    return {
      ...selection.given,
      excluded: { pairs, devices: [...outDevices].sort(), checks: [...outChecks].sort() },
      complete: pairs === 0,
    };
  };
  return { each: eachPair, report };
}

/**
 * What the pre-flight reads: a label for a device only when a selected check of that label applies to it, or
 * when its appliesTo threw (the error result cites that snapshot).
 */
function wantsOf(pairs: Pairs): LabWants {
  return (devices) => {
    const wanted = new Map<string, Set<string>>();
    pairs.each(devices, (check, device, _applied, selected) => {
      if (!selected) return;
      for (const label of [check.label, ...(check.alsoReads ?? [])]) {
        let ids = wanted.get(label);
        if (!ids) wanted.set(label, ids = new Set());
        ids.add(device.id);
      }
    });
    return wanted;
  };
}

function evaluateRead(
  registry: Registry,
  plan: Plan,
  pairs: Pairs,
  { devices, latest, payloads }: LabRead,
  now: Date,
  asOf?: Date,
): PreflightResult {
  // Each distinct payload is parsed and frozen once, when a check first reads it: every check of every
  // device that reads it sees the same, unchangeable value, and a payload no check reads is never parsed.
  // Payloads are kept for later pre-flights (content-addressed and immutable, so always valid).
  const payloadOf = (sha: string): unknown => payloads.get(sha)!.value;
  const known = (sha: string) => payloads.has(sha);
  const facts = new Map(
    devices.map((d) => [d.vendor, registry.adapters.get(d.vendor)?.adapter.facts ?? {}]),
  );
  // Each instant's ISO text once: a poll batch's snapshots share the database clock of their write, and
  // `toISOString` was a tenth of the engine's own time when called per result.
  const isos = new Map<number, string>();
  const isoOf = (at: Date) => {
    const ms = at.getTime();
    let text = isos.get(ms);
    if (text === undefined) isos.set(ms, text = at.toISOString());
    return text;
  };
  // As of a moment, checks judge time against that moment (`snapshot-fresh`), not against now.
  const clock = asOf ?? now;
  const checks: CheckResult[] = [];
  pairs.each(devices, (check, device, applied, selected) => {
    if (!selected) return;
    const s = latest.get(check.label)?.get(device.id);
    const evidence = s && known(s.sha)
      ? { snapshotId: s.id, payloadSha256: s.sha, collectedAt: isoOf(s.at) }
      : null;
    const view = () => lazySnapshot(s!, device, check.label, payloadOf);
    const ctx: CheckContext = { now: new Date(clock), facts: facts.get(device.vendor)! };
    if (check.alsoReads) {
      const related: Record<string, CheckSnapshot | null> = {};
      for (const label of check.alsoReads) {
        const r = latest.get(label)?.get(device.id);
        related[label] = r && known(r.sha) ? lazySnapshot(r, device, label, payloadOf) : null;
      }
      ctx.related = related;
    }
    checks.push(evaluateApplicable({ check, device, plan, evidence, view, ctx, applied }));
  });
  return summarize(plan, checks, now, { asOf, selection: pairs.report(devices) });
}

function dryRunRead(
  plan: Plan,
  pairs: Pairs,
  { devices, latest }: LabRead,
  now: Date,
  asOf?: Date,
): PreflightPlan {
  const reads: PlannedRead[] = [];
  let evaluations = 0;
  let wouldSkip = 0;
  const hosts = new Set<string>();
  pairs.each(devices, (check, device, _applied, selected) => {
    if (!selected) return;
    evaluations++;
    hosts.add(device.id);
    [check.label, ...(check.alsoReads ?? [])].forEach((label, k) => {
      const s = latest.get(label)?.get(device.id);
      if (k === 0 && !s) wouldSkip++;
      reads.push({
        checkId: check.id,
        deviceId: device.id,
        deviceHostname: device.hostname,
        vendor: device.vendor,
        label,
        reads: k === 0 ? "evidence" : "related",
        snapshot: s ? { snapshotId: s.id, payloadSha256: s.sha, collectedAt: s.at.toISOString() } : null,
      });
    });
  });
  const sel = pairs.report(devices);
  const summary = `dry run: would evaluate ${evaluations} check(s) on ${hosts.size} device(s) for ` +
    `${plan.identifier}${asOf ? ` as of ${asOf.toISOString()}` : ""}; ${wouldSkip} without a snapshot ` +
    `would be skipped${
      sel
        ? `; filtered: the filter left out ${sel.excluded.pairs} (check, device) pair(s) the plan requires`
        : ""
    }`;
  const out: PreflightPlan = {
    planIdentifier: plan.identifier,
    dryRun: true,
    ranAt: now.toISOString(),
    evaluations,
    wouldSkip,
    reads,
    summary,
  };
  if (asOf) out.asOf = asOf.toISOString();
  if (sel) out.selection = sel;
  return out;
}

/**
 * The pre-flight of a plan as a reader of the lab: `wants` asks for the labels the checks that apply read
 * (asking `appliesTo`, once per device list), `evaluate` evaluates them over the read, `dryRun` names what
 * would be evaluated and read. {@link runPreflight} reads the lab for it alone; a run's start reads it
 * together with the run's lab state. A `selection` narrows the devices and checks evaluated; what the whole
 * plan would evaluate beyond it is reported in the result's `selection.excluded`.
 */
export function preflightOf(registry: Registry, plan: Plan, selection?: Selection): {
  wants: LabWants;
  evaluate(read: LabRead, now?: Date, asOf?: Date): PreflightResult;
  dryRun(read: LabRead, now?: Date, asOf?: Date): PreflightPlan;
} {
  const pairs = pairsOf(registry, plan, selection);
  return {
    wants: wantsOf(pairs),
    evaluate: (read, now = new Date(), asOf) => evaluateRead(registry, plan, pairs, read, now, asOf),
    dryRun: (read, now = new Date(), asOf) => dryRunRead(plan, pairs, read, now, asOf),
  };
}

/**
 * Evaluate the latest stored snapshots against a plan (spec 4.8).
 *
 * - Read-only, through {@link readLab}: at most three SELECTs whatever the number of checks and devices,
 *   in one read-only REPEATABLE READ transaction; only the (device, label) pairs a check applies to are
 *   fetched, and only the payloads not in {@link payloadCache}. It never collects, never contacts a
 *   device, never writes.
 * - Each distinct payload (by SHA-256) is parsed and frozen once, when a check first reads it, and shared
 *   by every check and device that reads it, in this and later pre-flights (kept in {@link payloadCache});
 *   evidence cites each device's own snapshot.
 * - Enabled devices only; one result per (check, device) the check applies to, checks in registry order,
 *   devices by hostname.
 * - `pass` is true only when at least one check ran and every check passed: a skipped check (no snapshot)
 *   means the lab is not known to be ready, so it makes `pass` false too.
 * - A check that throws gives an `error` result (counted in `checksFailed`), never an exception here.
 * - `opts.asOf`: the lab as of a past moment (newest snapshot at or before it per device and label, checks
 *   judging time against it); `opts.selection`: only some devices and checks ({@link resolveSelection}),
 *   and `pass` false when the selection left out anything the plan evaluates.
 *
 * @example
 * ```ts
 * import type { Kysely } from "kysely";
 * import type { Database } from "../db/schema.ts";
 * import type { Registry } from "../registry.ts";
 * // The values a caller has; the example type-checks (deno check --doc) and is not run.
 * async function example(db: Kysely<Database>, registry: Registry) {
 *   const r = await runPreflight(db, registry, registry.plan("ngfw-throughput-decrypt-on")!);
 *   console.log(r.summary); // "9/9 checks passed — ready for ngfw-throughput-decrypt-on"
 * }
 * ```
 */
export async function runPreflight(
  db: Kysely<Database>,
  registry: Registry,
  plan: Plan,
  now: Date = new Date(),
  opts: PreflightOptions = {},
): Promise<PreflightResult> {
  if (registry.checks.length === 0) return summarize(plan, [], now, { asOf: opts.asOf });
  const preflight = preflightOf(registry, plan, opts.selection);
  return preflight.evaluate(await readLab(db, [preflight.wants], { asOf: opts.asOf }), now, opts.asOf);
}

/**
 * A dry run of {@link runPreflight}: which (device, check, label) triples it would evaluate and which
 * snapshot each would read, without reading a payload or evaluating a check (two SELECTs).
 */
export async function planPreflight(
  db: Kysely<Database>,
  registry: Registry,
  plan: Plan,
  now: Date = new Date(),
  opts: PreflightOptions = {},
): Promise<PreflightPlan> {
  const preflight = preflightOf(registry, plan, opts.selection);
  const read = await readLab(db, [preflight.wants], { asOf: opts.asOf, payloads: false });
  return preflight.dryRun(read, now, opts.asOf);
}

/**
 * The snapshot a check evaluates (a fresh object per evaluation), whose `payload` is an accessor: the
 * shared frozen value, produced on first read (`snapshot-fresh` reads only `collectedAt`), or what the
 * check assigned to its own copy.
 */
function lazySnapshot(
  s: Latest,
  device: CheckDevice,
  label: string,
  payloadOf: (sha: string) => unknown,
): CheckSnapshot {
  let own: { value: unknown } | null = null;
  return {
    id: s.id,
    deviceId: device.id,
    endpointLabel: label,
    vendor: device.vendor,
    get payload() {
      return own ? own.value : payloadOf(s.sha);
    },
    set payload(value: unknown) {
      own = { value };
    },
    payloadSha256: s.sha,
    collectedAt: new Date(s.at),
  };
}
