/** PEM and base64 forms of DER objects (certificates, PKCS#8 keys) as configuration gives them. */
import { base64, fromBase64 } from "./encoding.ts";

/**
 * The DER blocks of a PEM text with the given label (e.g. `CERTIFICATE`), or of base64 text (of the DER, or
 * of the PEM file); `null` when it is neither.
 */
export function pemBlocks(text: string, label: string): Uint8Array<ArrayBuffer>[] | null {
  const re = new RegExp(`-----BEGIN ${label}-----([^-]+)-----END ${label}-----`, "g");
  const found = [...text.matchAll(re)];
  try {
    if (found.length) return found.map((m) => fromBase64(m[1]!.replace(/\s+/g, "")));
    if (/-----BEGIN /.test(text)) return null; // PEM of another kind
    const body = text.replace(/\s+/g, "");
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body)) return null;
    const der = fromBase64(body);
    const asText = new TextDecoder().decode(der.subarray(0, 11));
    if (asText === "-----BEGIN ") return pemBlocks(new TextDecoder().decode(der), label);
    return [der];
  } catch {
    return null;
  }
}

/** PEM text of DER bytes. */
export function toPem(label: string, der: Uint8Array): string {
  const lines = base64(der).match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}
