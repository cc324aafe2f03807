/**
 * The test-result attestation (docs/reports.md "Signatures"): an in-toto Statement v1 with the published predicate
 * `https://in-toto.io/attestation/test-result/v0.1` (in-toto/attestation, spec/predicates/test-result.md),
 * signed in a DSSE envelope exactly like the report's own Statement (same PAE, same Ed25519 key and keyid).
 *
 * - `subject`: the report, as in the report's Statement (canonical bytes and report.json bytes);
 * - `result`: the verdict: `pass` → `PASSED`, `inconclusive` → `WARNED`, `fail` and `invalid` → `FAILED`
 *   (`invalid`: the run did not measure what the plan asked for, so nothing passed; `inconclusive`: nothing
 *   failed but the evidence is not enough for a pass, which a policy that accepts only `PASSED` rejects).
 *   A report frozen before the verdict existed: `PASSED` when the operator's outcome is `passed` and
 *   `slo.pass`, else `FAILED`;
 * - `configuration`: the frozen plan by digest (`meta.planSnapshotSha256`, the SHA-256 of the RFC 8785 JSON
 *   of the report's `plan`) and the verdict rule by URI (`urn:dutlab:verdict-rule:<rule>`);
 * - `passedTests` / `warnedTests` / `failedTests`: one name per verdict input (`verdict/<input>`: effect
 *   `pass` passed, `inconclusive` warned, `fail` and `invalid` failed, `none` not listed) and per pre-flight
 *   check at the start (`preflight/<checkId>/<deviceHostname>`: `pass` passed, `skipped` warned, `fail` and
 *   `error` failed).
 * @module
 */
import type { ReportData, VerdictValue } from "./types.ts";

/** Predicate type of the in-toto test-result predicate, version 0.1. */
export const TEST_RESULT_PREDICATE_TYPE = "https://in-toto.io/attestation/test-result/v0.1";

/** An in-toto ResourceDescriptor (the fields this predicate uses). */
export interface ResourceDescriptor {
  name?: string;
  uri?: string;
  digest?: Record<string, string>;
  mediaType?: string;
  annotations?: Record<string, string | number>;
}

/** The in-toto Statement v1 carrying the test-result predicate. */
export interface TestResultStatement {
  _type: "https://in-toto.io/Statement/v1";
  subject: Array<{ name: string; digest: { sha256: string } }>;
  predicateType: typeof TEST_RESULT_PREDICATE_TYPE;
  predicate: {
    result: "PASSED" | "WARNED" | "FAILED";
    configuration: ResourceDescriptor[];
    passedTests: string[];
    warnedTests: string[];
    failedTests: string[];
  };
}

/** The test-result `result` of a verdict value. */
export function testResultOf(value: VerdictValue): "PASSED" | "WARNED" | "FAILED" {
  return value === "pass" ? "PASSED" : value === "inconclusive" ? "WARNED" : "FAILED";
}

interface PreflightCheck {
  checkId: string;
  deviceHostname: string;
  pass: boolean;
  status?: "pass" | "fail" | "skipped" | "error";
}

/**
 * The test-result Statement of a frozen report. `subject` is the report Statement's subject (the report's
 * two digests), so both Statements name the same artefact.
 */
export function testResultStatement(
  report: ReportData,
  subject: TestResultStatement["subject"],
): TestResultStatement {
  const passed: string[] = [];
  const warned: string[] = [];
  const failed: string[] = [];
  const rule = report.verdict?.rule ?? "none (frozen before the verdict existed)";
  let result: TestResultStatement["predicate"]["result"];
  if (report.verdict) {
    result = testResultOf(report.verdict.value);
    for (const r of report.verdict.reasons) {
      const name = `verdict/${r.input}`;
      if (r.effect === "pass") passed.push(name);
      else if (r.effect === "inconclusive") warned.push(name);
      else if (r.effect === "fail" || r.effect === "invalid") failed.push(name);
    }
  } else {
    const ok = report.meta.outcome === "passed" && report.slo.pass;
    result = ok ? "PASSED" : "FAILED";
    (report.meta.outcome === "passed" ? passed : failed).push("verdict/outcome");
    (report.slo.pass ? passed : failed).push("verdict/slo");
  }
  const annex = report.annexes.find((a) => a.id === "preflight-at-start");
  const checks: PreflightCheck[] = annex ? (JSON.parse(annex.body)?.checks ?? []) : [];
  for (const c of checks) {
    const name = `preflight/${c.checkId}/${c.deviceHostname}`;
    const status = c.status ?? (c.pass ? "pass" : "fail");
    if (status === "pass") passed.push(name);
    else if (status === "skipped") warned.push(name);
    else failed.push(name);
  }
  const configuration: ResourceDescriptor[] = [
    {
      name: `plan-${report.meta.planIdentifier}.json`,
      digest: { sha256: report.meta.planSnapshotSha256 },
      mediaType: "application/json",
      annotations: {
        planIdentifier: report.meta.planIdentifier,
        planCatalogVersion: report.meta.planCatalogVersion,
        digestOf: "RFC 8785 JCS of the report's plan member",
      },
    },
  ];
  if (report.verdict) configuration.push({ name: "verdict-rule", uri: `urn:dutlab:verdict-rule:${rule}` });
  return {
    _type: "https://in-toto.io/Statement/v1",
    subject,
    predicateType: TEST_RESULT_PREDICATE_TYPE,
    predicate: { result, configuration, passedTests: passed, warnedTests: warned, failedTests: failed },
  };
}
