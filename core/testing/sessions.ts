import { logger as coreLogger } from "../src/util/log.ts";
import type { Logger } from "../src/util/log.ts";

// The session registry core's poll cycle parks adapter sessions in (TTL included), for an adapter test that
// drives its own cycles: `connectTo(adapter, sim, { credentials, sessions })`. Published by core's own face.
export { SessionRegistry } from "../mod.ts";

/**
 * A logger under a category, as core hands one to an adapter's `connect` (`log: logger("test")`).
 *
 * @param category The log category (e.g. `"test"`).
 * @returns A logger writing under `["dutlab", ...category]`.
 */
export function logger(...category: string[]): Logger {
  return coreLogger(...category);
}
