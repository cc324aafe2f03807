/**
 * `ntp-source-configured`: at least one time server is configured (all vendors). Reads the `ntp_config`
 * snapshot through the adapter's `ntpServers` fact.
 *
 * @module
 */
import { type CheckDefinition, defineCheck } from "@dutlab/core";

/** The `ntp-source-configured` pre-flight check (the module documentation says what it asks and reads). */
export default defineCheck({
  id: "ntp-source-configured",
  coreVersion: "^1.0.0",
  description: "At least one NTP time source is configured",
  label: "ntp_config",
  needs: ["ntpServers"],
  evaluate(snapshot, _plan, { facts }) {
    const servers = facts.ntpServers(snapshot.payload);
    return servers.length > 0
      ? { pass: true, detail: `${servers.length} time server(s) configured: ${servers.join(", ")}` }
      : { pass: false, detail: "no time server is configured" };
  },
}) as CheckDefinition<"ntpServers">;
