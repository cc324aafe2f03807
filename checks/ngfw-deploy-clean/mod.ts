import { defineCheck } from "@dutlab/core";

/** `ngfw-deploy-clean`: the firewall's last deployment is DEPLOYED and nothing is pending. */
export default defineCheck({
  kind: "check",
  id: "ngfw-deploy-clean",
  coreVersion: "^1.0.0",
  description: "Firewall configuration is deployed with no pending changes",
  label: "deploy_status",
  appliesTo: (device, plan) => device.vendor === "vendor-a-ngfw" && plan.vendors.includes(device.vendor),
  evaluate(snapshot, _plan, { facts }) {
    if (!facts.deployState) throw new Error(`vendor ${snapshot.vendor} offers no deployState reading`);
    const { state, pendingChanges } = facts.deployState(snapshot.payload);
    const pass = state === "DEPLOYED" && pendingChanges === 0;
    return {
      pass,
      detail: `deployment state ${state}, ${pendingChanges} pending change(s)` +
        (pass ? "" : state !== "DEPLOYED" ? "; expected DEPLOYED" : "; deploy the pending changes first"),
    };
  },
});
