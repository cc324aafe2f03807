/**
 * The handles a start returns: a poller's (`PollRuntime`) and a `serve`'s or admin tool's (`Runtime`).
 *
 * @module
 */
import type { Config, PollConfig } from "./config.ts";
import type { Db } from "../db/open.ts";
import type { Registry } from "../registry.ts";
import type { PollServices, Services } from "./services.ts";

/** A started poller (`deno task poll`): configuration, database, registry and poll services. */
export interface PollRuntime extends AsyncDisposable {
  /** The parsed poller configuration. */
  config: PollConfig;
  /** The open, migrated database. */
  db: Db;
  /** The validated modules. */
  registry: Registry;
  /** What the poll cycle uses: device store, poll store, transport limits, metrics. */
  services: PollServices;
  /**
   * Have `stop` run when the runtime closes, before what was deferred earlier (last in, first out): the
   * runtime owns the one shutdown path of its process, and what an entry point starts joins it here.
   */
  defer(stop: () => Promise<void>): void;
  /**
   * The one shutdown path: what was deferred (the polling worker, within the grace period), then the
   * logout of parked device sessions, the PDF printer and the database.
   */
  close(): Promise<void>;
}

/** A started `serve` (or admin tool): every secret and every service, closed with `close()`. */
export interface Runtime extends PollRuntime {
  /** The parsed server configuration (the poller's plus secrets and HTTP settings). */
  config: Config;
  /** Every service of the process. */
  services: Services;
}
