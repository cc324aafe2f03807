/**
 * Volatile paths: the parts of a snapshot payload that change on every poll without meaning a change
 * (`AdapterDefinition.volatilePaths`). Patterns are JSON Pointers (RFC 6901) in which a segment that is
 * exactly `*` matches any one object key or array index.
 */

/** Why `pattern` is not a volatile-path pattern, or null when it is one. */
export function volatilePatternError(pattern: unknown): string | null {
  if (typeof pattern !== "string") return "is not a string";
  if (pattern === "") return "is empty (it would hide the whole payload)";
  if (!pattern.startsWith("/")) return "must start with / (a JSON Pointer)";
  if (/~[^01]|~$/.test(pattern)) return "has a ~ that is not ~0 or ~1";
  return null;
}

/** The segments of a valid pattern, unescaped (`*` stays the wildcard). */
export function patternSegments(pattern: string): string[] {
  return pattern.slice(1).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;

/**
 * A copy of `payload` without the members the patterns match (the input is never changed). Array elements
 * a pattern names are removed too, which shifts the indexes of the rest: to keep a list's shape, name a
 * member of each element rather than the elements themselves.
 */
export function stripVolatile(payload: unknown, patterns: readonly string[]): unknown {
  if (!patterns.length) return payload;
  const segs = patterns.map(patternSegments);
  return strip(payload, segs);
}

function strip(v: unknown, patterns: string[][]): unknown {
  if (!isObj(v) || !patterns.length) return v;
  const entries: Array<[string, unknown]> = Array.isArray(v)
    ? v.map((x, i) => [String(i), x])
    : Object.entries(v);
  const out: Array<[string, unknown]> = [];
  for (const [k, x] of entries) {
    const here = patterns.filter((p) => p[0] === "*" || p[0] === k);
    if (here.some((p) => p.length === 1)) continue;
    out.push([k, strip(x, here.map((p) => p.slice(1)))]);
  }
  return Array.isArray(v) ? out.map(([, x]) => x) : Object.fromEntries(out);
}
