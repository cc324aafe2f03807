import type { Context } from "hono";
import { matchedRoutes } from "hono/route";

/** The route template that serves this request (e.g. `/api/admin/dut/devices/:id`), or null when none does. */
export function routeTemplate(c: Context): string | null {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) {
    const r = routes[i];
    if (r.method !== "ALL" && !r.path.includes("*")) return r.path;
  }
  return null;
}

/** The path parameters of `path` under `template`. */
export function templateParams(template: string, path: string): Record<string, string> {
  const t = template.split("/");
  const p = path.split("/");
  const out: Record<string, string> = {};
  t.forEach((seg, i) => {
    if (seg.startsWith(":") && p[i] !== undefined) out[seg.slice(1)] = decodeSegment(p[i]);
  });
  return out;
}

/** A path segment decoded; a malformed escape (e.g. `%ED%BF%BF`, a lone surrogate) is kept as sent. */
function decodeSegment(seg: string): string {
  try {
    return decodeURIComponent(seg);
  } catch {
    return seg;
  }
}
