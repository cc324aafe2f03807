/**
 * What changes on every poll of a PAN-OS firewall without meaning a change (README "Volatile paths"): the
 * clock and uptime of `show system info`, the seconds an HA node has been in its state, the `top` text of
 * `show system resources`.
 */
export const VOLATILE_PATHS = {
  system_info: ["/response/result/system/time", "/response/result/system/uptime"],
  resource_usage: ["/response/result"],
  ha_status: [
    "/response/result/group/local-info/state-duration",
    "/response/result/group/peer-info/state-duration",
  ],
} as const;
