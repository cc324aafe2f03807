/**
 * The logger every floor of core uses: a small interface of our own, so that no logging library's type is
 * part of `@dutlab/core`'s public face. LogTape is the implementation; `runtime/logging.ts` configures it.
 */
import { getLogger } from "@logtape/logtape";

/**
 * A structured logger (adapters get one in their context as `ctx.log`). Messages are templates whose
 * `{placeholders}` name properties; secrets never reach a log, so pass ids and hostnames only.
 *
 * @example
 * ```ts
 * import type { AdapterContext } from "@dutlab/core";
 * // The values a caller has; the example type-checks (deno check --doc) and is not run.
 * async function example(ctx: AdapterContext) {
 *   ctx.log.info("Collected {endpoint} from {hostname}", { endpoint: "system", hostname: "fw1" });
 * }
 * ```
 */
export interface Logger {
  /** Detail useful while debugging. */
  debug(message: string, properties?: Record<string, unknown>): void;
  /** A normal event worth recording. */
  info(message: string, properties?: Record<string, unknown>): void;
  /** Something went wrong but the work goes on. */
  warn(message: string, properties?: Record<string, unknown>): void;
  /** A failure that needs attention. */
  error(message: string, properties?: Record<string, unknown>): void;
}

/** A logger under the `dutlab` category, e.g. `logger("poller")`. */
export function logger(...category: string[]): Logger {
  return getLogger(["dutlab", ...category]);
}
