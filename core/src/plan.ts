import { z } from "zod";

/** One phase of a test plan's load profile. */
export interface PlanPhase {
  /** Phase name shown in the report (e.g. `ramp`, `sustained peak`). */
  name: string;
  /** Duration of the phase, in seconds. */
  durationS: number;
  /** Offered load, e.g. `{ "connectionsPerSecond": 2000, "throughputGbps": 8 }`. */
  load: Record<string, number | string>;
}

/** A test plan from the catalog. Parameters are frozen into a run at its start. */
export interface Plan {
  /** Stable key of the plan in its catalog (what requests and runs name). */
  identifier: string;
  /** Human-readable name shown in the UI and the report. */
  displayName: string;
  /** What the plan tests, in a sentence or two. */
  description: string;
  /** Whether the firewalls must decrypt TLS during the run. */
  tlsDecrypt: "on" | "off";
  /** Service-level target for the 99th-percentile request latency, in milliseconds. */
  sloTargetP99Ms: number;
  /**
   * Highest acceptable share of failed requests, in percent, for the run's verdict (docs/runs.md).
   * Absent: the plan sets no error-rate threshold.
   */
  maxErrorRatePct?: number;
  /** How the firewalls sit in the path (catalog wording, e.g. `inline-routed`); the report's topology shows it. */
  deploymentMode: string;
  /** The load profile, in the order the phases run. */
  phases: PlanPhase[];
  /**
   * Optional narrowing to vendors: when present, only enabled devices of these vendor keys take part. Absent
   * (the catalog's plans since catalogVersion 8): every device whose role is in `deviceRoles` takes part,
   * whatever its vendor, and a check applies to it when its adapter serves the check (docs/architecture.md
   * "Capabilities, not vendor keys"), so a new adapter joins the plans with no edit to them. Frozen plans of older runs
   * carry the list they were started with.
   */
  vendors?: string[];
  /** Device roles taking part: devices are selected by role, then checks by capability. */
  deviceRoles: string[];
  /** Opt-in checks (`CheckDefinition.optIn`) this plan runs; absent: none. */
  checks?: string[];
  /**
   * What the plan's measurements depend on: per device role, the snapshot labels whose (non-volatile) change
   * during a run means the run did not test the planned configuration. Drift on these labels makes the
   * verdict input `configuration-drift` `invalid`; drift elsewhere is reported with effect `none`
   * (docs/runs.md). Absent: the plan names no dependency and drift never affects the verdict.
   */
  dependsOn?: PlanDependency[];
  /**
   * `preflight-pass`: a run of this plan starts only when its pre-flight passes (an admin may override with a
   * reason, docs/runs.md "Gating the start"). Absent: the start is not gated unless the request asks
   * (`requirePreflightPass`).
   */
  startGate?: "preflight-pass";
  /** Further parameters shown in the report's parameter table. */
  parameters: Record<string, string | number | boolean>;
}

/** One entry of {@link Plan.dependsOn}: the labels of the devices of one role that the plan depends on. */
export interface PlanDependency {
  /** A device role (`ngfw`, `switch`, `bmc`): every device of the lab at start with that role. */
  deviceRole: string;
  /** Snapshot labels of those devices (as their adapters collect them). */
  labels: string[];
}

/** What {@link PlanDependsOnValidator.safeParse} returns: the entries, or the problems found, each at its path. */
export type PlanDependsOnParse =
  | { success: true; data: PlanDependency[] }
  | { success: false; error: { issues: Array<{ path: PropertyKey[]; message: string }> } };

/** A validator of {@link Plan.dependsOn}: the one method of the underlying zod schema that callers use. */
export interface PlanDependsOnValidator {
  /** Validate `value` without throwing: entries need a non-empty `deviceRole`, unique non-empty `labels`, one entry per role. */
  safeParse(value: unknown): PlanDependsOnParse;
}

/**
 * The shape of {@link Plan.dependsOn}, checked when the registry loads a plan catalog (a bad entry stops
 * the start-up with PLAN_CATALOG rather than silently never counting drift).
 */
export const PlanDependsOnSchema: PlanDependsOnValidator = z.array(
  z.object({
    deviceRole: z.string().min(1),
    labels: z.array(z.string().min(1)).min(1).refine((l) => new Set(l).size === l.length, {
      message: "labels must be unique",
    }),
  }).strict(),
).refine((d) => new Set(d.map((e) => e.deviceRole)).size === d.length, {
  message: "one entry per deviceRole",
});

/** A plan catalog, contributed by a plugin. */
export interface PlanCatalog {
  /** Version of the catalog; frozen into each run started from it. */
  catalogVersion: number;
  /** The plans, each with a unique `identifier`. */
  plans: Plan[];
}

/** A plugin module: the default export of `plugins/<name>/mod.ts`. */
export interface PluginDefinition {
  /** Set by {@link definePlugin}; the registry refuses a module listed as a plugin without it. */
  kind: "plugin";
  /** The plugin's name, as the manifest lists it. */
  name: string;
  /**
   * Semver range of `@dutlab/core` the plugin is written for; start-up fails (MODULE_CORE_VERSION) when this
   * core does not satisfy it.
   */
  coreVersion: string;
  /** A plugin may contribute the test-plan catalog (at most one enabled plugin does). */
  planCatalog?: PlanCatalog;
}

/** What a plugin module writes: its definition without `kind`, which {@link definePlugin} sets. */
export type PluginSpec = Omit<PluginDefinition, "kind">;

/**
 * Declare a plugin: returns the definition with `kind: "plugin"` set, so that the registry can refuse the
 * module when the manifest lists it as something else. Carries the types.
 *
 * @example
 * ```ts
 * export default definePlugin({ name: "lab-plans", coreVersion: "^1.0.0" });
 * ```
 */
export function definePlugin<const T extends PluginSpec>(
  def: T & { kind?: "plugin" },
): NoInfer<T> & { kind: "plugin" } {
  return { ...def, kind: "plugin" };
}
