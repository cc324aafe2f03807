/** `deno task migrate`: apply pending migrations and exit (needs no admin token or credential key). */
import { exitOnStartupError, migrateOnly } from "@dutlab/core/runtime";

await migrateOnly().catch(exitOnStartupError);
