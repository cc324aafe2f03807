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

/**
 * The automatic NetBox write-back's queue (issue 50, docs/netbox.md): one `pending` row per device of the
 * finished run that came from NetBox (its `netbox:<id>` tag, set by `lab from-netbox`), written in the finish's
 * transaction; the write-back worker (netbox/journal_worker.ts) posts them. A device NetBox does not hold would
 * only fail forever, so it is not queued (the manual write-back still tries it by name). A device already
 * recorded for the run (a manual write-back) is left as it is.
 */
export async function netboxJournalQueued(
  tx: Kysely<Database>,
  executionId: string,
  devices: ReadonlyArray<{ id: string; hostname: string }>,
): Promise<void> {
  if (!devices.length) return;
  const fromNetBox = new Set(
    (await tx.selectFrom("devices").select(["id", "tags"]).where("id", "in", devices.map((d) => d.id))
      .execute())
      .filter((r) => r.tags.some((t) => /^netbox:\S+$/.test(t))).map((r) => r.id),
  );
  const queued = devices.filter((d) => fromNetBox.has(d.id));
  if (!queued.length) return;
  await tx.insertInto("netbox_journal").values(queued.map((d) => ({
    execution_id: executionId,
    hostname: d.hostname,
    device_id: d.id,
    status: "pending" as const,
    attempts: 0,
    next_at: new Date(),
  }))).onConflict((oc) => oc.columns(["execution_id", "hostname"]).doNothing()).execute();
}

/**
 * `dutlab.preflight.failed`: a pre-flight did not pass, at a run's start (refused, or started over it) or
 * evaluated on its own (`trigger: "request"`).
 */
export async function preflightFailed(
  tx: Kysely<Database>,
  pf: PreflightResult,
  executionId: string | null,
  trigger: "run-start" | "request" = "run-start",
): Promise<void> {
  await enqueueEvent(tx, "dutlab.preflight.failed", executionId ?? pf.planIdentifier, {
    planIdentifier: pf.planIdentifier,
    summary: pf.summary,
    failedChecks: pf.checks.filter((c) => c.status === "fail" || c.status === "error").map((c) => ({
      checkId: c.checkId,
      deviceId: c.deviceId,
      message: c.detail,
    })),
    trigger,
    runStarted: executionId !== null,
    executionId,
  }, { severity: "warning", plan: pf.planIdentifier });
}
