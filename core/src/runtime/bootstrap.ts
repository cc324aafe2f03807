import { type Config, pdfSigningFromEnv, pollConfig } from "./config.ts";
import type { Db } from "../db/open.ts";
import { logger } from "../util/log.ts";
import { StartupError } from "../errors.ts";
import type { LoadedModules, Registry } from "../registry.ts";
import {
  buildPollServices,
  buildServices,
  netboxJournalWorker,
  type PollServices,
  secretCipher,
  type Services,
  webhookWorker,
} from "./services.ts";
import type { DeliveryWorker } from "../notify/worker.ts";
import type { JournalWorker } from "../netbox/journal_worker.ts";
import { PollWorker } from "../poller/worker.ts";
import { startSweeper } from "../reservations/sweeper.ts";
import { CORE_VERSION } from "../version.ts";
import { reencryptCredentials } from "../devices/key_rotation.ts";
import { reencryptWebhookSecrets } from "../notify/secrets.ts";
import { startIdleReclaimer } from "./idle.ts";
import { start, type Started } from "./start.ts";
import { type OpenedServe, takeStarted } from "./serve_open.ts";
import type { PollRuntime, Runtime } from "./handle.ts";
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
export { exitOnStartupError, onShutdown } from "./start.ts";
export type { PollRuntime, Runtime } from "./handle.ts";
export { startCompaction } from "./compaction.ts";

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
  return await finish(await start(modules, env, serve ? "serve" : "admin", serve), serve);
}

/**
 * The second half of `openServe` (`@dutlab/core/serve`): every service, the PDF signing certificate checked,
 * the signing keys registered; the same as `bootstrap` with `serve: true`. On failure it closes the database,
 * releases the data directory and rejects with the StartupError.
 *
 * @param opened What `openServe` returned (completed once).
 * @returns The started runtime.
 */
export function completeServe(opened: OpenedServe): Promise<Runtime> {
  return finish(takeStarted(opened), true);
}

/** Both entries' second half: the configuration with its secrets, the services, the shutdown stack. */
async function finish(st: Started<"serve" | "admin">, serve: boolean): Promise<Runtime> {
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
  if (serve) reclaimWhenIdle(stack, config.DUT_IDLE_RECLAIM_SECONDS, db);
  if (serve) stack.defer(startRemark(db, registry));
  if (serve) stack.defer(startSweeper(services.reservations));
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
  const stack = closeStack(st, db, services);
  reclaimWhenIdle(stack, config.DUT_IDLE_RECLAIM_SECONDS, db);
  return runtime(stack, { config, db, registry, services });
}

/**
 * The runtime's shutdown stack, opened with what every runtime closes, unwound in this order: the services'
 * `close` (event streams, parked sessions and connections, hash workers, device locks), `closeServices` (the PDF printer of `serve`), the database and the data directory lock.
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
  stack.defer(() => services.close());
  return stack;
}

/**
 * A long-running process (`serve`, `poll`) gives memory back while idle (runtime/idle.ts,
 * DUT_IDLE_RECLAIM_SECONDS), PGlite's worker included; stopped first at shutdown.
 */
function reclaimWhenIdle(stack: AsyncDisposableStack, seconds: number, db: Db): void {
  const reclaimer = startIdleReclaimer(seconds, db.reclaim);
  stack.defer(() => Promise.resolve(reclaimer.stop()));
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
  // Webhook signing secrets: also those written plain before they were encrypted (one small read when none).
  reencryptWebhookSecrets(rt.db.kysely, secretCipher(rt.services.keys)).catch((e) =>
    logger("keys").error("Webhook secret re-encryption failed: {error}", { error: String(e) })
  );
  if (!rt.config.DUT_CRED_ENC_KEY_PREVIOUS) return;
  reencryptCredentials(rt.db.kysely, rt.services.keys).catch((e) =>
    logger("keys").error("Credential re-encryption failed: {error}", { error: String(e) })
  );
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
    ...(rt.config.DUT_POLL_BUSY_CONCURRENCY > 0
      ? { foreground: rt.services.foreground, busyConcurrency: rt.config.DUT_POLL_BUSY_CONCURRENCY }
      : {}),
  });
  rt.defer(() => worker.stop(rt.config.DUT_SHUTDOWN_GRACE_SECONDS * 1000));
  await worker.start();
  return worker;
}

/**
 * Start the webhook delivery worker of `serve` (docs/notifications.md); every instance runs one (deliveries
 * are claimed with FOR UPDATE SKIP LOCKED and a lease, so each goes out from one of them). The runtime's
 * `close()` stops it, waiting for the calls in flight (each bounded by DUT_WEBHOOK_TIMEOUT_MS).
 */
export function startWebhooks(rt: Runtime): DeliveryWorker {
  const worker = webhookWorker(rt.services);
  rt.defer(() => worker.stop());
  worker.start();
  return worker;
}

/**
 * Start the automatic NetBox write-back of `serve` (DUT_NETBOX_WRITEBACK=on, docs/netbox.md "Writing verdicts
 * back"); null when it is off. Every instance runs one (rows are claimed with FOR UPDATE SKIP LOCKED and a
 * lease). The runtime's `close()` stops it.
 */
export async function startNetBoxWriteBack(rt: Runtime): Promise<JournalWorker | null> {
  const file = rt.config.DUT_NETBOX_CA_FILE;
  let caPem: string | undefined;
  if (file) {
    try {
      caPem = await Deno.readTextFile(file);
    } catch (e) {
      throw new StartupError("BAD_CONFIG", `DUT_NETBOX_CA_FILE: cannot read ${file} (${(e as Error).name})`);
    }
  }
  const worker = netboxJournalWorker(rt.services, caPem);
  if (!worker) return null;
  rt.defer(() => worker.stop());
  worker.start();
  return worker;
}
