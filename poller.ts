/** `deno task poll`: the polling worker alone (no HTTP server). */
import {
  bootstrap,
  exitOnStartupError,
  finishKeyRotation,
  onShutdown,
  startWorker,
} from "@dutlab/core/runtime";
import { modules } from "./modules.gen.ts";

const rt = await bootstrap(modules).catch(exitOnStartupError);
finishKeyRotation(rt);
const worker = await startWorker(rt);
if (!worker) {
  await rt.close();
  Deno.exit(0);
}
onShutdown(async () => {
  await worker.stop(rt.config.DUT_SHUTDOWN_GRACE_SECONDS * 1000);
  await rt.services.releaseAllParked();
  await rt.close();
});
