import type { Context, MiddlewareHandler } from "hono";
import type { Services } from "../runtime/services.ts";
import { logger } from "../util/log.ts";
import { principalOf } from "./auth.ts";
import { routeTemplate, templateParams } from "./route.ts";

const log = logger("audit");
const READS = new Set(["GET", "HEAD", "OPTIONS"]);
const notes = new WeakMap<Request, string>();

/**
 * Add a note to this request's audit entry (at most 2,000 characters): what a route must leave on record
 * beyond the request line, e.g. a run started over a failed pre-flight with the override's reason. Never a
 * secret.
 */
export function noteForAudit(c: Context, note: string): void {
  notes.set(c.req.raw, note.length > 2000 ? `${note.slice(0, 1999)}…` : note);
}

/**
 * Record every state-changing request (any method but GET, HEAD, OPTIONS), refused ones included, in the
 * append-only audit log: time, token name and role (null when no valid token was sent), method, route
 * template, target id, status, outcome and request id, and the note a route added ({@link noteForAudit}).
 * Never a body, a query string or a header.
 */
export function auditTrail(svc: Services): MiddlewareHandler {
  return async (c, next) => {
    if (READS.has(c.req.method)) return await next();
    await next();
    const route = routeTemplate(c);
    const params = route ? templateParams(route, c.req.path) : {};
    let target: string | null = params.id ?? params.executionId ?? null;
    const status = c.res.status;
    if (!target && status >= 200 && status < 300 && c.res.headers.get("content-type")?.includes("json")) {
      try {
        const body = await c.res.clone().json() as Record<string, unknown>;
        const v = body.deviceId ?? body.executionId ?? body.id;
        target = typeof v === "string" ? v : null;
      } catch { /* not a JSON object */ }
    }
    const principal = principalOf(c);
    try {
      await svc.audit.record({
        tokenName: principal?.name ?? null,
        role: principal?.role ?? null,
        method: c.req.method,
        route: route ?? c.req.path,
        targetId: target,
        status,
        outcome: status < 400 ? "success" : status === 401 || status === 403 ? "refused" : "failed",
        requestId: c.get("requestId"),
        detail: notes.get(c.req.raw) ?? null,
      });
    } catch (e) {
      log.error("Could not record {method} {route} (request {requestId}) in the audit log: {error}", {
        method: c.req.method,
        route: route ?? c.req.path,
        requestId: c.get("requestId"),
        error: String(e),
      });
    }
  };
}
