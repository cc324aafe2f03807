import type { Context, MiddlewareHandler } from "hono";
import type { Services } from "../runtime/services.ts";
import { type Principal, requiredRole, roleAllows, sameSecret } from "../access/tokens.ts";
import { logger } from "../util/log.ts";
import { LogSummary } from "../util/log_summary.ts";
import { problemResponse, problemType } from "./problem.ts";
import { routeTemplate } from "./route.ts";

const log = logger("auth");
const principals = new WeakMap<Request, Principal>();

/**
 * Refusals are logged one by one only for the first few of each minute; the rest are counted and logged as
 * one line per reason per minute with a few example requests (issue 49: a fuzz run's log was 3,870 lines
 * of refusals). Every refusal is still logged at debug level and counted in `dutlab_auth_refused_total`.
 */
export const refusalLog = new LogSummary({
  intervalMs: 60_000,
  individual: 3,
  examples: 5,
  emit: (l) =>
    log.warn("Refused {count} more request(s) in {seconds} s: {reason}; e.g. {examples}", {
      count: l.count,
      seconds: l.seconds,
      reason: l.key,
      examples: l.examples.join(", "),
    }),
});

function logRefusal(reason: string, example: string, message: string, props: Record<string, unknown>) {
  log.debug(message, props);
  if (refusalLog.note(reason, example)) log.warn(message, props);
}

/** The principal an authenticated request acts as (set by `bearerAuth`). */
export const principalOf = (c: Context): Principal | undefined => principals.get(c.req.raw);

/**
 * `Authorization: Bearer <token>`: the ADMIN_TOKEN (compared in constant time) or a named API token (looked
 * up by its SHA-256). 401 without a valid token, 403 when the token's role does not allow the route. Every
 * refusal is counted in `dutlab_auth_refused_total` and logged without the token.
 */
export function bearerAuth(svc: Services): MiddlewareHandler {
  return async (c, next) => {
    const h = c.req.header("authorization") ?? "";
    const m = /^Bearer\s+(\S+)\s*$/i.exec(h.trim());
    const presented = m?.[1]; // the group is not optional: present whenever m is
    const principal = presented !== undefined ? await svc.tokens.resolve(presented) : null;
    const route = routeTemplate(c);
    if (!principal) {
      const reason = m ? "invalid" : "missing";
      svc.metrics.authRefused.inc({ reason });
      logRefusal(
        `${reason} bearer token`,
        `${c.req.method} ${c.req.path}`,
        "Refused {method} {path}: {reason} bearer token",
        {
          method: c.req.method,
          path: c.req.path,
          reason,
        },
      );
      c.header("WWW-Authenticate", m ? 'Bearer error="invalid_token"' : 'Bearer realm="dutlab"');
      return problemResponse(c, {
        type: problemType("unauthorized"),
        title: "Unauthorized",
        status: 401,
        detail: m ? "The bearer token is not valid" : "Send Authorization: Bearer <token>",
        instance: c.req.path,
      });
    }
    principals.set(c.req.raw, principal);
    // An unknown route is left to the 404/405 answers; its method decides the role needed to learn that.
    const need = requiredRole(c.req.method, route ?? c.req.path);
    if (!roleAllows(principal.role, need)) {
      svc.metrics.authRefused.inc({ reason: "forbidden" });
      logRefusal(
        `forbidden (needs ${need})`,
        `${c.req.method} ${route ?? c.req.path} by ${principal.name}`,
        "Refused {method} {route} to token {name} ({role}): needs {need}",
        {
          method: c.req.method,
          route: route ?? c.req.path,
          name: principal.name,
          role: principal.role,
          need,
        },
      );
      return problemResponse(c, {
        type: problemType("forbidden"),
        title: "Forbidden",
        status: 403,
        detail: `The token "${principal.name}" has role ${principal.role}; ${c.req.method} ${
          route ?? c.req.path
        } needs ${need}`,
        instance: c.req.path,
      });
    }
    await next();
  };
}

/**
 * The ADMIN_TOKEN alone (constant time), for routes that accept no named token. Kept for routes mounted
 * outside the prefixes `bearerAuth` covers; prefer `bearerAuth`, which adds roles and refusal metrics.
 */
export function adminAuth(token: string): MiddlewareHandler {
  return async (c, next) => {
    const m = /^Bearer\s+(\S+)\s*$/i.exec((c.req.header("authorization") ?? "").trim());
    const presented = m?.[1]; // the group is not optional: present whenever m is
    if (presented === undefined || !sameSecret(presented, token)) {
      c.header("WWW-Authenticate", m ? 'Bearer error="invalid_token"' : 'Bearer realm="dutlab"');
      return problemResponse(c, {
        type: problemType("unauthorized"),
        title: "Unauthorized",
        status: 401,
        detail: m ? "The bearer token is not valid" : "Send Authorization: Bearer <ADMIN_TOKEN>",
        instance: c.req.path,
      });
    }
    await next();
  };
}
