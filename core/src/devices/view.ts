/**
 * The API form of a device (spec 2.2), made from a device row without its credential.
 *
 * @module
 */
import type { TlsVerifyMode } from "../adapter.ts";
import type { PollStatus } from "../errors.ts";
import type { Selectable } from "kysely";
import type { DevicesTable } from "../db/schema.ts";

/** A device row as stored. */
export type DeviceRow = Selectable<DevicesTable>;
/** A device row without its credential: what the API view is made from. */
export type DeviceListRow = Omit<DeviceRow, "password_enc" | "password_fp" | "hostname_case_slot">;

/** The API form of a device (spec 2.2): every field but the password. */
export interface DeviceView {
  id: string;
  hostname: string;
  vendor: string;
  deviceRole: string | null;
  baseUrl: string;
  username: string;
  tlsVerifyMode: TlsVerifyMode;
  tlsWarning: string | null;
  pollIntervalSeconds: number;
  notes: string | null;
  enabled: boolean;
  lastPollAt: string | null;
  lastPollStatus: PollStatus | null;
  lastPollError: string | null;
  pinnedCertSha256: string | null;
  /** Sorted, without duplicates. */
  tags: string[];
  createdAt: string;
  updatedAt: string;
  /** The lab that manages the device (docs/lab-as-code.md); null when none does. */
  managedBy: string | null;
}

const iso = (d: Date | string | null | unknown) => (d === null ? null : new Date(d as string).toISOString());

/** The API view of a device row. */
export function toView(r: DeviceListRow): DeviceView {
  return {
    id: r.id,
    hostname: r.hostname,
    vendor: r.vendor,
    deviceRole: r.device_role,
    baseUrl: r.base_url,
    username: r.username,
    tlsVerifyMode: r.tls_verify_mode as TlsVerifyMode,
    tlsWarning: r.tls_verify_mode === "insecure"
      ? "TLS verification is disabled for this device (insecure): its identity is not checked"
      : null,
    pollIntervalSeconds: r.poll_interval_seconds,
    notes: r.notes,
    enabled: r.enabled,
    lastPollAt: iso(r.last_poll_at),
    lastPollStatus: r.last_poll_status as PollStatus | null,
    lastPollError: r.last_poll_error,
    pinnedCertSha256: r.pinned_cert_sha256,
    tags: r.tags ?? [],
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
    managedBy: r.managed_by ?? null,
  };
}
