/**
 * What changes on every poll of an FDM device without meaning a change (README "Volatile paths"): the
 * device clock, the uptime and the automatic security-intelligence feed updates (several a day).
 */
export const VOLATILE_PATHS = {
  system_info: ["/currentTime", "/systemUptime", "/securityIntelligenceFeedsInfo/lastFeedsUpdateDate"],
} as const;
