// Test-only helpers.
import { SessionRegistry } from "@dutlab/core";

/** A fresh session registry usable with `pollOnce`, `connectTo` and `releaseParked`. */
export function newRegistry(): SessionRegistry {
  return new SessionRegistry();
}

/** The device id `connectTo` uses by default. */
export const TEST_DEVICE_ID = "00000000-0000-4000-8000-000000000001";
