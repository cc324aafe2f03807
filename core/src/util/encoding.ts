/**
 * Base64 and base64url (RFC 4648 sections 4 and 5) for the whole core: credentials, tokens, share links and
 * signatures all use these, so every copy agrees on alphabet and padding. Built on V8's
 * `Uint8Array.prototype.toBase64` / `Uint8Array.fromBase64` (TC39 "Uint8Array to/from base64"), which
 * handles any length without the argument-count limit of `String.fromCharCode(...bytes)` and refuses
 * characters outside the alphabet instead of skipping them.
 *
 * @module
 */

/**
 * Bytes as base64url without padding (RFC 4648 section 5), the form of tokens, JWK members and URLs.
 *
 * @example
 * ```ts
 * import { base64url } from "./encoding.ts";
 * base64url(new Uint8Array([250, 251, 255])); // "-vv_"
 * ```
 */
export function base64url(bytes: Uint8Array): string {
  return bytes.toBase64({ alphabet: "base64url", omitPadding: true });
}

/**
 * The bytes of a base64url text; padding is optional. Throws a `SyntaxError` for any character outside the
 * base64url alphabet (including `+` and `/`).
 *
 * @example
 * ```ts
 * import { fromBase64url } from "./encoding.ts";
 * fromBase64url("-vv_"); // Uint8Array [250, 251, 255]
 * ```
 */
export function fromBase64url(text: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.fromBase64(text, { alphabet: "base64url" });
}

/**
 * Bytes as standard base64 with padding (RFC 4648 section 4), the form of PEM bodies and DSSE envelopes.
 *
 * @example
 * ```ts
 * import { base64 } from "./encoding.ts";
 * base64(new Uint8Array([250, 251, 255])); // "+vv/"
 * ```
 */
export function base64(bytes: Uint8Array): string {
  return bytes.toBase64();
}

/**
 * The bytes of a standard base64 text. ASCII whitespace is skipped (a PEM body's line breaks) and padding
 * is optional; any other character outside the alphabet throws a `SyntaxError`.
 *
 * @example
 * ```ts
 * import { fromBase64 } from "./encoding.ts";
 * fromBase64("+vv/\n"); // Uint8Array [250, 251, 255]
 * ```
 */
export function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.fromBase64(text);
}
