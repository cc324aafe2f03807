/** The webhook tables (issue 51, migration 2026_11_29_0027; docs/notifications.md). */
import type { ColumnType, Generated } from "kysely";

type Timestamp = ColumnType<Date, Date | string, Date | string>;

/** A webhook subscription (migration 2026_11_29_0027). */
export interface WebhookSubscriptionsTable {
  id: string;
  name: string;
  url: string;
  /** `cloudevents`, `slack` or `teams`. */
  format: Generated<string>;
  /** JSON array of event types. */
  event_types: string;
  /** JSON object: plans, deviceTags, minSeverity. */
  filters: Generated<string>;
  allow_http: Generated<boolean>;
  enabled: Generated<boolean>;
  /** `whsec_<base64>`: signs every delivery. */
  secret: string;
  previous_secret: string | null;
  previous_secret_until: Timestamp | null;
  consecutive_failures: Generated<number>;
  failing: Generated<boolean>;
  last_success_at: Timestamp | null;
  last_failure_at: Timestamp | null;
  created_at: Generated<Timestamp>;
  updated_at: Generated<Timestamp>;
}

/** An outbox event (the CloudEvent minus its constant attributes). */
export interface WebhookEventsTable {
  seq: Generated<string>;
  id: string;
  type: string;
  subject: string | null;
  time: Timestamp;
  data: string;
}

/** One event to one subscription. */
export interface WebhookDeliveriesTable {
  id: Generated<string>;
  subscription_id: string;
  event_id: string;
  /** `pending`, `delivered` or `failed` (given up after the retry window). */
  state: Generated<string>;
  attempts: Generated<number>;
  next_at: Generated<Timestamp>;
  lease_until: Timestamp | null;
  created_at: Generated<Timestamp>;
  finished_at: Timestamp | null;
  last_status: number | null;
  last_duration_ms: number | null;
  last_error: string | null;
  last_response: string | null;
}

/** One attempt of a delivery. */
export interface WebhookAttemptsTable {
  id: Generated<string>;
  delivery_id: string;
  attempt: number;
  at: Generated<Timestamp>;
  status: number | null;
  duration_ms: number;
  error: string | null;
  response: string | null;
}
