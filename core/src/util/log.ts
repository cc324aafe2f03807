/**
 * The logger every floor of core uses: a small interface of our own, so that no logging library's type is
 * part of `@dutlab/core`'s public face. LogTape is the implementation; `runtime/logging.ts` configures it.
 */
import { getLogger } from "@logtape/logtape";

/** Properties of a log record; `{name}` placeholders in the message are filled from them. */
export type LogProperties = Record<string, unknown>;

/**
 * A structured logger (adapters get one in their context as `ctx.log`). Messages are templates whose
 * `{placeholders}` name properties; secrets never reach a log, so pass ids and hostnames only.
 *
 * @example
 * ```ts
 * ctx.log.info("Collected {endpoint} from {hostname}", { endpoint: "system", hostname: "fw1" });
 * ```
 */
export interface Logger {
  /** Detail useful while debugging. */
  debug(message: string, properties?: LogProperties): void;
  /** A normal event worth recording. */
  info(message: string, properties?: LogProperties): void;
  /** Something went wrong but the work goes on. */
  warn(message: string, properties?: LogProperties): void;
  /** A failure that needs attention. */
  error(message: string, properties?: LogProperties): void;
}

/** A logger under the `dutlab` category, e.g. `logger("poller")`. */
export function logger(...category: string[]): Logger {
  return getLogger(["dutlab", ...category]);
}
