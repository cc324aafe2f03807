/**
 * `deno task prune --older-than-days N [--keep-one-per hour|day] [--dry-run] [--actor NAME]`: prune old
 * snapshots (docs/data.md "Pruning snapshots") in the configured database directly, like `migrate`: on PostgreSQL
 * while `serve` and `poll` run; in embedded mode only while `serve` is stopped (PGlite is single-process;
 * while it runs, call `POST /api/admin/dut/snapshots/prune` instead). Prints one progress line every few
 * seconds on stderr and the result as JSON on stdout. Exit 0 done, 1 failed, 2 bad arguments, 3 another prune
 * is running.
 */
import { parseArgs } from "node:util";
import { z } from "zod";
import { exitOnStartupError } from "@dutlab/core/runtime";
import { openForTool } from "../core/ops.ts";
import { pruneSnapshots } from "../core/ops.ts";
import { ConflictError } from "../core/ops.ts";

const USAGE =
  "usage: deno task prune --older-than-days N [--keep-one-per hour|day] [--dry-run] [--actor NAME] " +
  "[--batch-size N]";

const Args = z.object({
  olderThanDays: z.coerce.number({ message: "--older-than-days: a whole number of days, at least 1" }).int(
    "--older-than-days: a whole number of days, at least 1",
  ).min(1, "--older-than-days: a whole number of days, at least 1").max(36500),
  keepOnePer: z.enum(["hour", "day"], { message: '--keep-one-per: "hour" or "day"' }).default("hour"),
  dryRun: z.boolean().default(false),
  actor: z.string().regex(
    /^[A-Za-z0-9._@-]{1,100}$/,
    "--actor: 1-100 letters, digits, dot, dash, underscore or @",
  ).optional(),
  batchSize: z.coerce.number().int().min(100, "--batch-size: 100-100000").max(
    100_000,
    "--batch-size: 100-100000",
  )
    .default(2000),
});

function parse(argv: string[]) {
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
        "older-than-days": { type: "string" },
        "keep-one-per": { type: "string" },
        "dry-run": { type: "boolean" },
        actor: { type: "string" },
        "batch-size": { type: "string" },
      },
      strict: true,
    });
    return Args.safeParse({
      olderThanDays: values["older-than-days"],
      keepOnePer: values["keep-one-per"],
      dryRun: values["dry-run"],
      actor: values.actor,
      batchSize: values["batch-size"],
    });
  } catch (e) {
    return { success: false as const, error: { issues: [{ message: (e as Error).message }] } };
  }
}

if (import.meta.main) {
  const args = parse(Deno.args);
  if (!args.success) {
    for (const i of args.error.issues) console.error(i.message);
    console.error(USAGE);
    Deno.exit(2);
  }
  const a = args.data;
  const store = await openForTool().catch(exitOnStartupError);
  const actor = `cli:${a.actor ?? Deno.env.get("USER") ?? "unknown"}`;
  let last = 0;
  try {
    const r = await pruneSnapshots(store.db.kysely, {
      olderThanDays: a.olderThanDays,
      keepOnePer: a.keepOnePer,
      dryRun: a.dryRun,
      actor,
      batchSize: a.batchSize,
      onProgress(p) {
        if (Date.now() - last < 2000) return;
        last = Date.now();
        console.error(
          `${a.dryRun ? "dry run" : "prune"}: batch ${p.batches}, snapshot id ${p.cursorId} of ${p.endId}, ` +
            `${p.snapshots} snapshot(s) ${a.dryRun ? "to delete" : "deleted"}`,
        );
      },
    });
    console.log(JSON.stringify(r, null, 2));
  } catch (e) {
    await store.close();
    if (e instanceof ConflictError) {
      console.error(e.message);
      Deno.exit(3);
    }
    console.error(`prune failed: ${(e as Error).message}`);
    Deno.exit(1);
  }
  await store.close();
}
