import { sha256Hex } from "../util/hash.ts";
import { base64url, fromBase64url } from "../util/encoding.ts";

const fromHex = (h: string) => Uint8Array.from(h.match(/../g)!, (x) => parseInt(x, 16));

/** A credential key with its identifier (first 8 hex chars of SHA-256 of the key bytes). */
export interface CredentialKey {
  id: string;
  key: CryptoKey;
}

/** Import a 64-hex-character AES-256 key. */
export async function importCredentialKey(hex: string): Promise<CredentialKey> {
  const raw = fromHex(hex);
  const id = (await sha256Hex(raw)).slice(0, 8);
  const key = await crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]);
  return { id, key };
}

/**
 * Encrypt a device secret with AES-256-GCM: a fresh 96-bit nonce per call and the device id as
 * associated data, so a ciphertext copied to another device row does not decrypt.
 * Format: `v1.<keyId>.<nonce>.<ciphertext+tag>` (base64url).
 */
export async function encryptSecret(k: CredentialKey, deviceId: string, plaintext: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ct = new Uint8Array(
    await crypto.subtle.encrypt(
      { name: "AES-GCM", iv, additionalData: new TextEncoder().encode(deviceId) },
      k.key,
      new TextEncoder().encode(plaintext),
    ),
  );
  return `v1.${k.id}.${base64url(iv)}.${base64url(ct)}`;
}

/** The parts of a stored ciphertext `v1.<key id>.<iv>.<ciphertext>`, or null when it has another shape. */
function partsOf(stored: string): { keyId: string; iv: string; ciphertext: string } | null {
  const [version, keyId, iv, ciphertext, ...rest] = stored.split(".");
  if (version !== "v1" || keyId === undefined || iv === undefined || ciphertext === undefined) return null;
  return rest.length ? null : { keyId, iv, ciphertext };
}

/** The key id a stored ciphertext was made with. */
export function keyIdOf(stored: string): string | null {
  return partsOf(stored)?.keyId ?? null;
}

export class CredentialError extends Error {
  override name = "CredentialError";
}

/** Decrypt a stored device secret with whichever of `keys` made it. Errors never include secrets. */
export async function decryptSecret(
  keys: CredentialKey[],
  deviceId: string,
  stored: string,
): Promise<string> {
  const p = partsOf(stored);
  if (!p) throw new CredentialError("Stored credential has an unknown format");
  const k = keys.find((x) => x.id === p.keyId);
  if (!k) {
    throw new CredentialError(`Stored credential was encrypted with key ${p.keyId}, which is not configured`);
  }
  try {
    const pt = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: fromBase64url(p.iv), additionalData: new TextEncoder().encode(deviceId) },
      k.key,
      fromBase64url(p.ciphertext),
    );
    return new TextDecoder().decode(pt);
  } catch {
    throw new CredentialError(
      "Stored credential does not decrypt for this device (wrong key or moved ciphertext)",
    );
  }
}

/** Constant-time comparison of two strings (for bearer tokens). */
export function timingSafeEqual(a: string, b: string): boolean {
  const ea = new TextEncoder().encode(a);
  const eb = new TextEncoder().encode(b);
  let diff = ea.length ^ eb.length;
  for (let i = 0; i < Math.max(ea.length, eb.length); i++) diff |= (ea[i] ?? 0) ^ (eb[i] ?? 0);
  return diff === 0;
}
