/**
 * Who holds which device (issue 52): the lookup behind the device list, the 409 of a refused reservation,
 * and the guard every disturbing change (PATCH of connection fields, disable, delete, lab apply, key or pin
 * change) passes through.
 *
 * @module
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { ConflictError } from "../errors.ts";
import { isUuid } from "../util/ids.ts";

/** One device's current holder. */
export interface Hold {
  deviceId: string;
  hostname: string;
  reservationId: string;
  holder: string;
  testbed: string | null;
  /** When the lease ends unless renewed (ISO 8601). */
  until: string;
}

/** The holds of these devices (all held devices when `deviceIds` is omitted), lease ends included. */
export async function holdsOf(db: Kysely<Database>, deviceIds?: string[]): Promise<Hold[]> {
  if (deviceIds && deviceIds.length === 0) return [];
  const where = deviceIds ? sql`where h.device_id = any(${deviceIds}::uuid[])` : sql``;
  const r = await sql<{
    device_id: string;
    hostname: string;
    reservation_id: string;
    holder: string;
    testbed: string | null;
    expires_at: Date | string;
  }>`select h.device_id::text, d.hostname, h.reservation_id::text, r.holder, r.testbed, r.expires_at
    from reservation_holds h join reservations r on r.id = h.reservation_id join devices d on d.id = h.device_id
    ${where} order by d.hostname`.execute(db);
  return r.rows.map((x) => ({
    deviceId: x.device_id,
    hostname: x.hostname,
    reservationId: x.reservation_id,
    holder: x.holder,
    testbed: x.testbed,
    until: new Date(x.expires_at).toISOString(),
  }));
}

/** The detail and members of a 409 about held devices: who holds what until when. */
export function heldConflict(action: string, holds: Hold[], hint: string): ConflictError {
  const each = holds.slice(0, 5).map((h) =>
    `${h.hostname} is reserved by ${JSON.stringify(h.holder)} (reservation ${h.reservationId}` +
    `${h.testbed ? `, testbed ${h.testbed}` : ""}) until ${h.until}`
  );
  if (holds.length > 5) each.push(`${holds.length - 5} more`);
  return new ConflictError(`${action}: ${each.join("; ")}${hint ? ` (${hint})` : ""}`, {
    errors: holds.map((h) => ({ field: h.hostname, message: `reserved by ${h.holder} until ${h.until}` })),
    extra: {
      reservations: holds.map((h) => ({
        reservationId: h.reservationId,
        holder: h.holder,
        deviceId: h.deviceId,
        hostname: h.hostname,
        testbed: h.testbed,
        until: h.until,
      })),
    },
  });
}

/**
 * Refuse a change to reserved devices (409 naming each reservation) unless `force`; with `force`, return the
 * holds it overrode so the caller can put them on record (the audit note). Reads through `db`, which may be
 * the transaction of the change.
 */
export async function guardReserved(
  db: Kysely<Database>,
  deviceIds: string[],
  action: string,
  force: boolean,
): Promise<Hold[]> {
  const holds = await holdsOf(db, deviceIds.filter(isUuid)); // a non-UUID id names no device: the change 404s
  if (holds.length && !force) {
    throw heldConflict(`${action} would disturb a reservation`, holds, "an admin may force it");
  }
  return holds;
}

/** The audit note of a forced change over reservations. */
export function forcedNote(action: string, holds: Hold[]): string {
  return `forced over reservation(s): ${action}; ` +
    holds.map((h) => `${h.hostname} held by ${h.holder} (${h.reservationId}) until ${h.until}`).join("; ");
}
