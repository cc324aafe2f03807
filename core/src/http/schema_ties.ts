/**
 * Compile-time ties between core's result interfaces and the zod response schemas that describe them on the
 * wire (issue 27 point 7): a value of each interface must be a valid output of its schema, so an interface
 * and its schema cannot drift apart without `deno check` failing here.
 */
import type { z } from "@hono/zod-openapi";
import type { PreflightResult as PreflightResultValue } from "../preflight/engine.ts";
import type { RunView } from "../runs/service.ts";
import type { PreflightResult, TestRun } from "../api/schemas.ts";

/** Resolves to `true` when `T` is assignable to `U`; otherwise the instantiation below fails to type-check. */
type Assignable<T, U> = [T] extends [U] ? true : false;
type Holds<T extends true> = T;

/** Every engine pre-flight result is a valid `PreflightResult` response. */
export type PreflightResultTied = Holds<Assignable<PreflightResultValue, z.infer<typeof PreflightResult>>>;
/** Every run view is a valid `TestRun` response. */
export type RunViewTied = Holds<Assignable<RunView, z.infer<typeof TestRun>>>;
