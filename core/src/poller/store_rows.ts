/**
 * The poll store's row statements (store.ts): lock the batch's devices, write its snapshot rows, record each
 * poll on its device.
 *
 * @module
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { PREPARED } from "../db/prepared.ts";
import { type KnownIds, writeSnapshotRows, type WrittenRow } from "../snapshots/write.ts";
import type { HashedSnapshot } from "./hash.ts";

type Tx = Kysely<Database>;
type SnapshotRef = WrittenRow;

/** What these statements read of a queued poll. */
interface PollRow {
  row: { id: string; base_url: string };
  module: { name: string; version: string } | null;
  outcome: { status: string; error: string; snapshots: HashedSnapshot[]; pinnedCertSha256?: string | null };
}

/**
 * Locks the devices in id order (concurrent writers never wait on each other in a cycle) and returns those
 * that still exist: a device deleted while it was polled records nothing.
 */
export async function lockDevices(tx: Tx, deviceIds: string[]): Promise<Set<string>> {
  const ids = [...new Set(deviceIds)].sort();
  const rows = await tx.selectFrom("devices").modifyFront(sql.raw(PREPARED)).select("id")
    .where("id", "=", sql<string>`any(${ids}::uuid[])`).orderBy("id").forUpdate().execute();
  return new Set(rows.map((r) => r.id));
}

/** Writes one snapshot row per collected label, stamped with the database clock and the active run. */
export async function insertSnapshots(
  tx: Tx,
  withSnapshots: Array<{ j: PollRow }>,
  at: Date,
  executionId: string | null,
  known: KnownIds,
): Promise<SnapshotRef[]> {
  return await writeSnapshotRows(
    tx,
    withSnapshots.flatMap(({ j }) =>
      j.outcome.snapshots.map((h) => ({
        deviceId: j.row.id,
        label: h.label,
        sha256: h.sha256,
        stableSha256: h.stableSha256 ?? null,
        module: j.module!.name,
        version: j.module!.version,
      }))
    ),
    at,
    executionId,
    known,
  );
}

/** The stored snapshots (id and label) per device. */
export function groupByDevice(
  rows: SnapshotRef[],
): Map<string, Array<{ id: string; endpoint_label: string }>> {
  // A device appears once per batch (one poll per device at a time), so (device, label) is unique.
  const byDevice = new Map<string, Array<{ id: string; endpoint_label: string }>>();
  for (const r of rows) {
    const list = byDevice.get(r.device_id) ?? [];
    list.push({ id: r.id, endpoint_label: r.endpoint_label });
    byDevice.set(r.device_id, list);
  }
  return byDevice;
}

/**
 * Records each written poll's time, status and error on its device, in one statement, and the certificate
 * a poll pinned on first use (`Outcome.pinnedCertSha256`) where the device has no pin yet and still the URL
 * and TLS mode the poll connected with.
 */
export async function updateDevices(tx: Tx, jobs: PollRow[], at: Date): Promise<void> {
  if (!jobs.length) return;
  const pins = jobs.map((j) => j.outcome.pinnedCertSha256 ?? null);
  const urls = jobs.map((j, i) => pins[i] === null ? null : j.row.base_url);
  await sql`${sql.raw(PREPARED)}
    update devices set last_poll_at = ${at}, last_poll_status = v.status, last_poll_error = v.error,
      pinned_cert_sha256 = case when devices.pinned_cert_sha256 is null and v.pin is not null
        and devices.base_url = v.url and devices.tls_verify_mode = 'self-signed'
        then v.pin else devices.pinned_cert_sha256 end
    from unnest(${jobs.map((j) => j.row.id)}::uuid[], ${jobs.map((j) => j.outcome.status)}::text[],
      ${jobs.map((j) => j.outcome.error)}::text[], ${pins}::text[], ${urls}::text[])
      as v(id, status, error, pin, url) where devices.id = v.id`.execute(tx);
}
