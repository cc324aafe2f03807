import type { Kysely } from "kysely";
import type { Database } from "../db/schema.ts";
import type { DeviceRow } from "../devices.ts";
import type { Registry } from "../registry.ts";

/**
 * What a device said about itself at a run's start, through its adapter's `inventory` fact over the latest
 * snapshot of the adapter's `inventoryLabel`. `status`: `read`; `no-snapshot` (no snapshot of that label
 * yet); `unreadable` (the adapter could not read the payload); `not-supported` (the adapter has no inventory
 * fact, or the vendor no adapter).
 */
export interface InventoryEntry {
  status: "read" | "no-snapshot" | "unreadable" | "not-supported";
  model: string | null;
  softwareVersion: string | null;
  serialNumber: string | null;
  snapshotId: string | null;
  payloadSha256: string | null;
}

/** Decrypt state of the firewalls recorded at a run's start. */
export interface StartState {
  devices: Array<{ id: string; hostname: string; vendor: string; deviceRole: string | null }>;
  /** Per device id (runs started since inventories were recorded). */
  inventory?: Record<string, InventoryEntry>;
  /** Per device id: decrypt state from its latest `decrypt_policy` snapshot at start. */
  decrypt: Record<
    string,
    { state: "on" | "off" | "unknown"; snapshotId: string | null; ruleCount: number | null }
  >;
}

/** Decrypt state of a `decrypt_policy` payload, through the vendor adapter's facts. */
export function decryptStateOf(
  registry: Registry,
  vendor: string,
  payload: unknown,
): "on" | "off" | "unknown" {
  const f = registry.adapters.get(vendor)?.adapter.facts?.decryptRuleCount;
  if (!f) return "unknown";
  try {
    return f(payload) > 0 ? "on" : "off";
  } catch {
    return "unknown";
  }
}

/**
 * `TLSDecryptModeChanged` (spec 6): when a snapshot stored during an active run shows a firewall's
 * decrypt state differing from its last known state in the run (the state at start, then the last
 * alert), record an alert. Runs in the poll cycle's transaction. `startState` reads the run's start
 * state (the caller reads it once for all the polls it writes together).
 */
export async function recordDecryptAlerts(
  tx: Kysely<Database>,
  registry: Registry,
  executionId: string,
  startState: () => Promise<StartState | undefined>,
  device: DeviceRow,
  rows: Array<{ id: string; endpoint_label: string }>,
  snapshots: Array<{ label: string; payload: unknown }>,
  at: Date,
): Promise<void> {
  const i = snapshots.findIndex((s) => s.label === "decrypt_policy");
  if (i < 0) return;
  const now = decryptStateOf(registry, device.vendor, snapshots[i].payload);
  if (now === "unknown") return;
  const start = (await startState())?.decrypt?.[device.id]?.state;
  if (!start || start === "unknown") return;
  const last = await tx.selectFrom("run_alerts").select("to_state").where("execution_id", "=", executionId)
    .where("device_id", "=", device.id).orderBy("id", "desc").limit(1).executeTakeFirst();
  const prev = (last?.to_state as "on" | "off" | undefined) ?? start;
  if (prev === now) return;
  const snap = rows.find((r) => r.endpoint_label === "decrypt_policy")!;
  await tx.insertInto("run_alerts").values({
    execution_id: executionId,
    name: "TLSDecryptModeChanged",
    at,
    device_id: device.id,
    device_hostname: device.hostname,
    from_state: prev,
    to_state: now,
    snapshot_id: snap.id,
  }).execute();
}
