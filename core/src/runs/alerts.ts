import type { Kysely } from "kysely";
import type { Database } from "../db/schema.ts";
import type { DeviceRow } from "../devices/store.ts";
import type { Registry } from "../registry.ts";
import type { PollWriteHook } from "../poller/store.ts";
import type { EventBus } from "../events/bus.ts";
import { FIREWALL } from "../capability.ts";
import { decryptStateOf, type StartState } from "../lab/state.ts";
import { jsonValue } from "../db/json.ts";
import { enqueueEvent } from "../notify/outbox.ts";

/** What {@link recordDecryptAlerts} needs to know about one stored poll. */
export interface DecryptAlertInput {
  /** The poll store's write transaction. */
  tx: Kysely<Database>;
  registry: Registry;
  /** The active run the snapshots were linked to. */
  executionId: string;
  /** Reads the run's start state (the caller reads it once for all the polls it writes together). */
  startState: () => Promise<StartState | undefined>;
  device: DeviceRow;
  /** The snapshots stored for the poll (id and label). */
  rows: Array<{ id: string; endpoint_label: string }>;
  /** What the poll collected (label and payload). */
  snapshots: Array<{ label: string; payload: unknown }>;
  /** The database clock at the write. */
  at: Date;
  /** Called with the alert recorded, if any (the write hook announces it as `alert.raised`). */
  raised?: (alert: RecordedAlert) => void;
}

/** A decrypt alert as recorded in `run_alerts`. */
export interface RecordedAlert {
  name: string;
  executionId: string;
  deviceId: string;
  hostname: string;
  from: "on" | "off";
  to: "on" | "off";
  snapshotId: string;
  at: Date;
}

/**
 * `TLSDecryptModeChanged` (spec 6): when a snapshot stored during an active run shows a firewall's
 * decrypt state differing from its last known state in the run (the state at start, then the last
 * alert), record an alert. Runs in the poll store's transaction (see {@link decryptAlertWriter}).
 */
export async function recordDecryptAlerts(input: DecryptAlertInput): Promise<void> {
  const { tx, registry, executionId, device, rows, snapshots, at } = input;
  const firewall = snapshots.find((s) => s.label === FIREWALL.label);
  if (!firewall) return;
  const now = decryptStateOf(registry, device.vendor, firewall.payload);
  if (now === "unknown") return;
  const start = (await input.startState())?.decrypt?.[device.id]?.state;
  if (!start || start === "unknown") return;
  const last = await tx.selectFrom("run_alerts").select("to_state").where("execution_id", "=", executionId)
    .where("device_id", "=", device.id).orderBy("id", "desc").limit(1).executeTakeFirst();
  const prev = (last?.to_state as "on" | "off" | undefined) ?? start;
  if (prev === now) return;
  const snap = rows.find((r) => r.endpoint_label === FIREWALL.label)!;
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
  const alert = {
    name: "TLSDecryptModeChanged",
    executionId,
    deviceId: device.id,
    hostname: device.hostname,
  };
  await enqueueEvent(tx, "dutlab.alert.raised", device.id, {
    ...alert,
    from: prev,
    to: now,
    snapshotId: snap.id,
    at: at.toISOString(),
  }, { severity: "warning", deviceTags: device.tags });
  input.raised?.({
    name: "TLSDecryptModeChanged",
    executionId,
    deviceId: device.id,
    hostname: device.hostname,
    from: prev,
    to: now,
    snapshotId: snap.id,
    at,
  });
}

/**
 * The runs feature's poll store write hook (registered when Services are built): records the decrypt
 * alerts of the polls written during an active run, reading the run's start state at most once per batch
 * and only when a firewall's poll needs it. With `events`, each alert recorded is announced as
 * `alert.raised` once the write has committed, after the poll's own live events (the poller names no runs
 * table).
 */
export function decryptAlertWriter(registry: Registry, events?: EventBus): PollWriteHook {
  return async ({ tx, at, executionId, polls, announce }) => {
    if (executionId === null) return;
    let start: Promise<StartState | undefined> | undefined;
    const startState = () =>
      start ??= tx.selectFrom("test_runs").select("start_state_json")
        .where("execution_id", "=", executionId).executeTakeFirst()
        .then((r) => r && jsonValue<StartState>(r.start_state_json));
    for (const p of polls) {
      await recordDecryptAlerts({
        tx,
        registry,
        executionId,
        startState,
        device: p.device,
        rows: p.rows,
        snapshots: p.snapshots,
        at,
        raised: events && ((a) =>
          announce(a.deviceId, () =>
            events.publish("alert.raised", {
              name: a.name,
              executionId: a.executionId,
              deviceId: a.deviceId,
              hostname: a.hostname,
              from: a.from,
              to: a.to,
              snapshotId: a.snapshotId,
              at: a.at.toISOString(),
            }))),
      });
    }
  };
}
