import { EnvSchema } from "../src/runtime/config.ts";

/**
 * The environment of a child process a test starts: the parent's whole environment (proxy, CA and cache
 * variables such as `DENO_DIR`, `HTTPS_PROXY` or `NODE_EXTRA_CA_CERTS` included, so the child reuses the
 * parent's module cache and trust store and never downloads anything), minus every variable dutlab itself
 * reads (docs/configuration.md), which the test controls, plus `set`.
 *
 * Pass the result as `env` together with `clearEnv: true`: a `Deno.Command` env is otherwise added to the
 * inherited one, so a variable removed here would still reach the child.
 */
export function childEnv(
  set: Record<string, string> = {},
  opts: { remove?: string[]; from?: Record<string, string> } = {},
): Record<string, string> {
  // INIT_CWD: where an outer `deno task` started; a child runs where the test puts it.
  const controlled = new Set([
    ...Object.keys(EnvSchema.shape),
    "NO_COLOR",
    "INIT_CWD",
    ...(opts.remove ?? []),
  ]);
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts.from ?? Deno.env.toObject())) {
    if (!controlled.has(k)) env[k] = v;
  }
  // TEST_PGLITE_WORKER=on: the children run embedded PGlite in a Web Worker too (core/harness/db.ts).
  const worker: Record<string, string> = Deno.env.get("TEST_PGLITE_WORKER") === "on"
    ? { DUT_PGLITE_WORKER: "on" }
    : {};
  return { NO_COLOR: "1", ...env, ...worker, ...set };
}

/** Variables a child needs from its parent to reuse its module cache and reach the registry like it. */
export const INHERITED_VARIABLES = [
  "PATH",
  "HOME",
  "DENO_DIR",
  "XDG_CACHE_HOME",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "no_proxy",
  "NODE_EXTRA_CA_CERTS",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "DENO_CERT",
  "DENO_TLS_CA_STORE",
] as const;
