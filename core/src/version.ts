// @ts-types="@types/semver"
import semver from "semver";
import meta from "../deno.json" with { type: "json" };

/** The version of `@dutlab/core`, read from its `deno.json` (the one source of truth). */
export const CORE_VERSION: string = meta.version;

/**
 * Whether a module that declares `coreVersion` (a caret range such as `^1.0.0`) can run on this core, by npm
 * semver's rules: `^1.2.3` admits 1.x from 1.2.3; `^0.2.0` admits 0.2.x only; prereleases are not admitted.
 * Only caret ranges are accepted as a declaration (the manifest's contract); anything else is refused.
 */
export function coreSatisfies(range: string, version: string = CORE_VERSION): boolean {
  const r = range.trim();
  if (!/^\^\d+\.\d+\.\d+$/.test(r) || !semver.valid(version)) return false;
  return semver.satisfies(version, r);
}
