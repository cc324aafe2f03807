import type { Command } from "./_command.ts";
import { ok } from "./_client.ts";
import { EXIT } from "./_exit.ts";
import { out, printJson, table } from "./_output.ts";

export const tokenCommands: Command[] = [
  {
    path: ["tokens", "list"],
    summary: "List the named API tokens (never their secrets)",
    arity: [0, 0],
    async run(ctx) {
      const r = ok(await ctx.svc().api.GET("/api/admin/tokens", {}));
      if (ctx.json) printJson(r);
      else {
        out(table(
          ["name", "role", "created", "revoked", "id"],
          r.tokens.map((t) => [t.name, t.role, t.createdAt, t.revokedAt ?? "-", t.id]),
          ctx.paint,
        ));
      }
      return EXIT.ok;
    },
  },
  {
    path: ["tokens", "create"],
    summary: "Create a named API token; its secret is shown once",
    args: "<name>",
    arity: [1, 1],
    flags: {
      role: { type: "string", value: "ROLE", description: "admin, operator or viewer (required)" },
      quiet: { type: "boolean", short: "q", description: "Print only the token" },
    },
    async run(ctx) {
      if (ctx.flags.role === undefined) throw ctx.usage("Missing --role");
      const r = ok(
        await ctx.svc().api.POST("/api/admin/tokens", {
          body: { name: ctx.args[0]!, role: ctx.flags.role as "admin" },
        }),
      );
      if (ctx.json) printJson(r);
      else if (ctx.flags.quiet === true) out(r.token);
      else out(`created ${r.name} (${r.role}) ${r.id}\ntoken: ${r.token}\nIt is shown only now: store it.`);
      return EXIT.ok;
    },
  },
  {
    path: ["tokens", "revoke"],
    summary: "Revoke a named API token",
    args: "<id | name>",
    arity: [1, 1],
    async run(ctx) {
      const r = ok(
        await ctx.svc().api.DELETE("/api/admin/tokens/{id}", { params: { path: { id: ctx.args[0]! } } }),
      );
      if (ctx.json) printJson(r);
      else out(`revoked ${ctx.args[0]}`);
      return EXIT.ok;
    },
  },
];
