import canonicalize from "canonicalize";

const hex = (buf: ArrayBuffer | Uint8Array) =>
  Array.from(buf instanceof Uint8Array ? buf : new Uint8Array(buf), (b) => b.toString(16).padStart(2, "0"))
    .join("");

/** Lowercase hex SHA-256 of bytes or a UTF-8 string. */
export async function sha256Hex(data: Uint8Array | string): Promise<string> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  return hex(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
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
 * `deno eval 'import c from "npm:canonicalize"; ...'` (see README "Hashes").
 */
export function jcsSha256(value: unknown): Promise<string> {
  return sha256Hex(canonicalJson(value));
}
