/**
 * Byte arrays joined into one (the JSON answers of `json_bytes.ts`, the backup archive's tar stream).
 *
 * @module
 */

/**
 * The bytes of `parts`, one after the other, in a new array.
 *
 * @example
 * ```ts
 * import { concatBytes } from "./bytes.ts";
 * concatBytes([new Uint8Array([1, 2]), new Uint8Array([3])]); // Uint8Array [1, 2, 3]
 * ```
 */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
