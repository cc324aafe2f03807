/**
 * `@dutlab/core/runtime`: what the entry points (`server.ts`, `poller.ts`, the tools) start the service with —
 * the runtime of `core/src/runtime/bootstrap.ts` and the HTTP app over its services. This face stands outside
 * core/src's floors, as `core/mod.ts` does: the runtime room sits below `http/`, which is built over its
 * services, so joining the two is the entry's job, not the runtime's.
 *
 * A started runtime is an opaque handle ({@link Runtime}, {@link PollRuntime}): it is deferred to and closed;
 * its configuration, database and services stay inside core. The repository's own operator tools reach them
 * through the unpublished operator face (`core/ops.ts`, `runtimeInternals`).
 *
 * @module
 */
import * as boot from "./src/runtime/bootstrap.ts";
import type { PollRuntime as StartedPoller } from "./src/runtime/handle.ts";
import { register, started } from "./src/runtime/opaque.ts";
import type { LoadedModules } from "./mod.ts";
import type { OpenedServe } from "./src/runtime/serve_open.ts";

export { exitOnStartupError, onShutdown } from "./src/runtime/start.ts";
export { type OpenedServe, openServe } from "./src/runtime/serve_open.ts";
export { logger } from "./src/util/log.ts";
export type { LoadedModule, LoadedModules } from "./mod.ts";

/** A started poller (`deno task poll`), or the poll half of a started `serve`: an opaque handle. */
export interface PollRuntime extends AsyncDisposable {
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

/** A started `serve` (or admin tool), every secret and every service inside: an opaque handle. */
export interface Runtime extends PollRuntime {
  /** Brand: only {@link bootstrap} and {@link completeServe} make one. */
  readonly kind: "serve" | "admin";
}

/** The HTTP app over a runtime's services, as `Deno.serve` calls it. */
export interface HttpApp {
  /** Answer one request. */
  fetch(req: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>): Response | Promise<Response>;
}

function handle(rt: StartedPoller): PollRuntime;
function handle(rt: StartedPoller, kind: "serve" | "admin"): Runtime;
function handle(rt: StartedPoller, kind?: "serve" | "admin"): PollRuntime {
  const h: PollRuntime = {
    ...(kind ? { kind } : {}),
    defer: (stop) => rt.defer(stop),
    close: () => rt.close(),
    [Symbol.asyncDispose]: () => rt.close(),
  };
  register(h, rt);
  return h;
}

/**
 * The one wiring path of `serve` and the admin tools: config → database → migrations → registry → services.
 * Throws StartupError with a code and a clear message on any problem (see `bootstrap.ts` for what each entry
 * requires).
 *
 * @param modules The generated modules (`modules.gen.ts`).
 * @param env The environment (default: the process's).
 * @param opts `serve: true` for the HTTP API's requirements.
 * @returns The started runtime.
 */
export async function bootstrap(
  modules: LoadedModules,
  env: Record<string, string | undefined> = Deno.env.toObject(),
  opts: { serve?: boolean } = {},
): Promise<Runtime> {
  return handle(await boot.bootstrap(modules, env, opts), opts.serve ? "serve" : "admin");
}

/**
 * `deno task poll`'s start: the poller's configuration, needing DATABASE_URL (or the data directory) and the
 * credential key alone.
 *
 * @param modules The generated modules (`modules.gen.ts`).
 * @param env The environment (default: the process's).
 * @returns The started poller.
 */
export async function bootstrapPoller(
  modules: LoadedModules,
  env: Record<string, string | undefined> = Deno.env.toObject(),
): Promise<PollRuntime> {
  return handle(await boot.bootstrapPoller(modules, env));
}

/**
 * The second half of `openServe` (`@dutlab/core/serve`): every service, the PDF signing certificate checked,
 * the signing keys registered. On failure it closes the database, releases the data directory and rejects
 * with the StartupError.
 *
 * @param opened What `openServe` returned (completed once).
 * @returns The started runtime.
 */
export async function completeServe(opened: OpenedServe): Promise<Runtime> {
  return handle(await boot.completeServe(opened), "serve");
}

/**
 * With DUT_CRED_ENC_KEY_PREVIOUS set, re-encrypt old credentials with the current key in the background
 * (`serve` and `poll` call it).
 *
 * @param rt The started runtime.
 */
export function finishKeyRotation(rt: PollRuntime): void {
  boot.finishKeyRotation(started<StartedPoller>(rt));
}

/**
 * Start the polling worker unless disabled (DUT_API_POLLER_DISABLE=1); the runtime's `close()` stops it.
 *
 * @param rt The started runtime.
 * @returns Whether a worker started.
 */
export async function startWorker(rt: PollRuntime): Promise<boolean> {
  return (await boot.startWorker(started<StartedPoller>(rt))) !== null;
}

/**
 * Start the webhook delivery worker of `serve` (docs/notifications.md); the runtime's `close()` stops it.
 *
 * @param rt The started runtime.
 */
export function startWebhooks(rt: Runtime): void {
  boot.startWebhooks(started(rt));
}

/**
 * Start the automatic NetBox write-back of `serve` (DUT_NETBOX_WRITEBACK=on, docs/netbox.md); the runtime's
 * `close()` stops it.
 *
 * @param rt The started runtime.
 * @returns Whether it started (false when it is off).
 */
export async function startNetBoxWriteBack(rt: Runtime): Promise<boolean> {
  return (await boot.startNetBoxWriteBack(started(rt))) !== null;
}

/**
 * Move old snapshots to the narrow layout in the background (DUT_SNAPSHOT_COMPACTION); the runtime's
 * `close()` stops it.
 *
 * @param rt The started runtime.
 * @returns Resolves when the background compaction ends.
 */
export function startCompaction(rt: Runtime): Promise<void> {
  return boot.startCompaction(started(rt));
}

/**
 * Load (without running) what `completeServe` loads on demand: the PDF signer's modules (pkijs and the X.509
 * parser, about a tenth of a second). `server.ts` calls it while the embedded database opens in its worker
 * (runtime/early_open.ts), when the main thread would otherwise wait idle, so that after the open the first
 * `/readyz` does not wait behind them.
 */
export async function preloadServices(): Promise<void> {
  await import("./src/report/pdf_sign.ts");
}

/**
 * The HTTP app over the runtime's services, loaded when asked: its 50 modules (routes, OpenAPI schemas, report
 * pages) are not on the path of a start to its first `/readyz` (issue 34 point 5).
 *
 * @param rt The started runtime.
 * @returns The app.
 */
export async function loadApp(rt: Runtime): Promise<HttpApp> {
  const { createApp } = await import("./src/http/app.ts");
  return createApp(started(rt).services);
}

/**
 * At shutdown: end the live event streams (clients resume with Last-Event-ID), write the pending summary of
 * refused requests, then wait for `finished` (the
 * HTTP server's) at most DUT_SHUTDOWN_GRACE_SECONDS, since connections to clients that went away can keep it
 * pending.
 *
 * @param rt The started runtime.
 * @param finished The HTTP server's `finished`.
 */
export async function drainHttp(rt: Runtime, finished: Promise<void>): Promise<void> {
  const s = started(rt);
  await s.services.events.close();
  // The refused requests counted since the last summary line are logged now, not lost with the timer.
  (await import("./src/http/auth.ts")).refusalLog.flush();
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    finished,
    new Promise((r) => (timer = setTimeout(r, s.config.DUT_SHUTDOWN_GRACE_SECONDS * 1000))),
  ]);
  clearTimeout(timer);
}
