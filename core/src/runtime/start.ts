/**
 * The first half of every start, and what `server.ts` needs before it listens (issue 34 point 5): the parsed
 * environment, the data directory, the database open and migrated. This module keeps its imports to that path;
 * the services, the poll worker and the HTTP app (runtime/bootstrap.ts, http/) are loaded by `completeServe`
 * while the server already answers `/readyz`. Also the start-up error printer and the shutdown hook, which an
 * entry needs before anything else is loaded.
 *
 * @module
 */
import {
  type Entry,
  ENTRY_SECRETS,
  type Env,
  parseEnv,
  pdfSigningFromEnv,
  type SecretsOf,
} from "./config.ts";
import { loadOrCreateSecrets, lockDataDir } from "./datadir.ts";
import { takeEarlyOpen } from "./early_open.ts";
import { type Db, migrate, openDatabase } from "../db/open.ts";
import { StartupError } from "../errors.ts";
import { logger } from "../util/log.ts";
import { flushLogs, setupLogging } from "./logging.ts";
import { buildRegistry, type LoadedModules, type Registry } from "../registry.ts";
import { reconcilePatternSets } from "../snapshots/stable.ts";
import { clashLines, hostnameClashes } from "../devices/hostname_clashes.ts";
import { openEmbedded } from "./database.ts";

/** What both start paths share: the parsed environment, the database (migrated) and the registry. */
export interface Started<E extends Entry> {
  parsed: Env;
  db: Db;
  registry: Registry;
  extraCa: string[];
  /** The secrets the entry point uses: from the environment (PostgreSQL) or the data directory (embedded). */
  secrets: SecretsOf<E>;
  /** The embedded data directory's PDF signing certificate (null on PostgreSQL, or when not asked for). */
  storedPdfSigning: { certificate: string; privateKey: string } | null;
  release(): void;
}

/**
 * Config → data directory (lock, secrets) → database (opened, migrated) → registry, volatile pattern sets
 * reconciled: what every entry does before anything else.
 */
export async function start<E extends Entry>(
  modules: LoadedModules,
  env: Record<string, string | undefined>,
  entry: E,
  pdfCertificate: boolean,
): Promise<Started<E>> {
  const parsed = await (async () => {
    try {
      return parseEnv(env, { entry });
    } catch (e) {
      await takeEarlyOpen(null); // an early open (server.ts) lets go of the data directory
      throw e;
    }
  })();
  await setupLogging({ format: parsed.DUT_LOG_FORMAT, level: parsed.DUT_LOG_LEVEL });
  const log = logger("startup");
  const registry = buildRegistry(modules);
  let extraCa: string[] = [];
  if (parsed.DUT_TLS_CA_FILE) {
    try {
      extraCa = [await Deno.readTextFile(parsed.DUT_TLS_CA_FILE)];
    } catch (e) {
      throw new StartupError(
        "BAD_CONFIG",
        `DUT_TLS_CA_FILE: cannot read ${parsed.DUT_TLS_CA_FILE} (${(e as Error).name})`,
      );
    }
  }
  let release = () => {};
  let secrets: SecretsOf<E>;
  let storedPdfSigning: Started<E>["storedPdfSigning"] = null;
  let db: Db;
  const worker = parsed.DUT_PGLITE_WORKER === "on";
  const early = await takeEarlyOpen(
    parsed.DATABASE_URL === undefined
      ? { dir: parsed.DUT_DATA_DIR, worker, sharedBuffers: parsed.DUT_PGLITE_SHARED_BUFFERS }
      : null,
  );
  if (parsed.DATABASE_URL !== undefined) {
    secrets = parsed;
    db = await openDatabase({ url: parsed.DATABASE_URL });
  } else {
    const lock = early?.lock ?? await lockDataDir(parsed.DUT_DATA_DIR);
    release = lock.release;
    try {
      const s = await loadOrCreateSecrets(
        parsed.DUT_DATA_DIR,
        parsed,
        pdfCertificate && !pdfSigningFromEnv(parsed) ? { labName: parsed.DUT_LAB_NAME } : undefined,
      );
      secrets = secretsOf(entry, {
        ADMIN_TOKEN: s.adminToken,
        DUT_CRED_ENC_KEY: s.credEncKey,
        DUT_REPORT_SIGNING_KEY: s.reportSigningKey,
      });
      storedPdfSigning = s.pdfSigning;
      if (s.generatedPdfCertificate) {
        log.info("Generated a self-signed PDF signing certificate for {lab} in {path}", {
          lab: parsed.DUT_LAB_NAME,
          path: s.path,
        });
      }
      if (s.generatedAdminToken) {
        log.info("Generated an admin token; read it from {path} (key adminToken)", { path: s.path });
      }
      const { DUT_DATA_DIR: dir, DUT_PGLITE_SHARED_BUFFERS: buffers } = parsed;
      db = await openEmbedded(dir, buffers, worker, early ?? undefined);
    } catch (e) {
      await early?.remote.then((r) => r.close(), () => {});
      release();
      throw e;
    }
  }
  try {
    const applied = await migrate(db.kysely);
    if (applied.length) log.info("Applied migrations: {applied}", { applied: applied.join(", ") });
    for (const line of clashLines(await hostnameClashes(db.kysely))) log.warn(line);
    // Before anything polls or reads the change history: flags computed under older volatile patterns.
    // Records only; the re-mark of older rows runs in the background (`startRemark`, bootstrap.ts),
    // start-up does not wait.
    for (const c of await reconcilePatternSets(db.kysely, registry)) {
      if (c.before === null) continue; // first record of the set, nothing to re-mark
      log.info(
        "Volatile paths of {vendor} {label} changed ({before} to {after}): " +
          (c.remarkBelow === null
            ? "stored flags still hold"
            : "older snapshots are re-marked in the background and compared in full until then"),
        { ...c },
      );
    }
  } catch (e) {
    await db.close();
    release();
    throw e;
  }
  return { parsed, db, registry, extraCa, secrets, storedPdfSigning, release };
}

/** Of the data directory's secrets, those `entry` uses (a poller keeps no admin token nor signing key). */
function secretsOf<E extends Entry>(entry: E, all: SecretsOf<"admin">): SecretsOf<E> {
  return Object.fromEntries(ENTRY_SECRETS[entry].map((k) => [k, all[k]])) as SecretsOf<E>;
}

/** Whether errors written outside the log (start-up, shutdown) are JSON lines (DUT_LOG_FORMAT=json). */
function jsonErrors(): boolean {
  return Deno.env.get("DUT_LOG_FORMAT")?.trim() === "json";
}

/** One error as a JSON line shaped like the log's, for start-up and shutdown failures. */
function errorLine(loggerName: string, message: string, properties: Record<string, unknown>): string {
  return JSON.stringify({
    "@timestamp": new Date().toISOString(),
    level: "ERROR",
    message,
    logger: loggerName,
    properties,
  });
}

/**
 * Print a start-up error as one clear line per problem and exit non-zero (2). With DUT_LOG_FORMAT=json each
 * line is a JSON object like the log's, so a JSON-lines collector reads it too; any other error is then
 * one JSON line as well (exit 1) instead of Deno's text trace.
 */
export function exitOnStartupError(e: unknown): never {
  const json = jsonErrors();
  const jsonLine = (message: string, properties: Record<string, unknown>) =>
    errorLine("dutlab.startup", message, properties);
  if (e instanceof StartupError) {
    for (const line of e.message.split("\n")) {
      console.error(json ? jsonLine(`${e.code}: ${line}`, { code: e.code }) : `dutlab: ${e.code}: ${line}`);
    }
    Deno.exit(2);
  }
  if (json) {
    console.error(jsonLine(`Start-up failed: ${String(e)}`, { stack: (e as Error)?.stack ?? null }));
    Deno.exit(1);
  }
  throw e;
}

/** Run until SIGINT/SIGTERM, then call `stop` once. */
export function onShutdown(stop: () => Promise<void>): void {
  let stopping = false;
  const handler = () => {
    if (stopping) return;
    stopping = true;
    logger("shutdown").info("Shutting down");
    stop().then(async () => {
      await flushLogs();
      Deno.exit(0);
    }, async (e) => {
      await flushLogs();
      // Written synchronously (a log sink may not flush before exit), as a JSON line in JSON mode.
      console.error(
        jsonErrors()
          ? errorLine("dutlab.shutdown", `Shutdown failed: ${String(e)}`, {
            stack: (e as Error)?.stack ?? null,
          })
          : e,
      );
      Deno.exit(1);
    });
  };
  Deno.addSignalListener("SIGINT", handler);
  Deno.addSignalListener("SIGTERM", handler);
}
