import type { Kysely } from "kysely";
import type { Database } from "./db/schema.ts";
import type { Registry } from "./registry.ts";
import type { Plan } from "./plan.ts";
import { latestSnapshots } from "./snapshots.ts";

/** One check result (spec 2.4). */
export interface CheckResult {
  checkId: string;
  description: string;
  deviceId: string;
  deviceHostname: string;
  vendor: string;
  pass: boolean;
  /** `pass`, `fail`, `skipped` (no snapshot) or `error` (the payload could not be evaluated). */
  status: "pass" | "fail" | "skipped" | "error";
  detail: string;
  evidence: { snapshotId: string; payloadSha256: string; collectedAt: string } | null;
}

/** Pre-flight result (spec 2.4). */
export interface PreflightResult {
  planIdentifier: string;
  ranAt: string;
  checksRun: number;
  checksPassed: number;
  checksFailed: number;
  checksSkipped: number;
  pass: boolean;
  checks: CheckResult[];
  summary: string;
}

/**
 * Evaluate the latest stored snapshots against a plan. Read-only: it never collects, never contacts a
 * device, never writes. Enabled devices only. Two queries whatever the number of checks and devices.
 * `pass` is true only when at least one check ran and every check passed (skipped checks make it false).
 */
export async function runPreflight(
  db: Kysely<Database>,
  registry: Registry,
  plan: Plan,
  now: Date = new Date(),
): Promise<PreflightResult> {
  const devices = await db.selectFrom("devices").select(["id", "hostname", "vendor", "device_role"])
    .where("enabled", "=", true).orderBy("hostname").execute();
  const latest = await latestSnapshots(db, devices.map((d) => d.id));
  const byKey = new Map(latest.map((s) => [`${s.device_id}\0${s.endpoint_label}`, s]));
  const checks: CheckResult[] = [];
  for (const { check } of registry.checks) {
    for (const d of devices) {
      const device = { id: d.id, hostname: d.hostname, vendor: d.vendor, deviceRole: d.device_role };
      let applies: boolean;
      try {
        applies = check.appliesTo(device, plan);
      } catch {
        applies = false;
      }
      if (!applies) continue;
      const base = {
        checkId: check.id,
        description: check.description,
        deviceId: d.id,
        deviceHostname: d.hostname,
        vendor: d.vendor,
      };
      const s = byKey.get(`${d.id}\0${check.label}`);
      if (!s) {
        checks.push({
          ...base,
          pass: false,
          status: "skipped",
          detail: `no ${check.label} snapshot of this device yet: take a snapshot, then re-run pre-flight`,
          evidence: null,
        });
        continue;
      }
      const collectedAt = new Date(s.collected_at);
      const evidence = {
        snapshotId: s.id,
        payloadSha256: s.payload_sha256,
        collectedAt: collectedAt.toISOString(),
      };
      try {
        const facts = registry.adapters.get(d.vendor)?.adapter.facts ?? {};
        const r = check.evaluate(
          {
            id: s.id,
            deviceId: d.id,
            endpointLabel: s.endpoint_label,
            vendor: d.vendor,
            payload: JSON.parse(s.payload),
            payloadSha256: s.payload_sha256,
            collectedAt,
          },
          plan,
          { now, facts },
        );
        checks.push({
          ...base,
          pass: r.pass === true,
          status: r.pass === true ? "pass" : "fail",
          detail: r.detail,
          evidence,
        });
      } catch (e) {
        checks.push({
          ...base,
          pass: false,
          status: "error",
          detail: `check error: could not evaluate the ${check.label} payload (${
            (e as Error)?.message ?? e
          })`,
          evidence,
        });
      }
    }
  }
  const passed = checks.filter((c) => c.status === "pass").length;
  const skipped = checks.filter((c) => c.status === "skipped").length;
  const failed = checks.length - passed - skipped;
  const pass = checks.length > 0 && failed === 0 && skipped === 0;
  const summary = checks.length === 0
    ? `0/0 checks passed — not ready for ${plan.identifier}: no enabled device takes part in the plan`
    : pass
    ? `${passed}/${checks.length} checks passed — ready for ${plan.identifier}`
    : `${passed}/${checks.length} checks passed — not ready for ${plan.identifier}: ${failed} failed, ${skipped} skipped`;
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
