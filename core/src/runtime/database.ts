/**
 * The database as the runtime opens it: the embedded data directory (from the shipped template when new), and
 * the database alone for a tool (`migrate`, `prune`, `backup`, `restore`), which needs no token or key.
 *
 * @module
 */
import { lockDataDir } from "./datadir.ts";
import { type Db, migrate, openDatabase } from "../db/open.ts";
import { removeUnpacked, unpackTemplate } from "../db/template.ts";
import type { RemotePglite } from "../db/pglite_remote.ts";
import { clashLines, hostnameClashes } from "../devices/hostname_clashes.ts";
import { logger } from "../util/log.ts";
import { setupLogging } from "./logging.ts";
import { parseEnv } from "./config.ts";

/**
 * Open the embedded database, saying what happens while it initialises. A new data directory is unpacked
 * from the migrated template shipped with the core (core/src/db/template.ts) instead of running PGlite's
 * initdb; if the template does not unpack or open, the directory is cleared and initdb runs as before.
 */
export async function openEmbedded(
  dir: string,
  sharedBuffers: string | undefined,
  worker = false,
  /**
   * The worker runtime/early_open.ts began opening `dir` in, before the service loaded; `fresh`: a first
   * start, whose worker makes the database from the template.
   */
  early?: { remote: Promise<RemotePglite>; fresh: boolean },
): Promise<Db> {
  const log = logger("startup");
  const path = `${dir}/pglite`;
  const exists = (p: string) => Deno.stat(p).then(() => true, () => false);
  const t0 = performance.now();
  let db: Db | null = null;
  // A first start's early open is its worker making the database from the template: taken as is, whatever
  // that worker has unpacked by now.
  if (early?.fresh || !(await exists(`${path}/PG_VERSION`))) {
    log.info("Creating the embedded database in {path} from its template (first start; about a second)", {
      path,
    });
    try {
      if (early?.fresh) {
        db = await openDatabase({ dataDir: path, sharedBuffers, worker, remote: early.remote });
      } else if (!(await exists(path)) && await unpackTemplate(path)) {
        db = await openDatabase({ dataDir: path, sharedBuffers, worker });
      }
    } catch (e) {
      log.warn("The database template did not load ({error}); creating the database from scratch", {
        error: String(e),
      });
      await removeUnpacked(path);
    }
    if (!db) log.info("Creating the embedded database with initdb (this takes a few seconds)");
  } else {
    log.info("Opening the embedded database in {path} (usually under a second)", { path });
  }
  db ??= await openDatabase({
    dataDir: path,
    sharedBuffers,
    worker,
    ...(early && !early.fresh ? { remote: early.remote } : {}),
  });
  log.info("Embedded database ready in {ms} ms", {
    ms: Math.round(performance.now() - t0),
    ...(worker ? { pgliteWorker: true } : {}),
    ...(early ? { openedEarly: true } : {}),
  });
  return db;
}

/** The database alone, for a tool (prune, backup, restore): opened, migrated, closed with `close()`. */
export interface ToolDatabase extends AsyncDisposable {
  /** The open database. */
  db: Db;
  /** The embedded data directory (PGlite), or null on PostgreSQL. */
  dataDir: string | null;
  /** Close the database. */
  close(): Promise<void>;
}

/**
 * Open and migrate (unless `migrate: false`) the configured database for a tool that needs no token or key
 * (`migrate`, `prune`, `backup`, `restore`): the PostgreSQL server of `DATABASE_URL` (while other instances
 * run), or the embedded data directory, which must not be in use (`DATA_DIR_IN_USE` while `serve` runs: stop
 * it, or use the service's admin route).
 */
export async function openForTool(
  env: Record<string, string | undefined> = Deno.env.toObject(),
  opts: { migrate?: boolean } = {},
): Promise<ToolDatabase> {
  const parsed = parseEnv(env, { entry: "database" });
  await setupLogging({ format: parsed.DUT_LOG_FORMAT, level: parsed.DUT_LOG_LEVEL });
  let release = () => {};
  let db: Db;
  if (parsed.DATABASE_URL) {
    db = await openDatabase({ url: parsed.DATABASE_URL });
  } else {
    release = (await lockDataDir(parsed.DUT_DATA_DIR)).release;
    try {
      db = await openEmbedded(
        parsed.DUT_DATA_DIR,
        parsed.DUT_PGLITE_SHARED_BUFFERS,
        parsed.DUT_PGLITE_WORKER === "on",
      );
    } catch (e) {
      release();
      throw e;
    }
  }
  try {
    if (opts.migrate !== false) await migrate(db.kysely);
  } catch (e) {
    await db.close();
    release();
    throw e;
  }
  const close = async () => {
    await db.close();
    release();
  };
  return {
    db,
    dataDir: parsed.DATABASE_URL ? null : parsed.DUT_DATA_DIR,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/**
 * `deno task migrate`: apply pending migrations and exit. Asks only for what it uses: the database
 * (DATABASE_URL or the data directory); no admin token or credential key is read, required or generated.
 */
export async function migrateOnly(
  env: Record<string, string | undefined> = Deno.env.toObject(),
): Promise<string[]> {
  await using store = await openForTool(env, { migrate: false });
  const applied = await migrate(store.db.kysely);
  logger("startup").info(
    applied.length ? "Applied migrations: {applied}" : "Migrations are up to date",
    { applied: applied.join(", ") },
  );
  for (const line of clashLines(await hostnameClashes(store.db.kysely))) logger("startup").warn(line);
  return applied;
}
