/**
 * `deno task poll`: the polling worker alone (no HTTP server). It needs only DATABASE_URL and
 * DUT_CRED_ENC_KEY (docs/deploy-postgres.md "Which host holds which secret"): no admin token, no report or PDF signing key.
 */
import {
  bootstrapPoller,
  exitOnStartupError,
  finishKeyRotation,
  onShutdown,
  startWorker,
} from "@dutlab/core/runtime";
import { modules } from "./modules.gen.ts";

const rt = await bootstrapPoller(modules).catch(exitOnStartupError);
finishKeyRotation(rt);
if (!(await startWorker(rt))) {
  await rt.close();
  Deno.exit(0);
}
onShutdown(() => rt.close());
