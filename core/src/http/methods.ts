/**
 * Which methods a path is served with (the `Allow` of a 405), and the rule that a literal route wins over a
 * route whose parameter would capture the same segment: `/api/test-runs/preflight` is the pre-flight, never
 * run "preflight" of `/api/test-runs/{executionId}` (issue 46 point 3).
 * @module
 */
import type { Context, MiddlewareHandler } from "hono";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { problemResponse, problemType } from "./problem.ts";

interface Compiled {
  method: string;
  re: RegExp;
  /** Literal segments of the template: the more, the more specific. */
  literals: number;
}

/** The app's route templates by method, compiled once (the routes are fixed when the app is built). */
export class MethodTable {
  #app: OpenAPIHono;
  #routes: Compiled[] | null = null;

  constructor(app: OpenAPIHono) {
    this.#app = app;
  }

  #compiled(): Compiled[] {
    this.#routes ??= this.#app.routes
      .filter((r) => r.method !== "ALL" && !r.path.includes("*"))
      .map((r) => ({
        method: r.method,
        re: new RegExp(`^${r.path.replace(/[.]/g, "\\.").replace(/:[A-Za-z0-9_]+/g, "[^/]+")}$`),
        literals: r.path.split("/").filter((s) => s && !s.startsWith(":")).length,
      }));
    return this.#routes;
  }

  /**
   * The methods `path` is served with (HEAD wherever GET is), sorted: those of the matching templates with
   * the most literal segments, so a literal route's methods are not mixed with a parameter route's.
   */
  allowed(path: string): string[] {
    return this.#resolve(path).allow;
  }

  /**
   * Whether `method` on `path` would reach a less specific route than the path's own: a literal path
   * (`…/snapshots/prune`) called with a method only its parameter sibling (`…/snapshots/{id}`) serves.
   */
  shadowed(path: string, method: string): boolean {
    const m = method === "HEAD" ? "GET" : method;
    const { allow, served } = this.#resolve(path);
    return allow.length > 0 && !allow.includes(m) && served.has(m);
  }

  #resolve(path: string): { allow: string[]; served: Set<string> } {
    const matching = this.#compiled().filter((r) => r.re.test(path));
    const best = Math.max(-1, ...matching.map((r) => r.literals));
    const methods = new Set(matching.filter((r) => r.literals === best).map((r) => r.method));
    if (methods.has("GET")) methods.add("HEAD");
    return { allow: [...methods].sort(), served: new Set(matching.map((r) => r.method)) };
  }
}

/** The 405 problem with `Allow`. */
export function methodNotAllowed(c: Context, allow: string[]): Response {
  c.header("Allow", allow.join(", "));
  return problemResponse(c, {
    type: problemType("method-not-allowed"),
    title: "Method not allowed",
    status: 405,
    detail: `${c.req.method} is not allowed on ${c.req.path}; allowed: ${allow.join(", ")}`,
    instance: c.req.path,
  });
}

/**
 * Answers 405 before a parameter route takes a literal path's segment for its id (the router matches in
 * registration order, so a `/{id}` route registered first would otherwise answer `GET …/snapshots/prune`).
 */
export function literalRoutesFirst(table: MethodTable): MiddlewareHandler {
  return async (c, next) => {
    if (table.shadowed(c.req.path, c.req.method)) return methodNotAllowed(c, table.allowed(c.req.path));
    await next();
  };
}
