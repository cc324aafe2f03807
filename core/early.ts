/**
 * `@dutlab/core/early`: what `server.ts` runs before it loads anything else, the embedded database's open
 * begun in its worker while the service loads (runtime/early_open.ts). Its imports are the lock and the
 * worker's stand-in only.
 *
 * @module
 */
export { openEarly } from "./src/runtime/early_open.ts";
