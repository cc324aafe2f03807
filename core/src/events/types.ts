/**
 * The live events (docs/http-api.md "Live events"): each event type name and the data it carries. Publishers are
 * type-checked against this map, and readers of the bus get the data typed by the event's `type`.
 */
import type { PollStatus } from "../errors.ts";

/** The device an event of a poll is about. */
interface PolledDevice {
  deviceId: string;
  hostname: string;
  vendor: string;
}

/** Event type name → its data. */
export interface EventMap {
  /** A poll of one device ended (`summary` is the `lastPollError` text). */
  "poll.finished": PolledDevice & { status: PollStatus; summary: string; at: string };
  /** A device's poll status changed (`from` is null when it was never polled). */
  "device.status_changed": PolledDevice & { from: string | null; to: PollStatus; detail: string };
  /** One poll stored snapshots (one event per poll). */
  "snapshot.stored": PolledDevice & {
    snapshots: Array<{ id: string; endpointLabel: string }>;
    collectedAt: string;
    testRunExecutionId: string | null;
  };
  /** A device was created, updated or deleted (through the API or a lab apply). */
  "device.changed": { deviceId: string; hostname: string; change: "created" | "updated" | "deleted" };
  /** A test run started. */
  "run.started": { executionId: string; planIdentifier: string; startedAt: string };
  /** A test run finished. */
  "run.finished": {
    executionId: string;
    planIdentifier: string;
    outcome: string | null;
    endedAt: string | null;
    reportSha256: string | null;
  };
  /** A run alert was raised by a snapshot (e.g. `TLSDecryptModeChanged`). */
  "alert.raised": {
    name: string;
    executionId: string;
    deviceId: string;
    hostname: string;
    from: string;
    to: string;
    snapshotId: string;
    at: string;
  };
  /** A reservation was granted, queued, released, or expired / timed out (with its reason). */
  "reservation.granted": ReservationEvent;
  "reservation.queued": ReservationEvent;
  "reservation.released": ReservationEvent;
  "reservation.expired": ReservationEvent;
}

/** What a reservation event carries (docs/reservations.md). */
interface ReservationEvent {
  reservationId: string;
  holder: string;
  testbed: string | null;
  deviceIds: string[];
  state: string;
  expiresAt: string | null;
  reason: string | null;
}

/** Every event type, in the order the API documents them. */
export const EVENT_TYPES = [
  "poll.finished",
  "device.status_changed",
  "snapshot.stored",
  "device.changed",
  "run.started",
  "run.finished",
  "alert.raised",
  "reservation.granted",
  "reservation.queued",
  "reservation.released",
  "reservation.expired",
] as const satisfies ReadonlyArray<keyof EventMap>;
export type EventType = typeof EVENT_TYPES[number];

// Every key of the map is listed in EVENT_TYPES (the `satisfies` above checks the other direction): a type
// missing from the list makes this line fail to compile, naming the type.
type Unlisted = Exclude<keyof EventMap, EventType>;
const _everyTypeListed: [Unlisted] extends [never] ? true : Unlisted = true;

/** A recorded event as the bus hands it out and the SSE stream sends it: `data` is typed by `type`. */
export type StoredEvent = {
  [T in EventType]: { id: string; at: string; type: T; data: EventMap[T] };
}[EventType];
