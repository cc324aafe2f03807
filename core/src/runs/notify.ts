/**
 * The run service's outbox events (issue 51): what a finished run and a failed pre-flight tell webhook
 * subscribers, written in the transaction of the change (notify/outbox.ts).
 */
import type { Kysely } from "kysely";
import type { Database } from "../db/schema.ts";
import type { PreflightResult } from "../preflight/engine.ts";
import { enqueueEvent } from "../notify/outbox.ts";

/** `dutlab.run.finished`: the verdict, the report's URL (under `baseUrl`) and SHA-256. */
export async function runFinished(
  tx: Kysely<Database>,
  run: { executionId: string; planIdentifier: string; outcome: string; endedAt: Date },
  report: { verdict?: { value: string }; reportSha256: string },
  baseUrl: string,
): Promise<void> {
  const verdict = report.verdict?.value ?? "inconclusive";
  await enqueueEvent(tx, "dutlab.run.finished", run.executionId, {
    executionId: run.executionId,
    planIdentifier: run.planIdentifier,
    verdict,
    outcome: run.outcome,
    endedAt: run.endedAt.toISOString(),
    reportUrl: `${baseUrl.replace(/\/$/, "")}/api/test-runs/${run.executionId}/report.json`,
    reportSha256: report.reportSha256,
  }, { severity: verdict === "pass" ? "info" : "warning", plan: run.planIdentifier });
}

/** `dutlab.preflight.failed`: a run start's pre-flight did not pass (refused, or started over it). */
export async function preflightFailed(
  tx: Kysely<Database>,
  pf: PreflightResult,
  executionId: string | null,
): Promise<void> {
  await enqueueEvent(tx, "dutlab.preflight.failed", executionId ?? pf.planIdentifier, {
    planIdentifier: pf.planIdentifier,
    summary: pf.summary,
    failedChecks: pf.checks.filter((c) => c.status === "fail" || c.status === "error").map((c) => ({
      checkId: c.checkId,
      deviceId: c.deviceId,
      message: c.detail,
    })),
    runStarted: executionId !== null,
    executionId,
  }, { severity: "warning", plan: pf.planIdentifier });
}
