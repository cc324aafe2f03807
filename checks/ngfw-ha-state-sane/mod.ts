/**
 * `ngfw-ha-state-sane`: the firewall's HA state maps to `ACTIVE`, `STANDBY_READY`, `NEGOTIATION` or `JOIN`.
 * Reads the `ha_status` snapshot through the adapter's `haState` fact, which holds the vendor's mapping.
 *
 * @module
 */
import { type CatalogHaState, type CheckDefinition, defineCheck } from "@dutlab/core";

/** The HA states a throughput run may start in (spec 4.9). */
export const SANE_HA_STATES: readonly CatalogHaState[] = ["ACTIVE", "STANDBY_READY", "NEGOTIATION", "JOIN"];

/** The `ngfw-ha-state-sane` pre-flight check (the module documentation says what it asks and reads). */
export default defineCheck({
  id: "ngfw-ha-state-sane",
  coreVersion: "^1.0.0",
  description: "Firewall HA state is ACTIVE, STANDBY_READY, NEGOTIATION or JOIN",
  label: "ha_status",
  needs: ["haState"],
  evaluate(snapshot, _plan, { facts }) {
    const { raw, mapped } = facts.haState(snapshot.payload);
    const pass = mapped !== null && SANE_HA_STATES.includes(mapped);
    return {
      pass,
      detail: mapped === null
        ? `HA state ${raw} maps to no catalog state (expected one of ${SANE_HA_STATES.join(", ")})`
        : pass
        ? `HA state ${raw} (maps to ${mapped})`
        : `HA state ${raw} (maps to ${mapped}; expected one of ${SANE_HA_STATES.join(", ")})`,
    };
  },
}) as CheckDefinition<"haState">;
