import canonicalize from "canonicalize";
import { createHash } from "node:crypto";

/**
 * Lowercase hex SHA-256 of bytes or a UTF-8 string. node:crypto hashes synchronously in a few µs;
 * `crypto.subtle.digest` costs ~50-200 µs of CPU per call in Deno, which the poll cycle pays ~10 times
 * per device (BENCHMARKS.md, scenario 1).
 */
export function sha256Hex(data: Uint8Array | string): Promise<string> {
  return Promise.resolve(createHash("sha256").update(data).digest("hex"));
}

/** RFC 8785 (JCS) canonical JSON of a value. */
export function canonicalJson(value: unknown): string {
  const s = canonicalize(value);
  if (s === undefined) throw new TypeError("Value has no canonical JSON form");
  return s;
}

/**
 * SHA-256 (lowercase hex) of the RFC 8785 canonical JSON of a value. Recompute a snapshot's hash with
 * `npx canonicalize`-equivalent tooling, e.g. in Deno:
 * `deno eval 'import c from "npm:canonicalize"; ...'` (see docs/reports.md "Signatures").
 */
export function jcsSha256(value: unknown): Promise<string> {
  return sha256Hex(canonicalJson(value));
}
