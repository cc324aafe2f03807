/**
 * `serve`'s first half (`openServe`), apart from `bootstrap.ts` so that `@dutlab/core/serve` loads only what
 * opens the database; `complete()` loads the runtime on demand.
 *
 * @module
 */
import { sql } from "kysely";
import type { LoadedModules } from "../registry.ts";
import type { Runtime } from "./handle.ts";
import type { Env } from "./config.ts";
import { start } from "./start.ts";
import type { Db } from "../db/open.ts";

/** `serve`'s first half (see {@link openServe}): the database is open, migrated and answering. */
export interface OpenedServe {
  /** The parsed environment (HOST and PORT to listen on; no secret is needed to listen). */
  config: Env;
  /** The database's kind, as `/readyz` names it. */
  kind: Db["kind"];
  /** Resolves when the database answers a query (`select 1`), rejects when it does not. */
  ping(): Promise<void>;
  /**
   * The second half: every service, the PDF signing certificate checked, the signing keys registered; the
   * same as `bootstrap` (runtime/bootstrap.ts) with `serve: true`. On failure it closes the database,
   * releases the data directory and rejects with the StartupError.
   */
  complete(): Promise<Runtime>;
}

/**
 * `serve` in two halves, so that `/readyz` answers as soon as the database does (issue 34 point 5): this one
 * parses the environment, takes the data directory, opens and migrates the database; `complete()` builds the
 * services. Together they are exactly `bootstrap` (runtime/bootstrap.ts) with `serve: true`.
 */
export async function openServe(
  modules: LoadedModules,
  env: Record<string, string | undefined> = Deno.env.toObject(),
): Promise<OpenedServe> {
  const st = await start(modules, env, "serve", true);
  return {
    config: st.parsed,
    kind: st.db.kind,
    ping: async () => void await sql`select 1`.execute(st.db.kysely),
    complete: async () => (await import("./bootstrap.ts")).completeServe(st),
  };
}
