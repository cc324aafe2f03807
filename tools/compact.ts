/**
 * `deno task compact [--batch-size N]`: move the snapshots stored before migration 2026_11_25_0017 into the
 * narrow layout (docs/data.md "Compacting old snapshots"), in the configured database directly, like `prune`: on
 * PostgreSQL while `serve` and `poll` run (one runner at a time: a `serve` doing it in the background makes
 * this exit 3); in embedded mode only while `serve` is stopped (PGlite is single-process; a running `serve`
 * does it itself). Prints one progress line every few seconds on stderr and the result as JSON on stdout.
 * Exit 0 done (nothing left), 1 failed, 2 bad arguments, 3 another compaction is running.
 */
import { parseArgs } from "node:util";
import { z } from "zod";
import { exitOnStartupError } from "@dutlab/core/runtime";
import { openForTool } from "../core/ops.ts";
import { compactSnapshots } from "../core/ops.ts";

const USAGE = "usage: deno task compact [--batch-size N]";

const Args = z.object({
  batchSize: z.coerce.number({ message: "--batch-size: 100-100000" }).int("--batch-size: 100-100000")
    .min(100, "--batch-size: 100-100000").max(100_000, "--batch-size: 100-100000").default(2000),
});

function parse(argv: string[]) {
  try {
    const { values } = parseArgs({ args: argv, options: { "batch-size": { type: "string" } }, strict: true });
    return Args.safeParse({ batchSize: values["batch-size"] });
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
  const store = await openForTool().catch(exitOnStartupError);
  const ac = new AbortController();
  const stop = () => ac.abort();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  let last = 0;
  let code = 0;
  try {
    const r = await compactSnapshots(store.db.kysely, {
      batchSize: args.data.batchSize,
      signal: ac.signal,
      logEveryMs: 0,
      onProgress(p) {
        if (Date.now() - last < 2000) return;
        last = Date.now();
        console.error(
          `compact: batch ${p.batches}, ${p.moved} snapshot(s) moved, about ${p.left} left, ` +
            `${p.rowsPerSecond} rows/s`,
        );
      },
    });
    console.log(JSON.stringify(r, null, 2));
    if (r.end === "busy") {
      console.error("another compaction is running (a serve in the background, or another compact)");
      code = 3;
    } else if (r.end === "stopped") code = 1;
  } catch (e) {
    console.error(`compact failed: ${(e as Error).message}`);
    code = 1;
  }
  Deno.removeSignalListener("SIGINT", stop);
  Deno.removeSignalListener("SIGTERM", stop);
  await store.close();
  Deno.exit(code);
}
