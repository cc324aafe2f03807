/** `deno task migrate`: apply pending migrations and exit (needs no admin token or credential key). */
import { exitOnStartupError, migrateOnly } from "@dutlab/core/server";

await migrateOnly().catch(exitOnStartupError);
