import { type Kysely, sql } from "kysely";
import type { Database } from "./db/schema.ts";
import type { Registry } from "./registry.ts";
import type { Plan } from "./plan.ts";
import type { CheckContext, CheckDefinition, CheckDevice, CheckSnapshot } from "./check.ts";

/** The snapshot a check result cites: the same three values the snapshot listing returns for it. */
export interface Evidence {
  snapshotId: string;
  payloadSha256: string;
  collectedAt: string;
}

/** One check result (spec 2.4). */
export interface CheckResult {
  checkId: string;
  description: string;
  deviceId: string;
  deviceHostname: string;
  vendor: string;
  pass: boolean;
  /**
   * `pass`; `fail`; `skipped` (no snapshot of the label: `evidence` null); `error` (the check threw, met a
   * payload it cannot read or returned no valid outcome: a fail whose detail starts with `check error:`).
   */
  status: "pass" | "fail" | "skipped" | "error";
  detail: string;
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
}

const MAX_ERROR_TEXT = 300;

function message(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  return m.length > MAX_ERROR_TEXT ? `${m.slice(0, MAX_ERROR_TEXT)}…` : m;
}

/** Freeze a parsed payload so that a check cannot change what the next check reads. */
function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/**
 * Evaluate one check against one device exactly as the pre-flight engine does, without a database:
 * `null` when the check does not apply to the device and plan; `skipped` without a snapshot; `error` when
 * `appliesTo` or `evaluate` throws or `evaluate` returns no `{pass: boolean, detail: string}`; else the
 * check's own pass or fail. The payload is frozen before the check sees it.
 *
 * @example
 * ```ts
 * import { evaluateCheck } from "@dutlab/core/testing";
 * const r = evaluateCheck(check, device, plan, snapshot, { now: new Date(), facts: adapter.facts ?? {} });
 * assert.equal(r?.status, "pass");
 * ```
 */
export function evaluateCheck(
  check: CheckDefinition,
  device: CheckDevice,
  plan: Plan,
  snapshot: CheckSnapshot | null,
  ctx: CheckContext,
): CheckResult | null {
  const base = {
    checkId: check.id,
    description: check.description,
    deviceId: device.id,
    deviceHostname: device.hostname,
    vendor: device.vendor,
  };
  const evidence: Evidence | null = snapshot && {
    snapshotId: snapshot.id,
    payloadSha256: snapshot.payloadSha256,
    collectedAt: snapshot.collectedAt.toISOString(),
  };
  const error = (detail: string): CheckResult => ({
    ...base,
    pass: false,
    status: "error",
    detail: `check error: ${detail}`,
    evidence,
  });
  try {
    // A broken predicate must not hide the check (a lab would look ready): it is reported as an error.
    if (!check.appliesTo(device, plan)) return null;
  } catch (e) {
    return error(`appliesTo failed for this device (${message(e)})`);
  }
  if (!snapshot) {
    return {
      ...base,
      pass: false,
      status: "skipped",
      detail: `no ${check.label} snapshot of this device yet: take a snapshot, then re-run pre-flight`,
      evidence: null,
    };
  }
  let r: unknown;
  try {
    deepFreeze(snapshot.payload);
    r = check.evaluate({ ...snapshot, collectedAt: new Date(snapshot.collectedAt) }, plan, ctx);
  } catch (e) {
    return error(`could not evaluate the ${check.label} payload (${message(e)})`);
  }
  const o = r as { pass?: unknown; detail?: unknown } | null;
  if (typeof o !== "object" || o === null || typeof o.pass !== "boolean" || typeof o.detail !== "string") {
    return error("evaluate returned no {pass: boolean, detail: string} (checks are synchronous)");
  }
  return { ...base, pass: o.pass, status: o.pass ? "pass" : "fail", detail: o.detail, evidence };
}

/** Counts and the summary line of a list of results. */
export function summarize(
  plan: Pick<Plan, "identifier">,
  checks: CheckResult[],
  now: Date,
): PreflightResult {
  const passed = checks.filter((c) => c.status === "pass").length;
  const skipped = checks.filter((c) => c.status === "skipped").length;
  const errors = checks.filter((c) => c.status === "error").length;
  const failed = checks.length - passed - skipped;
  const pass = checks.length > 0 && passed === checks.length;
  const head = `${passed}/${checks.length} checks passed`;
  const summary = checks.length === 0
    ? `${head} — not ready for ${plan.identifier}: no enabled device takes part in the plan`
    : pass
    ? `${head} — ready for ${plan.identifier}`
    : `${head} — not ready for ${plan.identifier}: ${failed} failed${
      errors ? ` (${errors} could not be evaluated)` : ""
    }, ${skipped} skipped`;
  return {
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
}

/**
 * Evaluate the latest stored snapshots against a plan (spec 4.8).
 *
 * - Read-only: one SELECT, whatever the number of checks and devices (enabled devices joined with their
 *   latest snapshot of every label a check reads). It never collects, never contacts a device, never writes.
 * - Enabled devices only; one result per (check, device) the check applies to, checks in registry order,
 *   devices by hostname.
 * - `pass` is true only when at least one check ran and every check passed: a skipped check (no snapshot)
 *   means the lab is not known to be ready, so it makes `pass` false too.
 * - A check that throws gives an `error` result (counted in `checksFailed`), never an exception here.
 *
 * @example
 * ```ts
 * const r = await runPreflight(db, registry, registry.plan("ngfw-throughput-decrypt-on")!);
 * console.log(r.summary); // "9/9 checks passed — ready for ngfw-throughput-decrypt-on"
 * ```
 */
export async function runPreflight(
  db: Kysely<Database>,
  registry: Registry,
  plan: Plan,
  now: Date = new Date(),
): Promise<PreflightResult> {
  const labels = [...new Set(registry.checks.map((c) => c.check.label))];
  if (labels.length === 0) return summarize(plan, [], now);
  const rows = await db.selectFrom("devices as d")
    .leftJoin(
      "snapshot_latest as l",
      (j) => j.onRef("l.device_id", "=", "d.id").on("l.endpoint_label", "in", labels),
    )
    .leftJoin("snapshots as s", (j) => j.on(sql`s.id`, "=", sql.ref("l.snapshot_id")))
    .leftJoin("snapshot_payloads as p", "p.sha256", "s.payload_sha256")
    .select([
      "d.id as device_id",
      "d.hostname",
      "d.vendor",
      "d.device_role",
      "l.endpoint_label",
      sql<string | null>`s.id::text`.as("snapshot_id"),
      "s.payload_sha256",
      "s.collected_at",
      "p.payload",
    ])
    .where("d.enabled", "=", true)
    .orderBy("d.hostname").orderBy("d.id")
    .execute();

  const devices = new Map<string, CheckDevice>();
  const snapshots = new Map<string, { id: string; sha: string; at: Date; payload: unknown }>();
  for (const r of rows) {
    if (!devices.has(r.device_id)) {
      devices.set(r.device_id, {
        id: r.device_id,
        hostname: r.hostname,
        vendor: r.vendor,
        deviceRole: r.device_role,
      });
    }
    if (r.snapshot_id && r.endpoint_label && r.payload_sha256 && r.collected_at && r.payload !== null) {
      snapshots.set(`${r.device_id}\0${r.endpoint_label}`, {
        id: r.snapshot_id,
        sha: r.payload_sha256,
        at: new Date(r.collected_at),
        // Parsed once and frozen: every check of this label reads the same, unchangeable value.
        payload: deepFreeze(JSON.parse(r.payload)),
      });
    }
  }

  const checks: CheckResult[] = [];
  for (const { check } of registry.checks) {
    for (const device of devices.values()) {
      const s = snapshots.get(`${device.id}\0${check.label}`);
      const snapshot: CheckSnapshot | null = s
        ? {
          id: s.id,
          deviceId: device.id,
          endpointLabel: check.label,
          vendor: device.vendor,
          payload: s.payload,
          payloadSha256: s.sha,
          collectedAt: s.at,
        }
        : null;
      const facts = registry.adapters.get(device.vendor)?.adapter.facts ?? {};
      const r = evaluateCheck(check, device, plan, snapshot, { now: new Date(now), facts });
      if (r) checks.push(r);
    }
  }
  return summarize(plan, checks, now);
}
