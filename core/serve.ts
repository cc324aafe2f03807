/**
 * `@dutlab/core/serve`: the first half of `serve` (`openServe`), what `server.ts` imports before it listens.
 * Unlike `@dutlab/core/runtime`, whose face loads the services, the poll worker and, on demand, the HTTP app,
 * this one loads only what opens the database (runtime/start.ts), so a start answers `/readyz` before the rest
 * of the service is loaded (issue 34 point 5). `completeServe(opened)` of `@dutlab/core/runtime` then builds the rest.
 *
 * @module
 */
export { exitOnStartupError, onShutdown } from "./src/runtime/start.ts";
export { type OpenedServe, openServe } from "./src/runtime/serve_open.ts";
export { logger } from "./src/util/log.ts";
