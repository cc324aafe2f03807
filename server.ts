/** `deno task serve`: the HTTP API and, in the same process, the polling worker. */
import { openEarly } from "@dutlab/core/early";

// Before anything else loads: an existing embedded database starts opening in its worker, on another core,
// while the main thread loads the service (runtime/early_open.ts; issue 53, restart).
const early = openEarly(Deno.env.toObject());
const { exitOnStartupError, logger, onShutdown, openServe } = await import("@dutlab/core/serve");
const { modules } = await import("./modules.gen.ts");

// The database open and migrated: the server listens from here on (issue 34 point 5). Until the services and
// the HTTP app are built, `/healthz` and `/readyz` answer from the open database and every other request
// waits for the app; a start-up error in the second half still ends the process with its message (exit 2).
const opening = openServe(modules, Deno.env.toObject());
// The rest of the service (services, poll worker, HTTP app) loads while the database opens and migrates;
// with the database opening on another core, so do the modules `completeServe` would load after it.
const runtime = import("@dutlab/core/runtime").then(async (r) => {
  if (early) await r.preloadServices();
  return r;
});
runtime.catch(() => {}); // a failure surfaces through `ready` below
const opened = await opening.catch(exitOnStartupError);
const ready = (async () => {
  const {
    completeServe,
    drainHttp,
    finishKeyRotation,
    loadApp,
    startCompaction,
    startNetBoxWriteBack,
    startWebhooks,
    startWorker,
  } = await runtime;
  const rt = await completeServe(opened);
  finishKeyRotation(rt);
  await startWorker(rt);
  // Webhook deliveries from the outbox (docs/notifications.md); stopped at close.
  startWebhooks(rt);
  // NetBox journal entries of finished runs (DUT_NETBOX_WRITEBACK=on, docs/netbox.md); stopped at close.
  await startNetBoxWriteBack(rt);
  // Old snapshots move to the narrow layout in the background (never delaying /readyz); stopped at close.
  void startCompaction(rt);
  return { rt, drainHttp, app: await loadApp(rt) };
})();
ready.catch(exitOnStartupError);
let app: Awaited<typeof ready>["app"] | null = null;

/** `/healthz` and `/readyz` while the app is being built (the app's own answers, without its headers). */
async function earlyProbe(req: Request): Promise<Response | null> {
  if (req.method !== "GET") return null;
  const path = new URL(req.url).pathname;
  if (path === "/healthz") return Response.json({ status: "ok" });
  if (path !== "/readyz") return null;
  try {
    await opened.ping();
    return Response.json({ status: "ready", database: opened.kind });
  } catch {
    return null; // the app answers the 503 problem once it is built
  }
}

const ac = new AbortController();
const server = Deno.serve({
  hostname: opened.config.HOST,
  port: opened.config.PORT,
  signal: ac.signal,
  onListen: ({ hostname, port }) =>
    logger("http").info("dutlab listening on {url}", { url: `http://${hostname}:${port}` }),
}, async (req, info) => {
  if (app) return await app.fetch(req, info);
  return (await earlyProbe(req)) ?? await (await ready).app.fetch(req, info);
});
ready.then(({ rt, drainHttp, app: built }) => {
  app = built;
  rt.defer(async () => {
    ac.abort();
    // End the live event streams (clients resume with Last-Event-ID), then wait for the server at most the
    // grace period: connections to clients that went away can keep `finished` pending.
    await drainHttp(rt, server.finished);
  });
}, () => {});
onShutdown(async () => (await ready).rt.close());
