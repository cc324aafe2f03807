/** `deno task migrate`: apply pending migrations and exit. */
import { bootstrap, exitOnStartupError } from "@dutlab/core/server";
import { modules } from "../modules.gen.ts";

const rt = await bootstrap(modules).catch(exitOnStartupError);
await rt.close();
console.error("dutlab: migrations are up to date");
