/**
 * The poll store's outbox hook (issue 51): a poll whose status becomes `auth_failed` or `tls_error` (from
 * anything else) writes a `dutlab.device.status_changed` webhook event in the poll's write transaction. No
 * other poll writes anything here (the common path costs one comparison per poll).
 */
import type { Kysely } from "kysely";
import type { Database } from "../db/schema.ts";
import type { DeviceRow } from "../devices/store.ts";
import { enqueueEvent } from "../notify/outbox.ts";

const NOTIFIED = new Set(["auth_failed", "tls_error"]);

/** Enqueue an event for every poll of the batch that moved its device into `auth_failed` or `tls_error`. */
export async function statusChangeEvents(
  tx: Kysely<Database>,
  polls: Array<{ row: DeviceRow; outcome: { status: string; error: string } }>,
): Promise<void> {
  for (const { row, outcome } of polls) {
    if (!NOTIFIED.has(outcome.status) || row.last_poll_status === outcome.status) continue;
    await enqueueEvent(tx, "dutlab.device.status_changed", row.id, {
      deviceId: row.id,
      hostname: row.hostname,
      vendor: row.vendor,
      from: row.last_poll_status,
      to: outcome.status as "auth_failed" | "tls_error",
      detail: outcome.error,
    }, { severity: "critical", deviceTags: row.tags });
  }
}
