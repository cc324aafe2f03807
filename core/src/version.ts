import meta from "../deno.json" with { type: "json" };

/** The version of `@dutlab/core`, read from its `deno.json` (the one source of truth). */
export const CORE_VERSION: string = meta.version;

/**
 * Whether a module that declares `coreVersion` (a caret range such as `^1.0.0`) can run on this core.
 * Same major version, and this core at least as new as the range's minor.patch.
 */
export function coreSatisfies(range: string, version: string = CORE_VERSION): boolean {
  const m = /^\^(\d+)\.(\d+)\.(\d+)$/.exec(range.trim());
  const v = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  if (!m || !v) return false;
  const [rMaj, rMin, rPat] = m.slice(1).map(Number);
  const [vMaj, vMin, vPat] = v.slice(1).map(Number);
  if (rMaj !== vMaj) return false;
  if (vMin !== rMin) return vMin > rMin;
  return vPat >= rPat;
}
