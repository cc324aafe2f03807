import { jcsSha256, sha256Hex } from "../hash.ts";

/** One verification finding. */
export interface VerifyFinding {
  what: string;
  ok: boolean;
  expected?: string;
  actual?: string;
}

/**
 * Recompute every hash of a ReportData object: `reportSha256` (RFC 8785 canonical JSON of the report
 * without `reportSha256`), `meta.planSnapshotSha256` (canonical JSON of `plan`) and each annex's
 * `sha256` (UTF-8 bytes of `body`).
 */
export async function verifyReport(report: unknown): Promise<{ ok: boolean; findings: VerifyFinding[] }> {
  const findings: VerifyFinding[] = [];
  const r = report as Record<string, unknown>;
  if (typeof r !== "object" || r === null || typeof r.reportSha256 !== "string") {
    return { ok: false, findings: [{ what: "shape", ok: false, actual: "not a ReportData object" }] };
  }
  const { reportSha256, ...rest } = r;
  const whole = await jcsSha256(rest);
  findings.push({
    what: "reportSha256",
    ok: whole === reportSha256,
    expected: reportSha256 as string,
    actual: whole,
  });
  const meta = r.meta as Record<string, unknown> | undefined;
  const plan = await jcsSha256(r.plan ?? null);
  findings.push({
    what: "meta.planSnapshotSha256",
    ok: meta?.planSnapshotSha256 === plan,
    expected: String(meta?.planSnapshotSha256),
    actual: plan,
  });
  const annexes = Array.isArray(r.annexes) ? r.annexes as Array<Record<string, unknown>> : [];
  for (const a of annexes) {
    const h = await sha256Hex(String(a.body ?? ""));
    findings.push({ what: `annex ${a.id}`, ok: h === a.sha256, expected: String(a.sha256), actual: h });
  }
  return { ok: findings.every((f) => f.ok), findings };
}
