import { definePlugin, type Plan } from "@dutlab/core";

const VENDORS = ["vendor-a-ngfw", "vendor-b-ngfw", "vendor-a-switch", "vendor-a-bmc"];

const phases = (peakGbps: number): Plan["phases"] => [
  { name: "warm-up", durationS: 300, load: { throughputGbps: peakGbps * 0.1, connectionsPerSecond: 500 } },
  { name: "ramp", durationS: 600, load: { throughputGbps: peakGbps * 0.5, connectionsPerSecond: 5_000 } },
  {
    name: "sustained peak",
    durationS: 1800,
    load: { throughputGbps: peakGbps, connectionsPerSecond: 20_000 },
  },
  { name: "cool-down", durationS: 300, load: { throughputGbps: peakGbps * 0.1, connectionsPerSecond: 500 } },
];

const common = {
  vendors: VENDORS,
  deviceRoles: ["ngfw", "switch", "bmc"],
  deploymentMode: "inline-routed",
} as const;

/** The test-plan catalog: plans are data, identified by stable identifiers (spec 9). */
export default definePlugin({
  kind: "plugin",
  name: "plan-catalog",
  coreVersion: "^1.0.0",
  planCatalog: {
    catalogVersion: 3,
    plans: [
      {
        identifier: "ngfw-throughput-decrypt-on",
        displayName: "NGFW throughput with TLS decryption",
        description:
          "HTTPS throughput and latency through the firewall pair with TLS decryption (resign) enabled, " +
          "mixed object sizes, sustained at peak for 30 minutes.",
        tlsDecrypt: "on",
        sloTargetP99Ms: 250,
        ...common,
        vendors: [...common.vendors],
        deviceRoles: [...common.deviceRoles],
        phases: phases(8),
        parameters: {
          trafficMix: "HTTPS 100% (TLS 1.3 70%, TLS 1.2 30%)",
          objectSizeKiB: "1-1024, median 64",
          concurrentConnections: 200_000,
          decryptPolicy: "decrypt-resign on all outbound HTTPS",
          loadGenerator: "k6 (summary export)",
        },
      },
      {
        identifier: "ngfw-throughput-decrypt-off",
        displayName: "NGFW throughput without TLS decryption",
        description:
          "HTTPS throughput and latency through the firewall pair with TLS decryption disabled (inspection " +
          "of metadata only), same load profile as the decrypt-on plan for comparison.",
        tlsDecrypt: "off",
        sloTargetP99Ms: 120,
        ...common,
        vendors: [...common.vendors],
        deviceRoles: [...common.deviceRoles],
        phases: phases(20),
        parameters: {
          trafficMix: "HTTPS 100% (TLS 1.3 70%, TLS 1.2 30%)",
          objectSizeKiB: "1-1024, median 64",
          concurrentConnections: 500_000,
          decryptPolicy: "none",
          loadGenerator: "k6 (summary export)",
        },
      },
    ],
  },
});
