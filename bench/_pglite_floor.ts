/**
 * The start-up and memory floor of the embedded service (issue 53): the unavoidable work of `deno task serve`
 * on PGlite and nothing else. It imports the same PGlite build the service uses (the `@electric-sql/pglite`
 * of deno.json), opens a data directory, runs one query, then answers HTTP 200 on every request:
 *
 * - `--cold`: `DIR` must not exist; PGlite makes it from the shipped template
 *   (core/src/db/pglite_template.tar.gz, the service's template) through its own `loadDataDir`, its first open;
 * - otherwise `DIR` is an existing data directory (the service's own, after it stopped): a restart.
 *
 * PGlite runs with its defaults, or with `--shared-buffers 16MB` the service's own buffer pool (PGlite zeroes
 * the pool at every open: at its 128MB default that alone is about 0.4 s, work the service does not do). The
 * bench times spawn → first 200 from outside, and reads the process's RSS after it has answered (idle, after
 * one query). SIGTERM closes PGlite and exits.
 *
 * `deno run -A --lock=deno.dev.lock bench/_pglite_floor.ts --data DIR [--cold] [--shared-buffers 16MB]` with `PORT` in the environment
 *
 * @module
 */
import { parseArgs } from "node:util";
import { PGlite } from "@electric-sql/pglite";

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    data: { type: "string" },
    cold: { type: "boolean", default: false },
    "shared-buffers": { type: "string" },
  },
});
if (!args.data) throw new Error("--data DIR is required");

const TEMPLATE = new URL("../core/src/db/pglite_template.tar.gz", import.meta.url);
const buffers = args["shared-buffers"];
const pglite = new PGlite(args.data, {
  ...(args.cold
    ? { loadDataDir: new Blob([await Deno.readFile(TEMPLATE)], { type: "application/x-gzip" }) }
    : {}),
  ...(buffers ? { startParams: [...PGlite.defaultStartParams, "-c", `shared_buffers=${buffers}`] } : {}),
});
await pglite.waitReady;
// One query on the schema the template holds (the service's /readyz also reads the database).
await pglite.query("SELECT count(*) FROM kysely_migration");

const server = Deno.serve(
  { hostname: "127.0.0.1", port: Number(Deno.env.get("PORT")), onListen: () => {} },
  () => new Response("ok"),
);
Deno.addSignalListener("SIGTERM", async () => {
  await server.shutdown();
  await pglite.close();
  Deno.exit(0);
});
