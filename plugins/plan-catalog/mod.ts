/**
 * `@dutlab/plugin-plan-catalog`: the test-plan catalog as data. Plans have stable identifiers (spec 9);
 * `catalogVersion` goes up by one whenever anything in `plans` changes (README.md, "catalogVersion policy").
 *
 * @module
 */
import { definePlugin, type Plan, type PlanDependency, type PluginDefinition } from "@dutlab/core";

/**
 * Every device of these roles takes part, whatever its vendor: the firewalls under test, the switch fabric
 * and the servers' BMCs. The plans name no vendor (no `vendors`): a check applies to a device when its
 * adapter serves it, so an adapter added later joins these plans with no edit here.
 */
const ROLES = ["ngfw", "switch", "bmc"];

/**
 * What a throughput plan measures is the firewall as configured at the start: its software (system_info
 * without clocks and uptime), what it decrypts, which traffic it admits, where it takes time from (log and
 * session timestamps, certificate validity during re-signing) and how its HA pair stands. A change to one of
 * these during a run makes the verdict `invalid` (docs/runs.md). Interfaces and resource gauges are left
 * out: their payloads carry link and counter state that moves under load without a configuration change.
 */
const FIREWALL: PlanDependency[] = [{
  deviceRole: "ngfw",
  labels: ["system_info", "decrypt_policy", "access_rules", "ntp_config", "ha_status"],
}];

/**
 * Warm-up, ramp, 30 minutes at peak, cool-down: 50 minutes in all. Loads are what the generator offers
 * through the firewall pair; values are written out so that the frozen plan holds no float artefacts.
 */
function phases(
  peak: { throughputGbps: number; connectionsPerSecond: number },
  ramp: { throughputGbps: number; connectionsPerSecond: number },
  idle: { throughputGbps: number; connectionsPerSecond: number },
): Plan["phases"] {
  return [
    { name: "warm-up", durationS: 300, load: { ...idle } },
    { name: "ramp", durationS: 600, load: { ...ramp } },
    { name: "sustained peak", durationS: 1800, load: { ...peak } },
    { name: "cool-down", durationS: 300, load: { ...idle } },
  ];
}

const trafficMix = "HTTPS 100% (TLS 1.3 70%, TLS 1.2 30%), HTTP/1.1 keep-alive, GET";
const objectSizeKiB = "1-1024, median 64";

/** The catalog. Identifiers are never renamed or reused; a changed plan bumps `catalogVersion`. */
export const plans: Plan[] = [
  {
    identifier: "ngfw-throughput-decrypt-on",
    displayName: "NGFW throughput with TLS decryption",
    description: "HTTPS throughput and latency through the firewall pair with TLS decryption (decrypt and " +
      "re-sign) on all outbound HTTPS, mixed object sizes, 30 minutes at peak.",
    tlsDecrypt: "on",
    sloTargetP99Ms: 250,
    maxErrorRatePct: 1,
    deploymentMode: "inline-routed",
    phases: phases(
      { throughputGbps: 8, connectionsPerSecond: 20_000 },
      { throughputGbps: 4, connectionsPerSecond: 5_000 },
      { throughputGbps: 0.8, connectionsPerSecond: 500 },
    ),
    deviceRoles: [...ROLES],
    dependsOn: structuredClone(FIREWALL),
    parameters: {
      trafficMix,
      objectSizeKiB,
      concurrentConnections: 200_000,
      decryptPolicy: "decrypt-resign on all outbound HTTPS",
      firewallHa: "active/standby pair",
      loadGenerator: "k6 (summary export)",
    },
  },
  {
    identifier: "ngfw-throughput-decrypt-off",
    displayName: "NGFW throughput without TLS decryption",
    description:
      "HTTPS throughput and latency through the firewall pair with TLS decryption off (inspection " +
      "of connection metadata only). Same phases and traffic mix as the decrypt-on plan, at the higher load " +
      "a firewall sustains without decryption.",
    tlsDecrypt: "off",
    sloTargetP99Ms: 120,
    maxErrorRatePct: 1,
    deploymentMode: "inline-routed",
    phases: phases(
      { throughputGbps: 20, connectionsPerSecond: 50_000 },
      { throughputGbps: 10, connectionsPerSecond: 12_500 },
      { throughputGbps: 2, connectionsPerSecond: 1_250 },
    ),
    deviceRoles: [...ROLES],
    dependsOn: structuredClone(FIREWALL),
    parameters: {
      trafficMix,
      objectSizeKiB,
      concurrentConnections: 500_000,
      decryptPolicy: "none",
      firewallHa: "active/standby pair",
      loadGenerator: "k6 (summary export)",
    },
  },
  {
    identifier: "ngfw-throughput-decrypt-on-server-health",
    displayName: "NGFW throughput with TLS decryption, server health gated",
    description:
      "The decrypt-on throughput plan, started only when every server behind the firewall pair is " +
      "powered on and its management controller reports system, chassis and manager health OK, so that a " +
      "degraded server does not pass for a firewall limit.",
    tlsDecrypt: "on",
    sloTargetP99Ms: 250,
    maxErrorRatePct: 1,
    deploymentMode: "inline-routed",
    phases: phases(
      { throughputGbps: 8, connectionsPerSecond: 20_000 },
      { throughputGbps: 4, connectionsPerSecond: 5_000 },
      { throughputGbps: 0.8, connectionsPerSecond: 500 },
    ),
    deviceRoles: [...ROLES],
    checks: ["bmc-health-ok", "bmc-power-on"],
    // "Started only when ...": a run of this plan starts only over a passing pre-flight (an admin may
    // override with a reason, docs/runs.md "Gating the start").
    startGate: "preflight-pass",
    // The servers' health gates the start, so a server whose host or health state changed mid-run also
    // voids the run: system_info carries the power state and health the checks read.
    dependsOn: [...structuredClone(FIREWALL), { deviceRole: "bmc", labels: ["system_info"] }],
    parameters: {
      trafficMix,
      objectSizeKiB,
      concurrentConnections: 200_000,
      decryptPolicy: "decrypt-resign on all outbound HTTPS",
      firewallHa: "active/standby pair",
      loadGenerator: "k6 (summary export)",
      serverHealth: "every BMC: powered on, system/chassis/manager health OK",
    },
  },
];

/** The plan catalog plugin: the catalog of test plans above, as the registry loads it. */
export default definePlugin({
  name: "plan-catalog",
  coreVersion: "^1.0.0",
  planCatalog: { catalogVersion: 8, plans },
}) as PluginDefinition & Required<Pick<PluginDefinition, "planCatalog">>;
