import type { AdapterDefinition, AdapterFacts, CollectedSnapshot } from "../src/adapter.ts";

/**
 * The label each standard fact reads (`inventory` reads the adapter's `inventoryLabel`); a fact read from
 * several labels lists them, and `readFacts` gives its reading of each, in that order.
 */
export const FACT_LABELS: Readonly<
  Record<Exclude<keyof AdapterFacts, "inventory">, string | readonly string[]>
> = {
  decryptRuleCount: "decrypt_policy",
  ntpServers: "ntp_config",
  haState: "ha_status",
  deployState: "deploy_status",
  powerState: "system_info",
  resourceHealth: ["system_info", "chassis_info", "manager_info"],
};

/**
 * Every fact the adapter declares, read from the snapshots of one poll (a throw propagates): `inventory` from
 * the adapter's `inventoryLabel`, `decryptRuleCount` from `decrypt_policy`, `ntpServers` from `ntp_config`,
 * `haState` from `ha_status`, `deployState` from `deploy_status`, `powerState` from `system_info`, and
 * `resourceHealth` from each of `system_info`, `chassis_info` and `manager_info` (an array of three readings,
 * in that order).
 */
export function readFacts(adapter: AdapterDefinition, snaps: CollectedSnapshot[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const facts = adapter.facts ?? {};
  const payload = (label: string) => {
    const s = snaps.find((x) => x.label === label);
    if (!s) throw new Error(`No snapshot labelled "${label}" was collected`);
    return s.payload;
  };
  for (const [name, label] of Object.entries(FACT_LABELS)) {
    const fn = facts[name as keyof typeof FACT_LABELS] as ((p: unknown) => unknown) | undefined;
    if (fn) out[name] = typeof label === "string" ? fn(payload(label)) : label.map((l) => fn(payload(l)));
  }
  if (facts.inventory) {
    if (!adapter.inventoryLabel) throw new Error("facts.inventory is declared without an inventoryLabel");
    out.inventory = facts.inventory(payload(adapter.inventoryLabel));
  }
  return out;
}
