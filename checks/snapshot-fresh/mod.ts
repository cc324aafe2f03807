/**
 * `snapshot-fresh`: the latest `system_info` snapshot is less than 60 minutes old (all vendors). Reads only
 * the snapshot's `collectedAt` and the engine's evaluation time, never the payload.
 *
 * @module
 */
import { type CheckDefinition, defineCheck } from "@dutlab/core";

/** Snapshots this old or older fail (spec 8: freshness accepted under 60 minutes). */
export const MAX_AGE_MINUTES = 60;

/** The `snapshot-fresh` pre-flight check (the module documentation says what it asks and reads). */
export default defineCheck({
  id: "snapshot-fresh",
  coreVersion: "^1.0.0",
  description: `Latest system_info snapshot is less than ${MAX_AGE_MINUTES} minutes old`,
  label: "system_info",
  evaluate(snapshot, _plan, { now }) {
    const ageMs = now.getTime() - snapshot.collectedAt.getTime();
    const at = snapshot.collectedAt.toISOString();
    const limit = `limit ${MAX_AGE_MINUTES} min`;
    // Another instance's clock may run a little ahead: a snapshot "from the future" was just taken.
    if (ageMs < 0) {
      return {
        pass: true,
        detail: `latest system_info snapshot was collected ${at}, ${
          Math.ceil(-ageMs / 1000)
        } s after this evaluation (clocks differ); ${limit}`,
      };
    }
    const pass = ageMs < MAX_AGE_MINUTES * 60_000;
    return {
      pass,
      detail:
        `latest system_info snapshot is ${Math.floor(ageMs / 60_000)} min old (collected ${at}; ${limit})` +
        (pass ? "" : ": take a snapshot, then re-run pre-flight"),
    };
  },
}) as CheckDefinition<never>;
