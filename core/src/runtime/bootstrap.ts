import {
  type Config,
  type Entry,
  ENTRY_SECRETS,
  type Env,
  parseEnv,
  pdfSigningFromEnv,
  type PollConfig,
  pollConfig,
  type SecretsOf,
} from "./config.ts";
import { loadOrCreateSecrets, lockDataDir } from "./datadir.ts";
import { type Db, migrate, openDatabase } from "../db/open.ts";
import { StartupError } from "../errors.ts";
import { logger } from "../util/log.ts";
import { setupLogging } from "./logging.ts";
import { buildRegistry, type LoadedModules, type Registry } from "../registry.ts";
import { buildPollServices, buildServices, type PollServices, type Services } from "./services.ts";
import { PollWorker } from "../poller/worker.ts";
import { CORE_VERSION } from "../version.ts";
import { reencryptCredentials } from "../devices/key_rotation.ts";
import { reconcilePatternSets } from "../snapshots/stable.ts";
import { remarkAll } from "../snapshots/remark.ts";

export type { LoadedModules } from "../registry.ts";
export { buildRegistry } from "../registry.ts";
export { parseEnv } from "./config.ts";
export { buildPollServices, buildServices } from "./services.ts";
export { migrate, openDatabase } from "../db/open.ts";
export { PollWorker } from "../poller/worker.ts";
export { StartupError } from "../errors.ts";
export { logger } from "../util/log.ts";
export { migrateOnly, openForTool, type ToolDatabase } from "./database.ts";
import { openEmbedded } from "./database.ts";

/** A started poller (`deno task poll`): configuration, database, registry and poll services. */
export interface PollRuntime extends AsyncDisposable {
  /** The parsed poller configuration. */
  config: PollConfig;
  /** The open, migrated database. */
  db: Db;
  /** The validated modules. */
  registry: Registry;
  /** What the poll cycle uses: device store, poll store, transport limits, metrics. */
  services: PollServices;
  /**
   * Have `stop` run when the runtime closes, before what was deferred earlier (last in, first out): the
   * runtime owns the one shutdown path of its process, and what an entry point starts joins it here.
   */
  defer(stop: () => Promise<void>): void;
  /**
   * The one shutdown path: what was deferred (the polling worker, within the grace period), then the
   * logout of parked device sessions, the PDF printer and the database.
   */
  close(): Promise<void>;
}

/** A started `serve` (or admin tool): every secret and every service, closed with `close()`. */
export interface Runtime extends PollRuntime {
  /** The parsed server configuration (the poller's plus secrets and HTTP settings). */
  config: Config;
  /** Every service of the process. */
  services: Services;
}

/** What both start paths share: the parsed environment, the database (migrated) and the registry. */
interface Started<E extends Entry> {
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
 * The one wiring path of `serve` and the admin tools: config → database → migrations → registry →
 * services. Throws StartupError with a code and a clear message on any problem. `serve: true` (the HTTP
 * API) requires the admin token, the credential key, the report signing key and the PDF signing
 * certificate with DATABASE_URL (or generates them in embedded mode); without it (the `token` and
 * `rotate-*` tools) everything but the PDF certificate. `deno task poll` starts with `bootstrapPoller`.
 */
export async function bootstrap(
  modules: LoadedModules,
  env: Record<string, string | undefined> = Deno.env.toObject(),
  opts: { serve?: boolean } = {},
): Promise<Runtime> {
  const serve = opts.serve === true;
  const st = await start(modules, env, serve ? "serve" : "admin", serve);
  const { parsed, db, registry, secrets } = st;
  let pdfSigning = serve ? pdfSigningFromEnv(parsed) : null;
  if (st.storedPdfSigning) pdfSigning = { kind: "pem", ...st.storedPdfSigning };
  const config: Config = { ...parsed, ...secrets, pdfSigning, extraCa: st.extraCa };
  let services: Services;
  try {
    services = await buildServices(config, db, registry);
    await services.signatures.register();
    await services.pdfCertificates.register();
  } catch (e) {
    await db.close();
    st.release();
    throw e;
  }
  started(registry, db);
  const stack = closeStack(st, db, services, () => services.pdf.close());
  if (serve) stack.defer(startRemark(db, registry));
  return runtime(stack, { config, db, registry, services });
}

/**
 * `deno task poll`: the same wiring with only what a poller uses. With DATABASE_URL it requires the
 * credential key alone; the admin token, the report signing key and the PDF signing material are neither
 * required nor kept (not in its configuration, by type and at run time) even when the environment has them.
 */
export async function bootstrapPoller(
  modules: LoadedModules,
  env: Record<string, string | undefined> = Deno.env.toObject(),
): Promise<PollRuntime> {
  const st = await start(modules, env, "poll", false);
  const { parsed, db, registry } = st;
  const config = pollConfig(parsed, st.secrets.DUT_CRED_ENC_KEY, st.extraCa);
  let services: PollServices;
  try {
    services = await buildPollServices(config, db, registry);
  } catch (e) {
    await db.close();
    st.release();
    throw e;
  }
  started(registry, db);
  return runtime(closeStack(st, db, services), { config, db, registry, services });
}

/**
 * The runtime's shutdown stack, opened with what every runtime closes, unwound in this order: the logout
 * of parked sessions, `closeServices` (the PDF printer of `serve`), the database and the data directory lock.
 */
function closeStack(
  st: { release(): void },
  db: Db,
  services: PollServices,
  closeServices?: () => Promise<void>,
): AsyncDisposableStack {
  const stack = new AsyncDisposableStack();
  stack.defer(async () => {
    await db.close();
    st.release();
  });
  if (closeServices) stack.defer(closeServices);
  stack.defer(() => services.releaseAllParked());
  return stack;
}

/** A runtime whose `close()` (and `await using`) unwinds `stack` once. */
function runtime<R extends Omit<PollRuntime, "defer" | "close" | typeof Symbol.asyncDispose>>(
  stack: AsyncDisposableStack,
  parts: R,
): R & PollRuntime {
  const close = () => stack.disposeAsync();
  return {
    ...parts,
    defer: (stop) => void stack.defer(stop),
    close,
    [Symbol.asyncDispose]: close,
  };
}

async function start<E extends Entry>(
  modules: LoadedModules,
  env: Record<string, string | undefined>,
  entry: E,
  pdfCertificate: boolean,
): Promise<Started<E>> {
  const parsed = parseEnv(env, { entry });
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
  if (parsed.DATABASE_URL !== undefined) {
    secrets = parsed;
    db = await openDatabase({ url: parsed.DATABASE_URL });
  } else {
    const lock = await lockDataDir(parsed.DUT_DATA_DIR);
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
      db = await openEmbedded(parsed.DUT_DATA_DIR, parsed.DUT_PGLITE_SHARED_BUFFERS);
    } catch (e) {
      release();
      throw e;
    }
  }
  try {
    const applied = await migrate(db.kysely);
    if (applied.length) log.info("Applied migrations: {applied}", { applied: applied.join(", ") });
    // Before anything polls or reads the change history: flags computed under older volatile patterns.
    // Records only; the re-mark of older rows runs in the background (`startRemark`), start-up does not wait.
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

/** The start-up summary line, and a warning for checks no enabled adapter serves. */
function started(registry: Registry, db: Db): void {
  const log = logger("startup");
  log.info("dutlab core {version}: {vendors} vendor(s), {checks} check(s), database {kind}", {
    version: CORE_VERSION,
    vendors: registry.vendors.length,
    checks: registry.checks.length,
    kind: db.kind,
  });
  if (registry.unservedChecks.length) {
    log.warn(
      "No enabled adapter serves check(s) {checks} (none collects the label and offers the facts they need); " +
        "they give no result until such an adapter is enabled",
      { checks: registry.unservedChecks.join(", ") },
    );
  }
}

/**
 * The background re-mark of stable flags after a volatile-path change (remark.ts), started by `serve`;
 * returns its stop (awaited at close, before the database closes).
 */
function startRemark(db: Db, registry: Registry): () => Promise<void> {
  const ac = new AbortController();
  const log = logger("snapshots");
  const job = remarkAll(db.kysely, registry, { signal: ac.signal, pauseMs: 20 }).then(
    (steps) => {
      for (const s of steps) {
        if (s.done) {
          log.info("Re-marked {compared} snapshot(s) of {vendor} {label}: {forgotten} now compared in full", {
            ...s,
          });
        }
      }
    },
    (e) =>
      log.error("Re-marking stable flags failed (retried at the next start): {error}", { error: String(e) }),
  );
  return async () => {
    ac.abort();
    await job;
  };
}

/**
 * With DUT_CRED_ENC_KEY_PREVIOUS set, re-encrypt old credentials with the current key in the background
 * (`serve` and `poll` call it; every instance may, rows are swapped only if unchanged).
 */
export function finishKeyRotation(rt: PollRuntime): void {
  if (!rt.config.DUT_CRED_ENC_KEY_PREVIOUS) return;
  reencryptCredentials(rt.db.kysely, rt.services.keys).catch((e) =>
    logger("keys").error("Credential re-encryption failed: {error}", { error: String(e) })
  );
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
    stop().then(() => Deno.exit(0), (e) => {
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

/**
 * Start the polling worker unless disabled (one notice at start-up when it is); the runtime's `close()`
 * stops it first, letting running polls finish within DUT_SHUTDOWN_GRACE_SECONDS.
 */
export async function startWorker(rt: PollRuntime): Promise<PollWorker | null> {
  if (rt.config.DUT_API_POLLER_DISABLE === "1") {
    logger("poller").info("Polling worker disabled by DUT_API_POLLER_DISABLE=1; manual snapshots still work");
    return null;
  }
  const worker = new PollWorker(rt.db, rt.services.poller, rt.services.metrics, {
    scanSeconds: rt.config.DUT_POLL_SCAN_SECONDS,
    concurrency: rt.config.DUT_POLL_CONCURRENCY,
  });
  rt.defer(() => worker.stop(rt.config.DUT_SHUTDOWN_GRACE_SECONDS * 1000));
  await worker.start();
  return worker;
}
