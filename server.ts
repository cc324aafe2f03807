/** `deno task serve`: the HTTP API and, in the same process, the polling worker. */
import {
  bootstrap,
  createApp,
  exitOnStartupError,
  finishKeyRotation,
  logger,
  onShutdown,
  startCompaction,
  startWorker,
} from "@dutlab/core/runtime";
import { modules } from "./modules.gen.ts";

const rt = await bootstrap(modules, Deno.env.toObject(), { serve: true }).catch(exitOnStartupError);
finishKeyRotation(rt);
await startWorker(rt);
const app = createApp(rt.services);
const ac = new AbortController();
const server = Deno.serve({
  hostname: rt.config.HOST,
  port: rt.config.PORT,
  signal: ac.signal,
  onListen: ({ hostname, port }) =>
    logger("http").info("dutlab listening on {url}", { url: `http://${hostname}:${port}` }),
}, app.fetch);
rt.defer(async () => {
  ac.abort();
  // End the live event streams, so that the server can finish (clients resume with Last-Event-ID).
  await rt.services.events.close();
  // Connections to clients that went away can keep `finished` pending: wait at most the grace period.
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    server.finished,
    new Promise((r) => (timer = setTimeout(r, rt.config.DUT_SHUTDOWN_GRACE_SECONDS * 1000))),
  ]);
  clearTimeout(timer);
});
// Old snapshots move to the narrow layout in the background (never delaying /readyz); stopped first at close.
void startCompaction(rt);
onShutdown(() => rt.close());
