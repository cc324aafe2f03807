/**
 * The UTF-8 bytes of `JSON.stringify(value)`, made in pieces for large answers (a pre-flight of 1,000
 * devices is 1.5 MB of JSON).
 *
 * V8 builds a string of one-byte characters until it meets a character above U+00FF; from then on the whole
 * text is two bytes per character. One em dash in a result's `summary`, written after 1.5 MB of ASCII
 * `checks`, made V8 copy the text so far into a twice-as-large string, and made the UTF-8 encoding of the
 * whole answer take its slow path (the pre-flight route's p50 fell from 47-54 to 33-37 ms without it:
 * BENCHMARKS.md section 4f). Here each member of a top-level object, and each run of {@link CHUNK} elements
 * of a top-level member that is an array, is serialized and encoded on its own, so such a character costs
 * only its own piece. The bytes are those of `new TextEncoder().encode(JSON.stringify(value))`, byte for
 * byte (tested).
 *
 * @module
 */

import { concatBytes } from "./bytes.ts";

/** Array elements serialized per piece. */
export const CHUNK = 256;

const encoder = new TextEncoder();

/** A plain object: its own members are what `JSON.stringify` writes (no `toJSON`, no class). */
function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return (proto === Object.prototype || proto === null) &&
    typeof (v as { toJSON?: unknown }).toJSON !== "function";
}

/**
 * `JSON.stringify(value)` as UTF-8 bytes, serialized in pieces when `value` is a plain object (see the module
 * comment); anything else in one piece. Throws what `JSON.stringify` throws, and a `TypeError` for a value
 * without a JSON form (`undefined`). A member's `toJSON` is called with the empty key rather than its own
 * (the engine's values have no `toJSON` that reads its key; `Date`'s ignores it).
 *
 * @example
 * ```ts
 * import { jsonBytes } from "./json_bytes.ts";
 * new TextDecoder().decode(jsonBytes({ a: [1, 2], summary: "ready — yes" })); // '{"a":[1,2],"summary":"ready — yes"}'
 * ```
 */
export function jsonBytes(value: unknown): Uint8Array<ArrayBuffer> {
  if (!isPlainObject(value)) {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError("jsonBytes: the value has no JSON form");
    return encoder.encode(text);
  }
  const parts: string[] = [];
  let first = true;
  for (const key of Object.keys(value)) {
    const member = value[key];
    if (Array.isArray(member) && member.length > CHUNK) {
      parts.push(`${first ? "{" : ","}${JSON.stringify(key)}:[`);
      for (let at = 0; at < member.length; at += CHUNK) {
        const text = JSON.stringify(member.slice(at, at + CHUNK));
        // "[a,b]" without its brackets, after a comma when it follows another chunk
        parts.push(at === 0 ? text.slice(1, -1) : "," + text.slice(1, -1));
      }
      parts.push("]");
      first = false;
      continue;
    }
    const text = JSON.stringify(member);
    if (text === undefined) continue; // undefined, functions and symbols: left out, as JSON.stringify does
    parts.push(`${first ? "{" : ","}${JSON.stringify(key)}:${text}`);
    first = false;
  }
  parts.push(first ? "{}" : "}");
  return concatBytes(parts.map((p) => encoder.encode(p)));
}
