import type { ColumnType, Generated } from "kysely";
import type {
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
  WebhookEventsTable,
  WebhookSubscriptionsTable,
} from "./schema_webhooks.ts";

type Timestamp = ColumnType<Date, Date | string, Date | string>;

export interface DevicesTable {
  id: string;
  hostname: string;
  vendor: string;
  device_role: string | null;
  base_url: string;
  username: string;
  /** `v1.<keyId>.<nonce b64url>.<ciphertext b64url>`, AES-256-GCM with the device id as AAD. */
  password_enc: string;
  tls_verify_mode: string;
  poll_interval_seconds: number;
  notes: string | null;
  enabled: boolean;
  last_poll_at: Timestamp | null;
  last_poll_status: string | null;
  last_poll_error: string | null;
  pinned_cert_sha256: string | null;
  /** The operator's tags (migration 0012): folded (no duplicates) and sorted. */
  tags: ColumnType<string[], string[] | undefined, string[]>;
  created_at: Generated<Timestamp>;
  updated_at: Generated<Timestamp>;
  /** The lab (its `metadata.name`) that manages the device; null when no lab does (migration 0015). */
  managed_by: ColumnType<string | null, string | null | undefined, string | null>;
  /** Keyed fingerprint of the password, `<key id>.<HMAC-SHA256 b64url>` (migration 0015); never shown. */
  password_fp: ColumnType<string | null, string | null | undefined, string | null>;
  /**
   * 0, or the rank of a device in a group whose host names clashed case-insensitively before migration 0024
   * (kept until an operator resolves it; renaming the device resets it to 0). Never shown.
   */
  hostname_case_slot: Generated<number>;
}

/** A lab kept as code (migration 0015): its name and the generation every changing apply raises. */
export interface LabsTable {
  name: string;
  generation: ColumnType<string | number, number | undefined, number | string>;
  updated_at: Generated<Timestamp>;
}

/** Content-addressed payloads: one row per distinct canonical payload. */
export interface SnapshotPayloadsTable {
  sha256: string;
  /** Canonical JSON text (RFC 8785) of the payload. */
  payload: ColumnType<string, string, never>;
  size_bytes: number;
  created_at: Generated<Timestamp>;
}

/** Append-only: one row per collection. */
export interface SnapshotsTable {
  id: Generated<string>;
  device_id: string;
  endpoint_label: string;
  payload_sha256: string;
  collected_at: Timestamp;
  test_run_execution_id: string | null;
  /**
   * The adapter's module name and version as the writer gave them; null in rows written since migration 0015,
   * whose insert trigger moves them to `adapter_releases` (`adapter_release_id`). Read
   * `coalesce(adapter_module, r.module)` (core/src/snapshots/store.ts).
   */
  adapter_module: ColumnType<string | null, string, never>;
  adapter_version: ColumnType<string | null, string, never>;
  /** The adapter release (migration 0015), set by the insert trigger; null in rows written before. */
  adapter_release_id: ColumnType<number | null, never, never>;
  /**
   * The payload hash differs from the one of the snapshot just before (same device and label); false for the
   * first. Set by a trigger at insert (migration 0009); the change history reads only these rows.
   */
  payload_changed: Generated<boolean>;
  /**
   * SHA-256 of the payload without the adapter's volatile paths, the pattern set included in what is hashed
   * (`stableSha256`, core/src/snapshots/volatile.ts); null when the writer did not compute it. Stored as ''
   * when it equals the payload hash (a label without volatile paths): the insert trigger of migration 0015
   * writes that marker and reads it as the payload hash; rows written before keep the full hash.
   */
  stable_sha256: string | null;
  /**
   * Set by the insert trigger (migration 0011): true when the payload without volatile paths differs from the
   * one of the snapshot before (a real change), false when only volatile paths moved or nothing did, null when
   * unknown (either stable hash missing, or the label's volatile pattern set changed since, see
   * `volatile_path_sets`). The change history reads only rows that are not false.
   */
  stable_changed: Generated<boolean | null>;
}

/** One adapter module and version that wrote snapshots (migration 0015): what `snapshots` rows reference. */
export interface AdapterReleasesTable {
  id: Generated<number>;
  module: string;
  version: string;
}

/**
 * A snapshot as stored since migration 2026_11_25_0017 (issue 31 point 2): eight fixed-width columns. Read it
 * through the `snapshots` view (the API's columns) or, for a series walk, with core/src/snapshots/rows.ts.
 */
export interface SnapshotRowsTable {
  id: ColumnType<string, never, never>;
  collected_at: Timestamp;
  payload_id: ColumnType<string, never, never>;
  series_id: ColumnType<number, never, never>;
  release_id: ColumnType<number, never, never>;
  payload_changed: ColumnType<boolean, never, never>;
  stable_changed: ColumnType<boolean | null, never, null>;
  test_run_execution_id: ColumnType<string | null, never, never>;
}

/**
 * One (device, label) with an int4 id (migration 0017), and its newest payload and stable hash: what the next
 * insert through the `snapshots` view compares with to set the change flags.
 */
export interface SnapshotSeriesTable {
  id: ColumnType<number, never, never>;
  device_id: string;
  endpoint_label: string;
  last_id: ColumnType<string | null, never, never>;
  last_payload_sha256: ColumnType<string | null, never, never>;
  last_stable_sha256: ColumnType<string | null, never, never>;
}

/**
 * The snapshots table as it was until migration 0017, renamed: rows not yet moved into `snapshot_rows` by the
 * compaction (core/src/snapshots/compact.ts). Read through the `snapshots` view; empty once compacted.
 */
export interface SnapshotsLegacyTable extends Omit<SnapshotsTable, "id"> {
  id: ColumnType<string, never, never>;
}

/** The newest snapshot per device and label, maintained by the poll cycle (pre-flight reads it). */
export interface SnapshotLatestTable {
  device_id: string;
  endpoint_label: string;
  snapshot_id: string;
  /** The latest snapshot's payload hash, as the poll store wrote it; NULL before migration 0021 (read the row). */
  payload_sha256: string | null;
  /** The latest snapshot's collection time, likewise. */
  collected_at: Date | null;
}

export interface TestRunsTable {
  run_id: Generated<string>;
  execution_id: string;
  plan_identifier: string;
  plan_display_name: string;
  plan_catalog_version: number;
  plan_json: ColumnType<unknown, string, never>;
  plan_snapshot_sha256: string;
  license_id: string;
  notes: string | null;
  status: string;
  started_at: Timestamp;
  ended_at: Timestamp | null;
  outcome: string | null;
  start_state_json: ColumnType<unknown, string, never>;
  preflight_json: ColumnType<unknown, string, never>;
  results_json: ColumnType<unknown | null, string | null, string | null>;
  report_json: string | null;
  report_sha256: string | null;
  /** The lab's name (`DUT_LAB_NAME`) at start; null for runs started before 2026_11_23_0005. */
  lab_name: string | null;
  /** The customer (licensee) named at start. */
  customer: string | null;
  /** How the start was gated (`StartGate`, migration 0012); null for runs started before it. */
  start_gate_json: ColumnType<unknown | null, string | null | undefined, never>;
}

/** Audit trail of finished runs deleted through `dutlab_delete_finished_run` (append-only). */
export interface RunDeletionsTable {
  id: Generated<string>;
  execution_id: string;
  report_sha256: string | null;
  reason: string;
  actor: string;
  deleted_at: Generated<Timestamp>;
}

export interface RunAlertsTable {
  id: Generated<string>;
  execution_id: string;
  name: string;
  at: Timestamp;
  device_id: string;
  device_hostname: string;
  from_state: string;
  to_state: string;
  snapshot_id: string;
}

/** A timestamp the database sets by default. */
type DefaultNow = ColumnType<Date, Date | string | undefined, never>;

/** Named API tokens (issue 21): only the SHA-256 of the token is stored. */
export interface ApiTokensTable {
  id: string;
  name: string;
  role: string;
  token_sha256: string;
  created_at: DefaultNow;
  revoked_at: Timestamp | null;
}

/** Append-only: one row per state-changing request (the database refuses UPDATE, DELETE, TRUNCATE). */
export interface AuditLogTable {
  id: Generated<string>;
  at: DefaultNow;
  token_name: string | null;
  role: string | null;
  method: string;
  route: string;
  target_id: string | null;
  status: number;
  outcome: string;
  request_id: string;
  /** A note the route added (migration 0012), e.g. the override of a failed pre-flight; null otherwise. */
  detail: ColumnType<string | null, string | null | undefined, never>;
}

/** Live events kept for a bounded window (SSE resume). `data` is JSON text. */
export interface EventsTable {
  id: Generated<string>;
  at: DefaultNow;
  type: string;
  data: string;
}

/** A public key the service has signed reports with (migration 2026_11_23_0006). */
export interface ReportSigningKeysTable {
  key_id: string;
  algorithm: string;
  public_key_pem: string;
  /** The raw 32-byte Ed25519 public key, base64url (JWK `x`). */
  public_key_x: string;
  valid_from: ColumnType<Date, never, never>;
  valid_until: ColumnType<Date | null, never, Date>;
}

/** One DSSE envelope over a report, append-only. */
export interface ReportSignaturesTable {
  id: Generated<string>;
  execution_id: string;
  key_id: string;
  envelope_json: string;
  signed_at: ColumnType<Date, never, never>;
}

/** An X.509 certificate the service has signed report PDFs with (migration 0012). */
export interface PdfSigningCertificatesTable {
  /** Lowercase hex SHA-256 of the certificate's DER. */
  fingerprint_sha256: string;
  certificate_pem: string;
  subject: string;
  issuer: string;
  /** Lowercase hex. */
  serial_number: string;
  /** `ECDSA P-256` or `RSA <bits>`. */
  algorithm: string;
  not_before: ColumnType<Date, string, never>;
  not_after: ColumnType<Date, string, never>;
  valid_from: ColumnType<Date, never, never>;
  valid_until: ColumnType<Date | null, never, Date>;
}

/** A further DSSE envelope about a finished run (the test-result attestation), append-only (migration 0012). */
export interface RunAttestationsTable {
  id: Generated<string>;
  execution_id: string;
  predicate_type: string;
  key_id: string;
  envelope_json: string;
  signed_at: ColumnType<Date, never, never>;
}

/**
 * Per vendor and label, the volatile-path pattern set (canonical JSON of the sorted patterns) that the stored
 * `snapshots.stable_changed` flags of that vendor's devices were computed with (migration 0011).
 */
export interface VolatilePathSetsTable {
  vendor: string;
  endpoint_label: string;
  patterns: string;
  /** Rows of this vendor and label below this id are not re-marked under `patterns` yet (migration 0018). */
  remark_below: ColumnType<string | null, string | null | undefined, string | null>;
  /** How many `false` flags are left below `remark_below` (null: not counted yet). */
  remark_remaining: ColumnType<string | null, string | null | undefined, string | null>;
}

/**
 * One prune of old snapshots (migration 2026_11_25_0014): its audit record (who, policy, counts) and its
 * resumable state (`cursor_id`: every snapshot id up to it has been decided). Never deleted; frozen once finished.
 */
export interface SnapshotPrunesTable {
  id: Generated<string>;
  actor: string;
  policy: ColumnType<unknown, string, never>;
  cutoff: ColumnType<Date, Date | string, never>;
  end_id: ColumnType<string, string, never>;
  cursor_id: ColumnType<string, string | undefined, string>;
  status: string;
  started_at: DefaultNow;
  heartbeat_at: ColumnType<Date, Date | string | undefined, Date | string>;
  finished_at: Timestamp | null;
  batches: ColumnType<number, number | undefined, number>;
  deleted_snapshots: ColumnType<string, string | undefined, string>;
  snapshot_bytes: ColumnType<string, string | undefined, string>;
  freed_payloads: ColumnType<string, string | undefined, string>;
  freed_payload_bytes: ColumnType<string, string | undefined, string>;
  /** A JSON array of per-device, per-label counts (default `[]`, checked since migration 2026_11_28_0023). */
  counts: ColumnType<unknown, string | undefined, string>;
}

/** The one Kysely database interface of dutlab. */
export interface Database {
  /** Registered devices. */
  devices: DevicesTable;
  /** Snapshot payloads by SHA-256, stored once (canonical JSON). */
  snapshot_payloads: SnapshotPayloadsTable;
  /** Snapshots: one device's payload of one endpoint label at one time. */
  snapshots: SnapshotsTable;
  snapshot_rows: SnapshotRowsTable;
  snapshot_series: SnapshotSeriesTable;
  snapshots_legacy: SnapshotsLegacyTable;
  /** The latest snapshot per device and label. */
  snapshot_latest: SnapshotLatestTable;
  /** Test runs and their frozen reports. */
  test_runs: TestRunsTable;
  /** Alerts raised during runs (`TLSDecryptModeChanged`). */
  run_alerts: RunAlertsTable;
  /** Audit trail of deleted finished runs (append-only). */
  run_deletions: RunDeletionsTable;
  /** Named API tokens (SHA-256 of the secret, role, revocation). */
  api_tokens: ApiTokensTable;
  /** The append-only audit log of state-changing requests. */
  audit_log: AuditLogTable;
  /** Live events kept for SSE clients that reconnect (`GET /api/events`). */
  events: EventsTable;
  /** Public keys the service has signed reports with. */
  report_signing_keys: ReportSigningKeysTable;
  /** DSSE envelopes over reports (append-only). */
  report_signatures: ReportSignaturesTable;
  /** Every PDF signing certificate the service has used. */
  pdf_signing_certificates: PdfSigningCertificatesTable;
  /** Further DSSE envelopes about finished runs (the test-result attestations). */
  run_attestations: RunAttestationsTable;
  /** Per vendor and label, the volatile-path set the stored `stable_changed` flags were computed with. */
  volatile_path_sets: VolatilePathSetsTable;
  /** Records of the operator's snapshot prunes. */
  snapshot_prunes: SnapshotPrunesTable;
  /** Adapter modules and versions that wrote snapshots. */
  adapter_releases: AdapterReleasesTable;
  /** Labs kept as code: name and generation. */
  labs: LabsTable;
  /** The provenance of every NetBox import (issue 50). */
  netbox_syncs: NetBoxSyncsTable;
  /** The NetBox journal write-back of finished runs, per device (issue 50). */
  netbox_journal: NetBoxJournalTable;
  /** Webhook subscriptions (issue 51, docs/notifications.md). */
  webhook_subscriptions: WebhookSubscriptionsTable;
  /** The outbox: events written in the transaction of the change they describe. */
  webhook_events: WebhookEventsTable;
  /** One delivery per event and matching subscription. */
  webhook_deliveries: WebhookDeliveriesTable;
  /** Every attempt of a delivery. */
  webhook_attempts: WebhookAttemptsTable;
  /** Named sets of devices (issue 52). */
  testbeds: TestbedsTable;
  /** Reservations of devices: queued, held, and ended ones (issue 52). */
  reservations: ReservationsTable;
  /** The devices held reservations hold: one row per device, so no device has two holders. */
  reservation_holds: ReservationHoldsTable;
}

/** One NetBox import: where, which filters, NetBox's version, when, and the SHA-256 of the answers. */
export interface NetBoxSyncsTable {
  id: string;
  lab: string;
  netbox_url: string;
  /** JSON: the filters as [name, value] pairs. */
  filters: string;
  netbox_version: string | null;
  fetched_at: Timestamp;
  answers_sha256: string;
  pages: number;
  devices: number;
  mapped: number;
  unmapped: number;
}

/** A device's journal entry of a finished run: pending, posted or failed; `next_at` while queued (0029). */
export interface NetBoxJournalTable {
  execution_id: string;
  hostname: string;
  netbox_device_id: number | null;
  status: "pending" | "posted" | "failed";
  device_id: string | null;
  next_at: Timestamp | null;
  lease_until: Timestamp | null;
  attempts: number;
  last_error: string | null;
  journal_entry_id: number | null;
  updated_at: Generated<Timestamp>;
}

/** A testbed (migration 0026): its name and selector. */
export interface TestbedsTable {
  name: string;
  selector: ColumnType<unknown, string, string>;
  description: string | null;
  managed_by: string | null;
  created_at: Generated<Timestamp>;
  updated_at: Generated<Timestamp>;
}

/** A reservation (migration 0026). */
export interface ReservationsTable {
  id: string;
  holder: string;
  purpose: string | null;
  testbed: string | null;
  device_ids: ColumnType<string[], string[], string[]>;
  priority: number;
  state: string;
  lease_seconds: number;
  requested_at: Timestamp;
  wait_until: Timestamp | null;
  granted_at: Timestamp | null;
  expires_at: Timestamp | null;
  ended_at: Timestamp | null;
  end_reason: string | null;
  execution_id: string | null;
  created_by: string | null;
}

/** A device a held reservation holds (migration 0026). */
export interface ReservationHoldsTable {
  device_id: string;
  reservation_id: string;
}
