/**
 * The reservations' outbox events (issue 52 with issue 51's webhooks, docs/notifications.md): each written in
 * the transaction of the decision it describes, so a rolled-back grant sends nothing and a committed one is
 * never lost.
 *
 * @module
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { enqueueEvent } from "../notify/outbox.ts";
import type { WebhookEventMap } from "../notify/types.ts";

/** The reservation event types that describe one reservation's state. */
export type ReservationEventType =
  | "dutlab.reservation.granted"
  | "dutlab.reservation.queued"
  | "dutlab.reservation.released"
  | "dutlab.reservation.expired";

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** The devices' hostnames (by hostname) and the union of their tags (the `deviceTags` filter). */
async function devicesOf(tx: Kysely<Database>, ids: readonly string[]) {
  const r = await sql<{ id: string; hostname: string; tags: string[] | null }>`select id::text, hostname,
    tags from devices where id = any(${ids}::uuid[]) order by hostname`.execute(tx);
  return {
    devices: r.rows.map((d) => ({ id: d.id, hostname: d.hostname })),
    tags: [...new Set(r.rows.flatMap((d) => d.tags ?? []))],
  };
}

/** Enqueue `type` about reservation `id` as `tx` sees it now (its state after the change). */
export async function reservationEvent(
  tx: Kysely<Database>,
  type: ReservationEventType,
  id: string,
): Promise<void> {
  const r = await sql<{
    holder: string;
    purpose: string | null;
    testbed: string | null;
    device_ids: string[];
    state: string;
    expires_at: Date | null;
    end_reason: string | null;
    execution_id: string | null;
  }>`select holder, purpose, testbed, device_ids::text[] as device_ids, state, expires_at, end_reason,
    execution_id::text from reservations where id = ${id}::uuid`.execute(tx);
  const row = r.rows[0];
  if (!row) return;
  const { devices, tags } = await devicesOf(tx, row.device_ids);
  const data: WebhookEventMap[ReservationEventType] = {
    reservationId: id,
    holder: row.holder,
    purpose: row.purpose,
    testbed: row.testbed,
    devices,
    state: row.state,
    expiresAt: row.state === "held" ? iso(row.expires_at) : null,
    reason: row.end_reason,
    executionId: row.execution_id,
  };
  const severity = type === "dutlab.reservation.expired" ? "warning" : "info";
  await enqueueEvent(tx, type, id, data, { severity, deviceTags: tags });
}

/** Enqueue `dutlab.reservation.not_ready`: a readiness check refused a reservation (nothing was reserved). */
export async function reservationNotReady(
  tx: Kysely<Database>,
  data: Omit<WebhookEventMap["dutlab.reservation.not_ready"], "devices"> & { deviceIds: string[] },
): Promise<void> {
  const { deviceIds, ...rest } = data;
  const { devices, tags } = await devicesOf(tx, deviceIds);
  await enqueueEvent(tx, "dutlab.reservation.not_ready", data.testbed ?? data.holder, { ...rest, devices }, {
    severity: "warning",
    plan: data.planIdentifier,
    deviceTags: tags,
  });
}
