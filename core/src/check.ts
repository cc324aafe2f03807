import type { AdapterFacts } from "./adapter.ts";
import type { FactName } from "./capability.ts";
import type { Plan } from "./plan.ts";

/** The device a check is asked about. */
export interface CheckDevice {
  /** Device id (UUID). */
  id: string;
  /** The device's host name as registered. */
  hostname: string;
  /** Vendor key of the device's adapter. */
  vendor: string;
  /** The device's role (`ngfw`, `switch`, `bmc`, ...), null when none is recorded. */
  deviceRole: string | null;
}

/** The snapshot a check evaluates: the latest one of its label for the device. */
export interface CheckSnapshot {
  /** Snapshot id (UUID). */
  id: string;
  /** Id of the device the snapshot was collected from. */
  deviceId: string;
  /** The label the snapshot was collected under (e.g. `ntp_config`). */
  endpointLabel: string;
  /** Vendor key of the adapter that collected it (selects the facts that read `payload`). */
  vendor: string;
  /** The collected payload, as the adapter returned it; read it through `ctx.facts`. */
  payload: unknown;
  /** SHA-256 of the stored payload (cited as evidence). */
  payloadSha256: string;
  /** When the poller collected the snapshot. */
  collectedAt: Date;
}

/**
 * The adapter facts an evaluation is handed: every fact in `N` (a check's `needs`) is present, the others
 * optional.
 */
export type NeededFacts<N extends FactName> =
  & AdapterFacts
  & { readonly [K in N]-?: NonNullable<AdapterFacts[K]> };

/**
 * What the engine hands an evaluation besides the snapshot and plan. `N`: the facts the check needs, typed
 * as present (the engine evaluates a check only when the snapshot vendor's adapter offers them all).
 */
export interface CheckContext<N extends FactName = never> {
  /** Evaluation time (one value for a whole pre-flight run). */
  now: Date;
  /**
   * Readings of the snapshot vendor's adapter (empty when the adapter offers none); the `needs` of the check
   * are present.
   */
  facts: NeededFacts<N>;
  /**
   * The latest snapshot of the device for each label of the check's `alsoReads` (null: none yet). Absent
   * for a check that declares no `alsoReads`.
   */
  related?: Readonly<Record<string, CheckSnapshot | null>>;
}

/** Outcome of one evaluation. A fail is a value; throwing means the payload could not be read. */
export interface CheckOutcome {
  /** True when the device meets the check. */
  pass: boolean;
  /** One line saying what was found, shown in the result and the report. */
  detail: string;
}

/**
 * A pre-flight check: data only (spec 4.8 rule 5). Default export of `checks/<check-id>/mod.ts`.
 *
 * The check applies to a device when the plan selects the device (its role and vendor are among the plan's
 * `deviceRoles` and `vendors`), the device's adapter collects `label` and offers every fact in `needs`
 * (the capability test, `serves`), and `appliesTo`, when given, says yes. A check names no vendor.
 *
 * `N` is the facts the check needs ({@link defineCheck} infers it from `needs`): `evaluate` sees them as
 * present in `ctx.facts`. The bare `CheckDefinition` is any check.
 */
export interface CheckDefinition<N extends FactName = FactName> {
  /** Set by {@link defineCheck}; the registry refuses a module listed as a check without it. */
  kind: "check";
  /** The check id: the name of its folder under `checks/`. */
  id: string;
  /** What the check asserts, in one line (shown with every result). */
  description: string;
  /**
   * Semver range of `@dutlab/core` the check is written for; start-up fails (MODULE_CORE_VERSION) when this
   * core does not satisfy it.
   */
  coreVersion: string;
  /** The snapshot label the check needs. */
  label: string;
  /**
   * The adapter facts (readings) the check calls; the check applies only where all are offered, and
   * `ctx.facts` holds each of them when `evaluate` runs.
   */
  needs?: readonly N[];
  /**
   * Further labels the check reads besides `label` (handed over in `ctx.related`); the check applies only
   * where the adapter collects them too. The result's evidence cites the `label` snapshot.
   */
  alsoReads?: readonly string[];
  /**
   * An opt-in check runs only under plans that name it in `checks`, so enabling it leaves every other plan's
   * pre-flight as it was.
   */
  optIn?: boolean;
  /** Optional further narrowing over device and plan, after the plan and capability tests. */
  appliesTo?(device: CheckDevice, plan: Plan): boolean;
  /**
   * Evaluate the check on the device's latest `label` snapshot under `plan`. Returns the outcome (a fail is a
   * value); throws when the payload cannot be read, which the engine reports as status `error`. The facts in
   * `needs` are present in `ctx.facts` (no guard needed).
   */
  evaluate(snapshot: CheckSnapshot, plan: Plan, ctx: CheckContext<N>): CheckOutcome;
}

/** What a check module writes: its definition without `kind`, which {@link defineCheck} sets. */
export type CheckSpec<N extends FactName = FactName> = Omit<CheckDefinition<N>, "kind">;

/**
 * Declare a check: returns the definition with `kind: "check"` set, so that the registry can refuse the
 * module when the manifest lists it as something else. Carries the types: the facts named in `needs` are
 * typed as present in `evaluate`'s `ctx.facts`, so a check calls them without a guard (the engine evaluates
 * a check only where they are offered, and reports an error itself if one is missing).
 *
 * @example
 * ```ts
 * export default defineCheck({
 *   id: "ntp-source-configured", coreVersion: "^1.0.0",
 *   description: "At least one time server is configured", label: "ntp_config", needs: ["ntpServers"],
 *   evaluate: (s, _plan, { facts }) => {
 *     const n = facts.ntpServers(s.payload).length;
 *     return { pass: n > 0, detail: `${n} time server(s) configured` };
 *   },
 * });
 * ```
 */
export function defineCheck<const N extends FactName = never, const T extends CheckSpec<N> = CheckSpec<N>>(
  def: T & CheckSpec<N> & { kind?: "check" },
): NoInfer<T> & CheckDefinition<N> {
  return { ...def, kind: "check" };
}
