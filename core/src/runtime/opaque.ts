/**
 * The started runtimes behind the opaque handles of `@dutlab/core/runtime` (core/runtime.ts), for that face
 * and the operator face (core/ops.ts `runtimeInternals`) to read.
 *
 * @module
 */
import type { PollRuntime, Runtime } from "./handle.ts";

const handles = new WeakMap<object, PollRuntime>();

/** Record the runtime a handle stands for. */
export function register(handle: object, rt: PollRuntime): void {
  handles.set(handle, rt);
}

/** The runtime behind a handle (a `serve` or admin one where a `Runtime` handle is typed). */
export function started<R extends PollRuntime = Runtime>(handle: object): R {
  const rt = handles.get(handle);
  if (!rt) throw new TypeError("not a runtime started by @dutlab/core/runtime");
  return rt as R;
}
