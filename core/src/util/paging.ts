import { base64url, fromBase64url } from "./encoding.ts";

/** Opaque cursors of the paged lists: base64url of `<kind>:<key>`; anything else is not a cursor. */
export function encodeCursor(kind: string, key: string): string {
  return base64url(new TextEncoder().encode(`${kind}:${key}`));
}

/** The key a cursor of `kind` carries, or null when the text is not such a cursor. */
export function decodeCursor(kind: string, cursor: string): string | null {
  try {
    // A cursor in the standard alphabet (`+`, `/`) has always been accepted too, so it still is.
    const bytes = fromBase64url(cursor.replace(/\+/g, "-").replace(/\//g, "_"));
    const s = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return s.startsWith(`${kind}:`) && s.length > kind.length + 1 ? s.slice(kind.length + 1) : null;
  } catch {
    return null;
  }
}
