/**
 * `ngfw-deploy-clean`: the firewall's newest deployment job is `DEPLOYED` and nothing is pending. Reads the
 * `deploy_status` snapshot through the adapter's `deployState` fact.
 *
 * @module
 */
import { type CheckDefinition, defineCheck } from "@dutlab/core";

/** The `ngfw-deploy-clean` pre-flight check (the module documentation says what it asks and reads). */
export default defineCheck({
  id: "ngfw-deploy-clean",
  coreVersion: "^1.0.0",
  description: "Firewall configuration is deployed with no pending changes",
  label: "deploy_status",
  needs: ["deployState"],
  evaluate(snapshot, _plan, { facts }) {
    const { state, pendingChanges } = facts.deployState(snapshot.payload);
    const observed = `deployment state ${state}, ${pendingChanges} pending change(s)`;
    const problems = [
      ...(state === "DEPLOYED" ? [] : ["expected DEPLOYED"]),
      ...(pendingChanges === 0 ? [] : ["deploy or discard the pending changes"]),
    ];
    return problems.length === 0
      ? { pass: true, detail: observed }
      : { pass: false, detail: `${observed}; ${problems.join("; ")}` };
  },
}) as CheckDefinition<"deployState">;
