/**
 * `deno task poll-instances [--within SECONDS] [--json]`: the poll instances seen recently in the configured
 * database (docs/polling.md "Several poll instances"), each with the device leases it holds now, its claims,
 * takeovers and fenced (dropped) writes since it started. A table on stdout, or JSON with `--json`.
 * Exit 0, 1 failed, 2 bad arguments.
 */
import { parseArgs } from "node:util";
import { z } from "zod";
import { exitOnStartupError } from "@dutlab/core/runtime";
import { openForTool } from "../core/ops.ts";
import { listPollInstances, type PollInstance } from "../core/ops.ts";

const USAGE = "usage: deno task poll-instances [--within SECONDS] [--json]";

const Args = z.object({
  within: z.coerce.number({ message: "--within: 1-86400" }).int("--within: 1-86400")
    .min(1, "--within: 1-86400").max(86_400, "--within: 1-86400").default(300),
  json: z.boolean().default(false),
});

/** The parsed arguments, or the problems found in them. */
export function parse(argv: string[]) {
  try {
    const { values } = parseArgs({
      args: argv,
      options: { within: { type: "string" }, json: { type: "boolean" } },
      strict: true,
    });
    return Args.safeParse({ within: values.within, json: values.json });
  } catch (e) {
    return { success: false as const, error: { issues: [{ message: (e as Error).message }] } };
  }
}

/** The instances as a plain-text table, busiest first. */
export function table(rows: PollInstance[]): string {
  const head = ["instance", "leases", "claims", "takeovers", "fenced", "seen"];
  const lines = rows.map((r) => [r.id, r.leases, r.claims, r.takeovers, r.fenced, r.seenAt].map(String));
  const all = [head, ...lines];
  const widths = head.map((_, i) => Math.max(...all.map((l) => l[i]!.length)));
  return all.map((l) => l.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd()).join("\n");
}

if (import.meta.main) {
  const args = parse(Deno.args);
  if (!args.success) {
    for (const i of args.error.issues) console.error(i.message);
    console.error(USAGE);
    Deno.exit(2);
  }
  const store = await openForTool().catch(exitOnStartupError);
  let code = 0;
  try {
    const rows = await listPollInstances(store.db.kysely, args.data.within);
    console.log(args.data.json ? JSON.stringify(rows, null, 2) : table(rows));
  } catch (e) {
    console.error(`poll-instances failed: ${(e as Error).message}`);
    code = 1;
  }
  await store.close();
  Deno.exit(code);
}
