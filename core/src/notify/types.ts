/**
 * The webhook event types (issue 51, docs/notifications.md "Event types"): CloudEvents `type` → its `data`.
 * Every payload names what it is about and carries no credential or token.
 */

/** How serious an event is; a subscription's `minSeverity` filter keeps those at or above it. */
export const SEVERITIES = ["info", "warning", "critical"] as const;
export type Severity = typeof SEVERITIES[number];

/** CloudEvents `type` → `data`. */
export interface WebhookEventMap {
  /** A test run finished: its verdict, its report's URL and SHA-256. */
  "dutlab.run.finished": {
    executionId: string;
    planIdentifier: string;
    verdict: string;
    outcome: string;
    endedAt: string;
    reportUrl: string;
    reportSha256: string;
  };
  /**
   * A pre-flight did not pass: at a run's start (the run was refused, or started with an override), or
   * evaluated on its own through `POST /api/test-runs/preflight` (not a dry run, not `asOf`).
   */
  "dutlab.preflight.failed": {
    planIdentifier: string;
    summary: string;
    failedChecks: Array<{ checkId: string; deviceId: string | null; message: string }>;
    /** `run-start`: evaluated by a run's start; `request`: a pre-flight asked for on its own. */
    trigger: "run-start" | "request";
    runStarted: boolean;
    executionId: string | null;
  };
  /** A device's poll status became `auth_failed` or `tls_error`. */
  "dutlab.device.status_changed": {
    deviceId: string;
    hostname: string;
    vendor: string;
    from: string | null;
    to: "auth_failed" | "tls_error";
    detail: string;
  };
  /** A run alert fired (`TLSDecryptModeChanged`) during a run. */
  "dutlab.alert.raised": {
    name: string;
    executionId: string;
    deviceId: string;
    hostname: string;
    from: string;
    to: string;
    snapshotId: string;
    at: string;
  };
  /** A lab sync (`PUT /api/admin/lab`) created, updated or deleted devices. */
  "dutlab.lab.synced": {
    labName: string;
    generation: number;
    created: string[];
    updated: string[];
    deleted: string[];
  };
  /** A reservation was granted (at once, or from the queue). */
  "dutlab.reservation.granted": ReservationEventData;
  /** A reservation request waits in the queue (its devices are held). */
  "dutlab.reservation.queued": ReservationEventData;
  /** A reservation was released (or a queued request withdrawn), by its holder, an admin or its run's end. */
  "dutlab.reservation.released": ReservationEventData;
  /** A lease ended without renewal, or a queued request's wait ran out (`state` says which). */
  "dutlab.reservation.expired": ReservationEventData;
  /** A reservation asking for readiness was refused: a check failed on a device; nothing was reserved. */
  "dutlab.reservation.not_ready": {
    holder: string;
    testbed: string | null;
    planIdentifier: string;
    devices: Array<{ id: string; hostname: string }>;
    notReady: Array<
      {
        checkId: string;
        deviceId: string;
        hostname: string;
        status: string;
        detail: string;
        snapshotId: string | null;
      }
    >;
    markedOutOfService: string[];
  };
  /** A test ping (`POST /api/admin/webhooks/{id}/ping`): never subscribed to, sent to one subscription. */
  "dutlab.webhook.ping": { subscriptionId: string; message: string };
}

/** What every reservation event but `not_ready` carries (docs/reservations.md). */
export interface ReservationEventData {
  reservationId: string;
  holder: string;
  purpose: string | null;
  testbed: string | null;
  devices: Array<{ id: string; hostname: string }>;
  /** held, queued, released, expired or timed_out. */
  state: string;
  /** The lease's end (held), null otherwise. */
  expiresAt: string | null;
  /** Why it ended (released, expired, timed out), null while open. */
  reason: string | null;
  executionId: string | null;
}

/** The types a subscription may name, in the order the docs list them. */
export const WEBHOOK_EVENT_TYPES = [
  "dutlab.run.finished",
  "dutlab.preflight.failed",
  "dutlab.device.status_changed",
  "dutlab.alert.raised",
  "dutlab.lab.synced",
  "dutlab.reservation.granted",
  "dutlab.reservation.queued",
  "dutlab.reservation.released",
  "dutlab.reservation.expired",
  "dutlab.reservation.not_ready",
] as const satisfies ReadonlyArray<keyof WebhookEventMap>;
export type WebhookEventType = keyof WebhookEventMap;
export type SubscribableType = typeof WEBHOOK_EVENT_TYPES[number];

/** The formats a subscription delivers in. */
export const WEBHOOK_FORMATS = ["cloudevents", "slack", "teams"] as const;
export type WebhookFormat = typeof WEBHOOK_FORMATS[number];

/** A subscription's optional filters: every one given must match. */
export interface WebhookFilters {
  /** Only events about these plans (an event without a plan does not match). */
  plans?: string[];
  /** Only events about a device carrying one of these tags (an event without a device does not match). */
  deviceTags?: string[];
  /** Only events at or above this severity. */
  minSeverity?: Severity;
}

/** What an event says about itself for filtering (not sent). */
export interface EventFacets {
  severity: Severity;
  plan?: string | null;
  deviceTags?: readonly string[] | null;
}

/** Whether `filters` keep an event with `facets`. */
export function filtersMatch(filters: WebhookFilters, facets: EventFacets): boolean {
  if (filters.plans?.length && (!facets.plan || !filters.plans.includes(facets.plan))) return false;
  if (filters.deviceTags?.length) {
    const tags = new Set((facets.deviceTags ?? []).map((t) => t.toLowerCase()));
    if (!filters.deviceTags.some((t) => tags.has(t.toLowerCase()))) return false;
  }
  if (filters.minSeverity && SEVERITIES.indexOf(facets.severity) < SEVERITIES.indexOf(filters.minSeverity)) {
    return false;
  }
  return true;
}
