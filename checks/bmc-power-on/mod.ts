/**
 * `bmc-power-on`: the system a server management controller manages is powered on (`PowerState` `On`).
 * Reads the `system_info` snapshot through the adapter's `powerState` fact.
 *
 * @module
 */
import { type CheckDefinition, defineCheck } from "@dutlab/core";

/** The `bmc-power-on` pre-flight check (the module documentation says what it asks and reads). */
export default defineCheck({
  id: "bmc-power-on",
  coreVersion: "^1.0.0",
  description: "Server management controller: the managed system is powered on",
  label: "system_info",
  optIn: true,
  needs: ["powerState"],
  evaluate(snapshot, _plan, { facts }) {
    const state = facts.powerState(snapshot.payload);
    return state === "On"
      ? { pass: true, detail: "system power state On" }
      : { pass: false, detail: `system power state ${state ?? "not reported"} (expected On)` };
  },
}) as CheckDefinition<"powerState">;
