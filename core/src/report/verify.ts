import { jcsSha256, sha256Hex } from "../util/hash.ts";

/** One verification finding: a hash as stated in the report and as recomputed, or a shape problem. */
export interface VerifyFinding {
  /** What was checked (e.g. `reportSha256`, `meta.planSnapshotSha256`, `shape`). */
  what: string;
  /** Whether it held. */
  ok: boolean;
  /** The value the report states. */
  expected?: string;
  /** The value recomputed from the report's content (or what was found instead). */
  actual?: string;
}

/** Outcome of {@link verifyReport}. */
export interface VerifyOutcome {
  /** True when every finding holds. */
  ok: boolean;
  /** The report's `reportSha256` when it has one. */
  reportSha256?: string;
  /** Every check made, in order. */
  findings: VerifyFinding[];
}

const HEX64 = /^[0-9a-f]{64}$/;
const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Recompute every hash of a ReportData object:
 * - `reportSha256` = SHA-256 (lowercase hex) of the RFC 8785 canonical JSON of the report with the
 *   `reportSha256` member removed;
 * - `meta.planSnapshotSha256` = SHA-256 of the RFC 8785 canonical JSON of `plan`;
 * - each annex `sha256` = SHA-256 of the UTF-8 bytes of its `body` string.
 *
 * @example
 * ```ts
 * // The values a caller has; the example type-checks (deno check --doc) and is not run.
 * async function example(url: string, headers: HeadersInit) {
 *   const { ok, findings } = await verifyReport(await (await fetch(url, { headers })).json());
 *   for (const f of findings.filter((f) => !f.ok)) console.log(f.what, f.expected, f.actual);
 * }
 * ```
 */
export async function verifyReport(report: unknown): Promise<VerifyOutcome> {
  if (!isObj(report) || typeof report.reportSha256 !== "string") {
    return {
      ok: false,
      findings: [{ what: "shape", ok: false, actual: "not a ReportData object (no reportSha256 string)" }],
    };
  }
  const findings: VerifyFinding[] = [];
  const shape = (what: string, ok: boolean, actual: string) => {
    if (!ok) findings.push({ what, ok, actual });
  };
  shape("version", report.version === 1, `version ${JSON.stringify(report.version)}, expected 1`);

  const { reportSha256, ...rest } = report;
  const whole = await jcsSha256(rest);
  findings.push({ what: "reportSha256", ok: whole === reportSha256, expected: reportSha256, actual: whole });

  const meta = isObj(report.meta) ? report.meta : undefined;
  shape("meta", meta !== undefined, "meta is not an object");
  if (report.plan === undefined) {
    findings.push({ what: "meta.planSnapshotSha256", ok: false, actual: "the report has no plan" });
  } else {
    const plan = await jcsSha256(report.plan);
    findings.push({
      what: "meta.planSnapshotSha256",
      ok: meta?.planSnapshotSha256 === plan,
      expected: String(meta?.planSnapshotSha256),
      actual: plan,
    });
  }

  if (!Array.isArray(report.annexes)) {
    findings.push({ what: "annexes", ok: false, actual: "annexes is not an array" });
  } else {
    for (const [i, a] of report.annexes.entries()) {
      const name = `annex ${isObj(a) && typeof a.id === "string" ? JSON.stringify(a.id) : `#${i}`}`;
      if (!isObj(a) || typeof a.body !== "string" || typeof a.sha256 !== "string") {
        findings.push({ what: name, ok: false, actual: "not {id, title, sha256, body} with string body" });
        continue;
      }
      const h = await sha256Hex(a.body);
      findings.push({ what: `${name} sha256`, ok: h === a.sha256, expected: a.sha256, actual: h });
    }
  }
  for (const f of findings) {
    if (f.expected !== undefined && f.ok && !HEX64.test(f.expected)) {
      f.ok = false;
      f.actual = "not 64 lowercase hex characters";
    }
  }
  return { ok: findings.every((f) => f.ok), reportSha256, findings };
}

/**
 * {@link verifyReport} over the bytes of a report file or response: UTF-8 (strict) JSON text. Invalid
 * UTF-8 or JSON is a finding, not an exception.
 */
export async function verifyReportBytes(bytes: Uint8Array): Promise<VerifyOutcome> {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (e) {
    return { ok: false, findings: [{ what: "JSON", ok: false, actual: (e as Error).message }] };
  }
  return await verifyReport(value);
}
