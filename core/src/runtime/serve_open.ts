/**
 * `serve`'s first half (`openServe`), apart from `bootstrap.ts` so that `@dutlab/core/serve` loads only what
 * opens the database; `completeServe` (`@dutlab/core/runtime`) builds the rest.
 *
 * @module
 */
import { sql } from "kysely";
import type { LoadedModules } from "../registry.ts";
import { start, type Started } from "./start.ts";

/** `serve`'s first half (see {@link openServe}): the database is open, migrated and answering. */
export interface OpenedServe {
  /** Where to listen, from the parsed environment (no secret is needed to listen). */
  readonly config: { readonly HOST: string; readonly PORT: number };
  /** The database's kind, as `/readyz` names it. */
  readonly kind: "pglite" | "postgres";
  /** Resolves when the database answers a query (`select 1`), rejects when it does not. */
  ping(): Promise<void>;
}

/** The start each {@link OpenedServe} stands for, for `completeServe` (runtime/bootstrap.ts) to finish. */
const opened = new WeakMap<OpenedServe, Started<"serve">>();

/** The start behind an {@link OpenedServe} (once: a second call throws). */
export function takeStarted(handle: OpenedServe): Started<"serve"> {
  const st = opened.get(handle);
  if (!st) throw new Error("completeServe: this openServe() was completed already, or is not one");
  opened.delete(handle);
  return st;
}

/**
 * `serve` in two halves, so that `/readyz` answers as soon as the database does (issue 34 point 5): this one
 * parses the environment, takes the data directory, opens and migrates the database; `completeServe(opened)`
 * (`@dutlab/core/runtime`) builds the services. Together they are exactly `bootstrap` (runtime/bootstrap.ts) with `serve: true`.
 */
export async function openServe(
  modules: LoadedModules,
  env: Record<string, string | undefined> = Deno.env.toObject(),
): Promise<OpenedServe> {
  const st = await start(modules, env, "serve", true);
  const handle: OpenedServe = {
    config: { HOST: st.parsed.HOST, PORT: st.parsed.PORT },
    kind: st.db.kind,
    ping: async () => void await sql`select 1`.execute(st.db.kysely),
  };
  opened.set(handle, st);
  return handle;
}
