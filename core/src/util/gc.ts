/**
 * V8's full garbage collection for the idle reclaimer (runtime/idle.ts) and the PGlite worker, whose heap is
 * its own isolate's (db/pglite_worker.ts).
 *
 * @module
 */
import v8 from "node:v8";
import vm from "node:vm";

/**
 * This isolate's full garbage collection, or null when the runtime does not expose it: `--expose-gc` is set at
 * run time through `node:v8` and `gc` read from a new `node:vm` context (a context made before the flag
 * lacks it).
 */
export function fullGc(): (() => void) | null {
  try {
    v8.setFlagsFromString("--expose-gc");
    const gc: unknown = vm.runInNewContext("gc");
    return typeof gc === "function" ? () => void gc() : null;
  } catch {
    return null;
  }
}
