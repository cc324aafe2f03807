/**
 * What changes on every poll of a FortiOS device without meaning a change (README "Volatile paths").
 * `revision` of a CMDB answer is the configuration revision of the whole device (it moves when any other
 * table changes), the interface monitor's `revision` is a clock; counters and gauges move all the time.
 */
const COUNTERS = ["tx_packets", "rx_packets", "tx_bytes", "rx_bytes", "tx_errors", "rx_errors"];

export const VOLATILE_PATHS = {
  resource_usage: ["/results/*/*/current", "/results/*/*/historical"],
  ntp_config: ["/revision"],
  decrypt_policy: ["/policies/*/revision", "/sslSshProfiles/*/revision"],
  ha_status: ["/revision"],
  // `vdom=*` answers one envelope per VDOM.
  interfaces: ["/*/revision", ...COUNTERS.map((c) => `/*/results/*/${c}`)],
} as const;
