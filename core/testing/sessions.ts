import { logger as coreLogger } from "../src/util/log.ts";
import type { Logger } from "../src/util/log.ts";

/**
 * A logger under a category, as core hands one to an adapter's `connect` (`log: logger("test")`).
 *
 * @param category The log category (e.g. `"test"`).
 * @returns A logger writing under `["dutlab", ...category]`.
 */
export function logger(...category: string[]): Logger {
  return coreLogger(...category);
}
