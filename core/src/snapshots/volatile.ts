/**
 * Volatile paths: the parts of a snapshot payload that change on every poll without meaning a change
 * (`AdapterDefinition.volatilePaths`). Patterns are JSON Pointers (RFC 6901) in which a segment that is
 * exactly `*` matches any one object key or array index.
 */
import type { AdapterDefinition } from "../adapter.ts";
import { canonicalJson, sha256Hex } from "../util/hash.ts";

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

/**
 * The adapters as `volatileFor` reads them: the registry's map by vendor (`Registry` fits; named by shape so this
 * room does not import the registry, which imports it).
 */
export interface VolatileSource {
  readonly adapters: ReadonlyMap<string, { readonly adapter: Pick<AdapterDefinition, "volatilePaths"> }>;
}

/** The volatile-path patterns of a vendor's adapter for a label (none when the vendor has no adapter now). */
export function volatileFor(registry: VolatileSource, vendor: string, label: string): readonly string[] {
  return registry.adapters.get(vendor)?.adapter.volatilePaths?.[label] ?? [];
}

/** A pattern set in one canonical form (sorted, without repeats): equal sets give equal text. */
export function patternSetKey(patterns: readonly string[]): string {
  return canonicalJson([...new Set(patterns)].sort());
}

/**
 * The "stable" hash of a snapshot: SHA-256 of its payload without the volatile paths, what the change history
 * compares (`snapshots.stable_sha256`). Without patterns it is the payload hash itself. With patterns, the
 * pattern set is hashed too, behind a prefix no canonical JSON text starts with, so two hashes made under
 * different sets (an adapter that changed its patterns) are never equal and never equal a payload hash: such
 * a pair reads as a change and is compared in full. `text` and `sha256` are the payload's canonical JSON and
 * its hash, as stored.
 */
export async function stableSha256(
  s: { payload: unknown; text: string; sha256: string },
  patterns: readonly string[],
): Promise<string> {
  if (!patterns.length) return s.sha256;
  const stripped = canonicalJson(stripVolatile(s.payload, patterns));
  return await sha256Hex(`stripped ${patternSetKey(patterns)}\n${stripped}`);
}
