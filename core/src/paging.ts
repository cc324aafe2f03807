/** Opaque cursors of the paged lists: base64url of `<kind>:<key>`; anything else is not a cursor. */
export function encodeCursor(kind: string, key: string): string {
  const bytes = new TextEncoder().encode(`${kind}:${key}`);
  return btoa(String.fromCharCode(...bytes)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
}

/** The key a cursor of `kind` carries, or null when the text is not such a cursor. */
export function decodeCursor(kind: string, cursor: string): string | null {
  try {
    const bin = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
    const s = new TextDecoder("utf-8", { fatal: true }).decode(
      Uint8Array.from(bin, (ch) => ch.charCodeAt(0)),
    );
    return s.startsWith(`${kind}:`) && s.length > kind.length + 1 ? s.slice(kind.length + 1) : null;
  } catch {
    return null;
  }
}
