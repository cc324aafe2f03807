/**
 * What changes on every poll of a Redfish BMC without meaning a change (README "Volatile paths"): the
 * manager's clock, an OEM DateTime resource's clock, and the sensor readings of Thermal and Power.
 */
export const VOLATILE_PATHS = {
  manager_info: ["/DateTime"],
  ntp_config: ["/managers/*/dateTime/DateTime"],
  thermal: ["/Temperatures/*/ReadingCelsius", "/Fans/*/Reading"],
  power: [
    "/PowerControl/*/PowerConsumedWatts",
    "/PowerControl/*/PowerMetrics",
    "/PowerSupplies/*/LastPowerOutputWatts",
    "/PowerSupplies/*/LineInputVoltage",
    "/Voltages/*/ReadingVolts",
  ],
} as const;
