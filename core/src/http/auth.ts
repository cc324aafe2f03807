import type { MiddlewareHandler } from "hono";
import { timingSafeEqual } from "../credentials.ts";
import { problemResponse, problemType } from "./problem.ts";

/** `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time; 401 problem otherwise. */
export function adminAuth(token: string): MiddlewareHandler {
  return async (c, next) => {
    const h = c.req.header("authorization") ?? "";
    const m = /^Bearer\s+(.+)$/i.exec(h.trim());
    if (!m || !timingSafeEqual(m[1].trim(), token)) {
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
