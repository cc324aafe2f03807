import { isDeepStrictEqual } from "node:util";
import type { AdapterDefinition, CollectedSnapshot } from "../src/adapter.ts";
import { stripVolatile } from "../src/snapshots/volatile.ts";

/**
 * The declared volatile paths of `adapter` (as `label pattern`) that match nothing in any of the given
 * polls: a pattern that never matches a real or simulated answer is a typo or a guess. Pass every poll
 * you have (simulator, captured answers); a pattern for a shape only some devices answer needs a poll of
 * such a device.
 */
export function unmatchedVolatilePaths(
  adapter: AdapterDefinition,
  polls: ReadonlyArray<readonly CollectedSnapshot[]>,
): string[] {
  const out: string[] = [];
  for (const [label, patterns] of Object.entries(adapter.volatilePaths ?? {})) {
    const payloads = polls.flatMap((p) => p.filter((s) => s.label === label).map((s) => s.payload));
    for (const pattern of patterns) {
      if (!payloads.some((p) => !isDeepStrictEqual(stripVolatile(p, [pattern]), p))) {
        out.push(`${label} ${pattern}`);
      }
    }
  }
  return out;
}

/** The labels whose payloads differ between two polls once the adapter's volatile paths are left out. */
export function nonVolatileChanges(
  adapter: AdapterDefinition,
  a: readonly CollectedSnapshot[],
  b: readonly CollectedSnapshot[],
): string[] {
  const v = adapter.volatilePaths ?? {};
  return a.filter((s) => {
    const other = b.find((o) => o.label === s.label);
    const p = v[s.label] ?? [];
    return !isDeepStrictEqual(stripVolatile(s.payload, p), stripVolatile(other?.payload, p));
  }).map((s) => s.label);
}
