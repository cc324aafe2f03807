import type { AdapterFacts } from "./adapter.ts";
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
}

/** Outcome of one evaluation. A fail is a value; throwing means the payload could not be read. */
export interface CheckOutcome {
  pass: boolean;
  detail: string;
}

/** A pre-flight check: data only (spec 4.8 rule 5). Default export of `checks/<check-id>/mod.ts`. */
export interface CheckDefinition {
  kind: "check";
  id: string;
  description: string;
  coreVersion: string;
  /** The snapshot label the check needs. */
  label: string;
  appliesTo(device: CheckDevice, plan: Plan): boolean;
  evaluate(snapshot: CheckSnapshot, plan: Plan, ctx: CheckContext): CheckOutcome;
}

/**
 * Declare a check. An identity helper that carries the types.
 *
 * @example
 * ```ts
 * export default defineCheck({
 *   kind: "check", id: "ntp-source-configured", coreVersion: "^1.0.0",
 *   description: "At least one time server is configured", label: "ntp_config",
 *   appliesTo: () => true,
 *   evaluate: (s, _plan, { facts }) => {
 *     const n = facts.ntpServers!(s.payload).length;
 *     return { pass: n > 0, detail: `${n} time server(s) configured` };
 *   },
 * });
 * ```
 */
export function defineCheck<const T extends CheckDefinition>(def: T): T {
  return def;
}
