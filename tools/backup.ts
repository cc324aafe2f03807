/**
 * `deno task backup --out FILE [--url URL]`: write a consistent archive of the whole database (docs/data.md
 * "Backup and restore"; format in core/src/backup/archive.ts).
 *
 * Without `--url` it reads the configured database directly (one REPEATABLE READ transaction): PostgreSQL
 * while `serve` and `poll` run; the embedded data directory only while `serve` is stopped (PGlite is
 * single-process). With `--url` (the service's base URL) it downloads the archive from the running service
 * (`GET /api/admin/backup`, an admin token from ADMIN_TOKEN or the data directory's secrets.json): the way to
 * back up an embedded lab without stopping it. The file is written whole or not at all. Progress lines go to
 * stderr; exit 0 written, 1 failed, 2 bad arguments.
 */
import { parseArgs } from "node:util";
import { z } from "zod";
import { exitOnStartupError } from "@dutlab/core/runtime";
import { openForTool, parseEnv } from "../core/ops.ts";
import { writeBackup } from "../core/ops.ts";

const USAGE = "usage: deno task backup --out FILE [--url http://host:port]";
const Args = z.object({
  out: z.string({ message: "--out FILE is required" }).min(1, "--out FILE is required"),
  url: z.url({ message: "--url: the service's base URL, like http://localhost:8080" }).optional(),
});

function parse(argv: string[]) {
  try {
    const { values } = parseArgs({
      args: argv,
      options: { out: { type: "string" }, url: { type: "string" } },
      strict: true,
    });
    return Args.safeParse(values);
  } catch (e) {
    return { success: false as const, error: { issues: [{ message: (e as Error).message }] } };
  }
}

async function adminToken(): Promise<string> {
  const env = Deno.env.get("ADMIN_TOKEN");
  if (env) return env;
  const dir = parseEnv(Deno.env.toObject(), { entry: "database" }).DUT_DATA_DIR;
  try {
    const s = JSON.parse(await Deno.readTextFile(`${dir}/secrets.json`));
    if (typeof s.adminToken === "string") return s.adminToken;
  } catch { /* no secrets file */ }
  console.error(`backup: --url needs an admin token: set ADMIN_TOKEN (none in ${dir}/secrets.json either)`);
  Deno.exit(2);
}

if (import.meta.main) {
  const args = parse(Deno.args);
  if (!args.success) {
    for (const i of args.error.issues) console.error(i.message);
    console.error(USAGE);
    Deno.exit(2);
  }
  const { out, url } = args.data;
  const tmp = `${out}.partial`;
  const progress = (line: string) => console.error(line);
  try {
    if (url) {
      const res = await fetch(new URL("/api/admin/backup", url), {
        headers: { authorization: `Bearer ${await adminToken()}` },
      });
      if (res.status !== 200 || !res.body) {
        throw new Error(`GET /api/admin/backup answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
      }
      progress("backup: downloading from the service");
      await Deno.writeFile(tmp, res.body, { mode: 0o600 });
    } else {
      // As it is: a backup reads, it never migrates the database it reads.
      const store = await openForTool(undefined, { migrate: false }).catch(exitOnStartupError);
      try {
        const { archive } = await writeBackup(store.db.kysely, store.db.kind, progress);
        await Deno.writeFile(tmp, archive, { mode: 0o600 });
      } finally {
        await store.close();
      }
    }
    await Deno.rename(tmp, out);
    console.log(`backup: wrote ${out} (${(await Deno.stat(out)).size} bytes)`);
  } catch (e) {
    await Deno.remove(tmp).catch(() => {});
    console.error(`backup failed: ${(e as Error).message}`);
    Deno.exit(1);
  }
}
