/** `deno task migrate`: apply pending migrations and exit (needs no admin token or credential key). */
import { exitOnStartupError } from "@dutlab/core/runtime";
import { migrateOnly } from "../core/ops.ts";

await migrateOnly().catch(exitOnStartupError);
