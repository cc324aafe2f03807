import type { Context } from "hono";
import { matchedRoutes } from "hono/route";

/** The route template that serves this request (e.g. `/api/admin/dut/devices/:id`), or null when none does. */
export function routeTemplate(c: Context): string | null {
  return matchedRoutes(c).findLast((r) => r.method !== "ALL" && !r.path.includes("*"))?.path ?? null;
}

/** A path segment decoded, or as sent when it is not valid percent-encoded UTF-8 (never throws). */
function decodeSegment(seg: string): string {
  try {
    return decodeURIComponent(seg);
  } catch {
    return seg;
  }
}

/**
 * The path parameters of `path` under `template`. A NUL or a lone surrogate that a parameter decodes to is
 * written as a `\uXXXX` escape, so the value can be stored and logged as text.
 */
export function templateParams(template: string, path: string): Record<string, string> {
  const t = template.split("/");
  const p = path.split("/");
  const out: Record<string, string> = {};
  t.forEach((seg, i) => {
    if (seg.startsWith(":") && p[i] !== undefined) out[seg.slice(1)] = storable(decodeSegment(p[i]));
  });
  return out;
}

/** NUL and lone UTF-16 surrogates: what PostgreSQL text cannot hold. */
// deno-lint-ignore no-control-regex -- NUL is exactly what is escaped here
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** `s` with NUL and lone UTF-16 surrogates written as `\uXXXX` escapes. */
function storable(s: string): string {
  return s.replace(UNSTORABLE, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
