/** `deno task cli …` and the compiled `dutlab` executable (`deno task cli:compile`). */
import { main } from "./mod.ts";

// `deno task` runs in the project root and says where it was started in INIT_CWD: file arguments
// (--out, --k6, --token-file, …) are meant relative to that directory.
const initCwd = Deno.env.get("DUTLAB_CLI_TASK") === "1" ? Deno.env.get("INIT_CWD") : undefined;
if (initCwd) Deno.chdir(initCwd);

if (import.meta.main) Deno.exit(await main(Deno.args));
