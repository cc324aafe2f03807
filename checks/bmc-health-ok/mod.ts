/**
 * `bmc-health-ok`: the server management controller's system, chassis and manager each report their health
 * as `OK`. Reads the `system_info`, `chassis_info` and `manager_info` snapshots through the adapter's
 * `resourceHealth` fact; the detail names the first resource that is not OK.
 *
 * @module
 */
import { type CheckDefinition, type CheckSnapshot, defineCheck } from "@dutlab/core";

/** The labels read, in the order they are judged (the system first). */
export const RESOURCES = ["system_info", "chassis_info", "manager_info"] as const;

/** The `bmc-health-ok` pre-flight check (the module documentation says what it asks and reads). */
export default defineCheck({
  id: "bmc-health-ok",
  coreVersion: "^1.0.0",
  description: "Server management controller: system, chassis and manager health is OK",
  label: "system_info",
  optIn: true,
  alsoReads: ["chassis_info", "manager_info"],
  needs: ["resourceHealth"],
  evaluate(snapshot, _plan, { facts, related }) {
    const read = (label: string): CheckSnapshot | null =>
      label === snapshot.endpointLabel ? snapshot : related?.[label] ?? null;
    const seen: string[] = [];
    for (const label of RESOURCES) {
      const s = read(label);
      if (!s) {
        return {
          pass: false,
          detail: `no ${label} snapshot of this device yet: take a snapshot, then re-run`,
        };
      }
      const { resource, health } = facts.resourceHealth(s.payload);
      if (health !== "OK") {
        return {
          pass: false,
          detail: `${resource} health is ${health ?? "not reported"} (expected OK)` +
            (seen.length ? `; ${seen.join(", ")} OK` : ""),
        };
      }
      seen.push(resource);
    }
    return { pass: true, detail: `health OK: ${seen.join(", ")}` };
  },
}) as CheckDefinition<"resourceHealth">;
