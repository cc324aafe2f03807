import { type CatalogHaState, defineCheck } from "@dutlab/core";

const SANE: readonly CatalogHaState[] = ["ACTIVE", "STANDBY_READY", "NEGOTIATION", "JOIN"];

/**
 * `ngfw-ha-state-sane`: the firewall's HA state maps to ACTIVE, STANDBY_READY, NEGOTIATION or JOIN,
 * using the mapping the vendor-a-ngfw adapter documents (its `facts.haState`).
 */
export default defineCheck({
  kind: "check",
  id: "ngfw-ha-state-sane",
  coreVersion: "^1.0.0",
  description: "Firewall HA state is ACTIVE, STANDBY_READY, NEGOTIATION or JOIN",
  label: "ha_status",
  appliesTo: (device, plan) => device.vendor === "vendor-a-ngfw" && plan.vendors.includes(device.vendor),
  evaluate(snapshot, _plan, { facts }) {
    if (!facts.haState) throw new Error(`vendor ${snapshot.vendor} offers no haState reading`);
    const { raw, mapped } = facts.haState(snapshot.payload);
    const pass = mapped !== null && SANE.includes(mapped);
    return {
      pass,
      detail: mapped === null
        ? `HA state ${raw} maps to no sane state (expected one of ${SANE.join(", ")})`
        : `HA state ${raw} (maps to ${mapped})`,
    };
  },
});
