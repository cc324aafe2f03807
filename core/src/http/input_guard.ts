import { z } from "@hono/zod-openapi";

/**
 * Limits every request body, query and path parameter obeys, whatever its route's own schema says
 * (docs/http-api.md "Input limits"). They are enforced by one zod schema, `SafeInput`, that the router's
 * validation hook applies to the validated data of every route before a handler (and so the database)
 * sees it; a violation is a 400 problem naming the field.
 */
export const INPUT_LIMITS = {
  /** Deepest nesting of objects and arrays in a body (a k6 summary export nests 4 levels). */
  maxDepth: 32,
  /** Largest magnitude of any number: finite, and sums of a million of them stay exact enough and finite. */
  maxAbsNumber: 1e15,
} as const;

interface Found {
  path: PropertyKey[];
  message: string;
}

/** What PostgreSQL cannot store unchanged in text or jsonb: NUL, and UTF-16 that is not well formed. */
function badText(s: string): string | null {
  if (s.includes("\u0000")) return "must not contain the NUL character (U+0000)";
  if (!s.isWellFormed()) return "must not contain a lone UTF-16 surrogate (not valid Unicode)";
  return null;
}

/** Walk a validated value (iteratively: hostile nesting must not exhaust the stack). First fault wins. */
function firstFault(root: unknown): Found | null {
  const stack: Array<{ v: unknown; path: PropertyKey[] }> = [{ v: root, path: [] }];
  while (stack.length) {
    const { v, path } = stack.pop()!;
    if (typeof v === "string") {
      const m = badText(v);
      if (m) return { path, message: m };
    } else if (typeof v === "number") {
      if (!Number.isFinite(v)) return { path, message: "must be a finite number" };
      if (Math.abs(v) > INPUT_LIMITS.maxAbsNumber) {
        return { path, message: `must be at most ${INPUT_LIMITS.maxAbsNumber} in magnitude` };
      }
    } else if (v && typeof v === "object" && !(v instanceof Date)) {
      // Containers only: depth counts objects/arrays, the root body being depth 1.
      if (path.length >= INPUT_LIMITS.maxDepth) {
        return { path, message: `nests deeper than ${INPUT_LIMITS.maxDepth} levels` };
      }
      const entries = Array.isArray(v) ? v.map((x, i) => [i, x] as const) : Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, x] = entries[i]!; // 0 <= i < entries.length
        if (typeof k === "string") {
          const m = badText(k);
          if (m) return { path: [...path, k], message: `member name ${m}` };
        }
        stack.push({ v: x, path: [...path, k] });
      }
    }
  }
  return null;
}

/** Any validated request input: refused when a string, member name or number is outside INPUT_LIMITS. */
export const SafeInput = z.unknown().superRefine((value, ctx) => {
  const f = firstFault(value);
  if (f) ctx.addIssue({ code: "custom", path: f.path as Array<string | number>, message: f.message });
});
