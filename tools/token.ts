/**
 * `deno task token create <name> --role admin|operator|viewer` | `list` | `revoke <id-or-name>`: manage the
 * named API tokens in the configured database (the same configuration as `serve`). `create` prints the
 * token once on stdout; only its SHA-256 is stored. In embedded mode the server must be stopped (PGlite is
 * single-process); while it runs, use the admin routes (`/api/admin/tokens`).
 */
import { z } from "zod";
import { bootstrap, exitOnStartupError } from "@dutlab/core/runtime";
import { runtimeInternals } from "../core/ops.ts";
import { ROLES } from "../core/ops.ts";
import { DomainError } from "../core/ops.ts";
import { HttpProblem } from "../core/ops.ts";
import { modules } from "../modules.gen.ts";

const USAGE =
  "usage: deno task token create <name> --role admin|operator|viewer | list | revoke <id-or-name>";

const Args = z.discriminatedUnion("command", [
  z.object({
    command: z.literal("create"),
    name: z.string().regex(
      /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/,
      "name: letters, digits, dot, dash, underscore",
    ),
    role: z.enum(ROLES, { message: "--role must be admin, operator or viewer" }),
  }),
  z.object({ command: z.literal("list") }),
  z.object({ command: z.literal("revoke"), name: z.string().min(1, "revoke needs a token id or name") }),
]);

function parseArgs(argv: string[]) {
  const [command, ...rest] = argv;
  const roleAt = rest.indexOf("--role");
  const role = roleAt >= 0 ? rest[roleAt + 1] : undefined;
  const positional = rest.filter((_, i) => i !== roleAt && i !== roleAt + 1 || roleAt < 0);
  return Args.safeParse({ command, name: positional[0], role });
}

if (import.meta.main) {
  const args = parseArgs(Deno.args);
  if (!args.success) {
    for (const i of args.error.issues) console.error(i.message);
    console.error(USAGE);
    Deno.exit(2);
  }
  const rt = runtimeInternals(await bootstrap(modules).catch(exitOnStartupError));
  const tokens = rt.services.tokens;
  let code = 0;
  try {
    const a = args.data;
    if (a.command === "create") {
      const t = await tokens.create(a.name, a.role);
      console.error(`created token "${t.name}" (${t.role}), id ${t.id}; it is shown once:`);
      console.log(t.token);
    } else if (a.command === "list") {
      for (const t of await tokens.list()) {
        console.log(
          [t.id, t.name, t.role, t.createdAt, t.revokedAt ? `revoked ${t.revokedAt}` : "active"].join("\t"),
        );
      }
    } else {
      const t = await tokens.revoke(a.name);
      console.log(`revoked "${t.name}" at ${t.revokedAt}`);
    }
  } catch (e) {
    // The token store throws domain errors (a taken name, an unknown token): say them, exit 1.
    if (e instanceof DomainError) console.error(e.message);
    else if (e instanceof HttpProblem) console.error(e.detail ?? e.title);
    else throw e;
    code = 1;
  } finally {
    await rt.close();
  }
  Deno.exit(code);
}
