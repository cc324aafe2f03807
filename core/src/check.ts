import type { AdapterFacts } from "./adapter.ts";
import type { FactName } from "./capability.ts";
import type { Plan } from "./plan.ts";

/** The device a check is asked about. */
export interface CheckDevice {
  id: string;
  hostname: string;
  vendor: string;
  deviceRole: string | null;
}

/** The snapshot a check evaluates: the latest one of its label for the device. */
export interface CheckSnapshot {
  id: string;
  deviceId: string;
  endpointLabel: string;
  vendor: string;
  payload: unknown;
  payloadSha256: string;
  collectedAt: Date;
}

/** What the engine hands an evaluation besides the snapshot and plan. */
export interface CheckContext {
  /** Evaluation time (one value for a whole pre-flight run). */
  now: Date;
  /** Readings of the snapshot vendor's adapter (empty when the adapter offers none). */
  facts: AdapterFacts;
  /**
   * The latest snapshot of the device for each label of the check's `alsoReads` (null: none yet). Absent
   * for a check that declares no `alsoReads`.
   */
  related?: Readonly<Record<string, CheckSnapshot | null>>;
}

/** Outcome of one evaluation. A fail is a value; throwing means the payload could not be read. */
export interface CheckOutcome {
  pass: boolean;
  detail: string;
}

/**
 * A pre-flight check: data only (spec 4.8 rule 5). Default export of `checks/<check-id>/mod.ts`.
 *
 * The check applies to a device when the plan selects the device (its role and vendor are among the plan's
 * `deviceRoles` and `vendors`), the device's adapter collects `label` and offers every fact in `needs`
 * (the capability test, `serves`), and `appliesTo`, when given, says yes. A check names no vendor.
 */
export interface CheckDefinition {
  /** Set by {@link defineCheck}; the registry refuses a module listed as a check without it. */
  kind: "check";
  id: string;
  description: string;
  coreVersion: string;
  /** The snapshot label the check needs. */
  label: string;
  /** The adapter facts (readings) the check calls; the check applies only where all are offered. */
  needs?: readonly FactName[];
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
  evaluate(snapshot: CheckSnapshot, plan: Plan, ctx: CheckContext): CheckOutcome;
}

/** What a check module writes: its definition without `kind`, which {@link defineCheck} sets. */
export type CheckSpec = Omit<CheckDefinition, "kind">;

/**
 * Declare a check: returns the definition with `kind: "check"` set, so that the registry can refuse the
 * module when the manifest lists it as something else. Carries the types.
 *
 * @example
 * ```ts
 * export default defineCheck({
 *   id: "ntp-source-configured", coreVersion: "^1.0.0",
 *   description: "At least one time server is configured", label: "ntp_config", needs: ["ntpServers"],
 *   evaluate: (s, _plan, { facts }) => {
 *     const n = facts.ntpServers!(s.payload).length;
 *     return { pass: n > 0, detail: `${n} time server(s) configured` };
 *   },
 * });
 * ```
 */
export function defineCheck<const T extends CheckSpec>(
  def: T & { kind?: "check" },
): NoInfer<T> & { kind: "check" } {
  return { ...def, kind: "check" };
}
