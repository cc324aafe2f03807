/**
 * `@dutlab/core/runtime`: what the entry points (`server.ts`, `poller.ts`, the tools) start the service with —
 * the runtime of `core/src/runtime/bootstrap.ts` and the HTTP app over its services (`createApp`). This face
 * stands outside core/src's floors, as `core/mod.ts` does: the runtime room sits below `http/`, which is built
 * over its `Services`, so joining the two is the entry's job, not the runtime's.
 *
 * @module
 */
export * from "./src/runtime/bootstrap.ts";
export { type OpenedServe, openServe } from "./src/runtime/serve_open.ts";
import type { createApp } from "./src/http/app.ts";

/**
 * The HTTP app's `createApp`, loaded when asked: its 50 modules (routes, OpenAPI schemas, report pages) are
 * not on the path of a start to its first `/readyz` (issue 34 point 5).
 */
export async function loadApp(): Promise<typeof createApp> {
  return (await import("./src/http/app.ts")).createApp;
}
