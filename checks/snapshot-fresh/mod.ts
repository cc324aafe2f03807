import { defineCheck } from "@dutlab/core";

/** Snapshots older than this fail (spec 8: under 60 minutes). */
export const MAX_AGE_MINUTES = 60;

/** `snapshot-fresh`: the latest `system_info` snapshot is less than 60 minutes old (all vendors). */
export default defineCheck({
  kind: "check",
  id: "snapshot-fresh",
  coreVersion: "^1.0.0",
  description: `Latest system_info snapshot is less than ${MAX_AGE_MINUTES} minutes old`,
  label: "system_info",
  appliesTo: (device, plan) => plan.vendors.includes(device.vendor),
  evaluate(snapshot, _plan, { now }) {
    const ageMs = now.getTime() - snapshot.collectedAt.getTime();
    const minutes = Math.floor(ageMs / 60_000);
    const pass = ageMs < MAX_AGE_MINUTES * 60_000;
    return {
      pass,
      detail:
        `latest system_info snapshot is ${minutes} min old (collected ${snapshot.collectedAt.toISOString()}; ` +
        `limit ${MAX_AGE_MINUTES} min)`,
    };
  },
});
