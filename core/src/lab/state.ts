/**
 * A run's lab state (at its start and at its end) as a reader of the lab read that pre-flight uses
 * (`readLab` in lab/read.ts): the enabled devices, each firewall's decrypt state and each device's
 * inventory, from the latest snapshots of only the labels they need, each payload parsed once (through the
 * payload cache, shared with the pre-flight of the same read).
 *
 * @module
 */
import type { Registry } from "../registry.ts";
import { FIREWALL, serves } from "../capability.ts";
import type { LabRead, LabWants, Latest } from "./read.ts";

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
  /** The testbed the run started on (docs/reservations.md); absent for a run on the whole lab. */
  testbed?: string;
  /** Per device id: decrypt state from its latest decrypt-policy snapshot ({@link FIREWALL}'s label) at start. */
  decrypt: Record<
    string,
    { state: "on" | "off" | "unknown"; snapshotId: string | null; ruleCount: number | null }
  >;
}

/** Decrypt state of a firewall's decrypt-policy payload ({@link FIREWALL}'s label), through the vendor adapter's facts. */
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
 * The labels the lab state reads: {@link FIREWALL}'s label of the devices whose adapter serves it, and the
 * adapter's `inventoryLabel` of the devices whose adapter reads an inventory from it.
 */
export function labStateWants(registry: Registry): LabWants {
  return (devices) => {
    const wanted = new Map<string, Set<string>>();
    const want = (label: string, id: string) => {
      let ids = wanted.get(label);
      if (!ids) wanted.set(label, ids = new Set());
      ids.add(id);
    };
    for (const d of devices) {
      const adapter = registry.adapters.get(d.vendor)?.adapter;
      if (serves(adapter, FIREWALL)) want(FIREWALL.label, d.id);
      if (adapter?.inventoryLabel && adapter.facts?.inventory) want(adapter.inventoryLabel, d.id);
    }
    return wanted;
  };
}

/** Enabled devices, each firewall's decrypt state and each device's inventory, from a read that asked for {@link labStateWants}. */
export function labStateOf(registry: Registry, read: LabRead): StartState {
  const { devices, latest, payloads } = read;
  /** The latest snapshot of a label of a device, when its payload was read. */
  const latestOf = (label: string, id: string): Latest | undefined => {
    const s = latest.get(label)?.get(id);
    return s && payloads.has(s.sha) ? s : undefined;
  };
  const decrypt: StartState["decrypt"] = {};
  for (const d of devices) {
    const adapter = registry.adapters.get(d.vendor)?.adapter;
    if (!adapter || !serves(adapter, FIREWALL)) continue;
    const s = latestOf(FIREWALL.label, d.id);
    // serves(FIREWALL) means the adapter offers decryptRuleCount; the payload is parsed once, here.
    let ruleCount: number | null = null;
    try {
      ruleCount = s ? adapter.facts!.decryptRuleCount!(payloads.get(s.sha)!.value) : null;
    } catch { /* a payload the adapter cannot read: state unknown */ }
    decrypt[d.id] = {
      state: ruleCount === null ? "unknown" : ruleCount > 0 ? "on" : "off",
      snapshotId: s?.id ?? null,
      ruleCount,
    };
  }
  const inventory: Record<string, InventoryEntry> = {};
  for (const d of devices) {
    const def = registry.adapters.get(d.vendor)?.adapter;
    const label = def?.inventoryLabel;
    const entry: InventoryEntry = {
      status: "not-supported",
      model: null,
      softwareVersion: null,
      serialNumber: null,
      snapshotId: null,
      payloadSha256: null,
    };
    const readInventory = def?.facts?.inventory;
    if (label && readInventory) {
      const s = latestOf(label, d.id);
      if (!s) entry.status = "no-snapshot";
      else {
        entry.snapshotId = s.id;
        entry.payloadSha256 = s.sha;
        try {
          const inv = readInventory(payloads.get(s.sha)!.value);
          const str = (v: unknown) => typeof v === "string" && v.trim() ? v.trim().slice(0, 200) : null;
          entry.model = str(inv?.model);
          entry.softwareVersion = str(inv?.softwareVersion);
          entry.serialNumber = str(inv?.serialNumber);
          entry.status = "read";
        } catch {
          entry.status = "unreadable";
        }
      }
    }
    inventory[d.id] = entry;
  }
  return {
    devices: devices.map((d) => ({
      id: d.id,
      hostname: d.hostname,
      vendor: d.vendor,
      deviceRole: d.deviceRole,
    })),
    decrypt,
    inventory,
  };
}
