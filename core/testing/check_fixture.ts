/**
 * One fixture for a check's unit tests: the plan, devices, snapshots and evaluation context a check needs,
 * built the way the pre-flight engine builds them, so a check's `mod_test.ts` states only what its case is
 * about (vendor, payload, plan changes) and no test hand-builds the same objects again.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { AdapterDefinition, AdapterFacts } from "../src/adapter.ts";
import type { CheckDefinition, CheckDevice, CheckSnapshot } from "../src/check.ts";
import type { Plan } from "../src/plan.ts";
import { checkApplies, evaluateCheck } from "../src/preflight/evaluate.ts";
import type { CheckResult } from "../src/preflight/types.ts";

/** How one evaluation differs from the fixture's defaults. */
export interface FixtureRunOptions {
  /** The plan to evaluate under (default: the fixture's plan). */
  plan?: Plan;
  /** Fields of the device to change (e.g. `{ deviceRole: "switch" }`). */
  device?: Partial<CheckDevice>;
  /** How the evaluated snapshot differs from the default one (label: the check's; id "1"; collected `now`). */
  snapshot?: {
    /** Snapshot label; default: the check's `label`. */
    label?: string;
    /** Snapshot id; default `"1"`. */
    id?: string;
    /** Collection time; default: the fixture's `now`. */
    collectedAt?: Date;
    /** SHA-256 (hex) of the payload as stored; default: 64 zeros. */
    payloadSha256?: string;
  };
  /** Payloads of the check's `alsoReads` labels, by label; null: the device has no snapshot of it yet. */
  related?: Record<string, unknown>;
  /**
   * Facts to read with instead of the vendor's adapter's (a fixture reading). They stand for the adapter's in
   * the capability test too, so the check does not apply (null) unless they hold every fact it `needs`.
   */
  facts?: AdapterFacts;
  /** Evaluation time (default: the fixture's `now`). */
  now?: Date;
}

/** What {@link checkFixture} returns. */
export interface CheckFixture {
  /** The fixture's evaluation time (the `now` option, default 2026-11-21T10:00:00Z). */
  now: Date;
  /**
   * A plan that selects every vendor of the fixture's adapters with every role they take, and names the
   * check in `checks` when it is opt-in.
   */
  plan: Plan;
  /** The fixture's adapter of a vendor (undefined for a vendor it has none of). */
  adapter(
    vendor: string,
  ): Pick<AdapterDefinition, "vendorKey" | "labels" | "facts" | "deviceRoles"> | undefined;
  /** A device of the vendor: id `d-1`, hostname `dev-1`, no stored role (its adapter's default applies). */
  device(vendor: string, fields?: Partial<CheckDevice>): CheckDevice;
  /** The latest snapshot of the check's label for a device of the vendor, with this payload. */
  snapshot(vendor: string, payload: unknown, options?: FixtureRunOptions["snapshot"]): CheckSnapshot;
  /** Whether the check applies to a device of the vendor, as the pre-flight engine decides it. */
  applies(vendor: string, options?: { plan?: Plan; device?: Partial<CheckDevice> }): boolean;
  /**
   * Evaluate the check on a device of the vendor whose latest snapshot holds `payload`, exactly as
   * pre-flight does, reading through the vendor's adapter: null when the check does
   * not apply (the adapter lacks a fact the check `needs`, among others); else the result with its status,
   * detail and evidence. The check's `evaluate` sees each needed fact present (the engine's guarantee).
   */
  run(vendor: string, payload: unknown, options?: FixtureRunOptions): CheckResult | null;
}

/**
 * Build the fixture for one check's tests.
 *
 * @example
 * ```ts
 * import { checkFixture } from "@dutlab/core/testing";
 * import { defineCheck } from "@dutlab/core";
 * const check = defineCheck({
 *   id: "has-hostname", description: "The device reports a hostname", coreVersion: "^1.0.0",
 *   label: "system_info",
 *   evaluate: (s) => ({ pass: typeof (s.payload as { hostname?: unknown }).hostname === "string", detail: "" }),
 * });
 * const fx = checkFixture(check, {
 *   adapters: [{ vendorKey: "vendor-x", labels: ["system_info"], deviceRoles: ["switch"] }],
 * });
 * fx.applies("vendor-x"); // true
 * fx.run("vendor-x", { hostname: "sw-1" })?.status; // "pass"
 * ```
 */
export function checkFixture(
  check: CheckDefinition,
  options: {
    /**
     * The adapters the check is tested against (usually today's real ones; what the fixture reads of each:
     * its vendor key, labels, facts and roles); their vendors make the plan.
     */
    adapters?: readonly Pick<AdapterDefinition, "vendorKey" | "labels" | "facts" | "deviceRoles">[];
    /** Evaluation time, and the default `collectedAt` of snapshots. Default: 2026-11-21T10:00:00Z. */
    now?: Date;
    /** Members of the default plan to change (e.g. `{ tlsDecrypt: "on" }`). */
    plan?: Partial<Plan>;
  } = {},
): CheckFixture {
  const adapters = options.adapters ?? [];
  const now = options.now ?? new Date("2026-11-21T10:00:00Z");
  const plan: Plan = {
    identifier: "unit-plan",
    displayName: "Unit plan",
    description: "",
    tlsDecrypt: "off",
    sloTargetP99Ms: 100,
    deploymentMode: "inline-routed",
    phases: [],
    vendors: adapters.map((a) => a.vendorKey),
    deviceRoles: [...new Set(adapters.flatMap((a) => [...a.deviceRoles]))],
    ...(check.optIn ? { checks: [check.id] } : {}),
    parameters: {},
    ...options.plan,
  };
  const adapter = (vendor: string) => adapters.find((a) => a.vendorKey === vendor);
  const device = (vendor: string, fields: Partial<CheckDevice> = {}): CheckDevice => ({
    id: "d-1",
    hostname: "dev-1",
    vendor,
    deviceRole: null,
    ...fields,
  });
  const snapshot = (
    vendor: string,
    payload: unknown,
    o: FixtureRunOptions["snapshot"] = {},
  ): CheckSnapshot => ({
    id: o.id ?? "1",
    deviceId: "d-1",
    endpointLabel: o.label ?? check.label,
    vendor,
    payload,
    payloadSha256: o.payloadSha256 ?? "0".repeat(64),
    collectedAt: o.collectedAt ?? now,
  });
  return {
    now,
    plan,
    adapter,
    device,
    snapshot,
    applies: (vendor, o = {}) =>
      checkApplies(check, device(vendor, o.device), o.plan ?? plan, adapter(vendor)),
    run(vendor, payload, o = {}) {
      const a = adapter(vendor);
      const facts = o.facts ?? a?.facts ?? {};
      const related = check.alsoReads && Object.fromEntries(
        check.alsoReads.map((label) => {
          const p = o.related?.[label];
          return [label, p === null || p === undefined ? null : snapshot(vendor, p, { label })];
        }),
      );
      return evaluateCheck(
        check,
        device(vendor, o.device),
        o.plan ?? plan,
        snapshot(vendor, payload, o.snapshot),
        { now: o.now ?? now, facts, ...(related ? { related } : {}) },
        a && { labels: a.labels, deviceRoles: a.deviceRoles, facts },
      );
    },
  };
}

/** One row of a check's case table (see {@link checkCases}). */
export interface CheckCase {
  /** What the case is about; assertion messages name it. */
  name: string;
  /** Vendor key of the device the check runs on. */
  vendor: string;
  /** The payload of the check's label in the device's latest snapshot. */
  payload: unknown;
  /** How the run differs from the fixture's defaults (plan, device, snapshot, related labels, facts, now). */
  options?: FixtureRunOptions;
  /**
   * The result expected: `null` when the check does not apply; else its status, whether it passes (when
   * given) and its detail (a string is compared for equality, a RegExp must match).
   */
  expect: null | {
    /** The result's status. */
    status: CheckResult["status"];
    /** The result's `pass` (true only for `pass`). */
    pass?: boolean;
    /** The result's detail: equal to a string, or matching a RegExp. */
    detail?: string | RegExp;
  };
}

/**
 * Run a check's case table through its fixture: each case is evaluated with {@link CheckFixture.run} and its
 * result compared with the expected one; the first mismatch throws an assertion error naming the case.
 *
 * @example
 * ```ts
 * import { checkCases, checkFixture } from "@dutlab/core/testing";
 * import { defineCheck } from "@dutlab/core";
 * const check = defineCheck({
 *   id: "has-hostname", description: "The device reports a hostname", coreVersion: "^1.0.0",
 *   label: "system_info",
 *   evaluate: (s) => {
 *     const name = (s.payload as { hostname?: unknown }).hostname;
 *     return { pass: typeof name === "string", detail: `hostname ${String(name)}` };
 *   },
 * });
 * const fx = checkFixture(check, {
 *   adapters: [{ vendorKey: "vendor-x", labels: ["system_info"], deviceRoles: ["switch"] }],
 * });
 * checkCases(fx, [
 *   { name: "named", vendor: "vendor-x", payload: { hostname: "sw-1" }, expect: { status: "pass", detail: "hostname sw-1" } },
 *   { name: "unnamed", vendor: "vendor-x", payload: {}, expect: { status: "fail", pass: false, detail: /undefined/ } },
 *   { name: "no adapter", vendor: "vendor-y", payload: {}, expect: null },
 * ]);
 * ```
 */
export function checkCases(fx: CheckFixture, cases: readonly CheckCase[]): void {
  for (const c of cases) {
    const r = fx.run(c.vendor, c.payload, c.options);
    if (c.expect === null) {
      assert.equal(r, null, `${c.name}: expected the check not to apply`);
      continue;
    }
    assert.ok(r, `${c.name}: expected a result, the check did not apply`);
    assert.equal(r.status, c.expect.status, `${c.name}: status (detail: ${r.detail})`);
    if (c.expect.pass !== undefined) assert.equal(r.pass, c.expect.pass, `${c.name}: pass`);
    if (typeof c.expect.detail === "string") assert.equal(r.detail, c.expect.detail, `${c.name}: detail`);
    else if (c.expect.detail) assert.match(r.detail, c.expect.detail, `${c.name}: detail`);
  }
}
