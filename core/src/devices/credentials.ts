import { createDecipheriv, createSecretKey, type KeyObject } from "node:crypto";
import { sha256Hex } from "../util/hash.ts";
import { base64url, fromBase64url } from "../util/encoding.ts";
import { concatBytes } from "../util/bytes.ts";

const fromHex = (h: string) => Uint8Array.from(h.match(/../g)!, (x) => parseInt(x, 16));

/** A credential key with its identifier (first 8 hex chars of SHA-256 of the key bytes). */
export interface CredentialKey {
  /** Key identifier: the first 8 hex chars of the SHA-256 of the key bytes. */
  id: string;
  /** The AES-GCM key encrypting device credentials. */
  key: CryptoKey;
  /**
   * The same key for node:crypto, which decrypts (every poll) synchronously in about 7 µs; `crypto.subtle`
   * costs Deno 60-80 µs of CPU per call, most of it handing the work to another thread and back
   * (BENCHMARKS.md section 2c).
   */
  secret: KeyObject;
  /** HMAC-SHA256 key of the password fingerprints, derived from the same key with HKDF. */
  fingerprintKey: CryptoKey;
}

/** HKDF `info` of the fingerprint key: a key derived for one purpose only. */
const FINGERPRINT_INFO = new TextEncoder().encode("dutlab password fingerprint v1");

/** Import a 64-hex-character AES-256 key (and derive its fingerprint key). */
export async function importCredentialKey(hex: string): Promise<CredentialKey> {
  const raw = fromHex(hex);
  const id = (await sha256Hex(raw)).slice(0, 8);
  const key = await crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]);
  const ikm = await crypto.subtle.importKey("raw", raw, "HKDF", false, ["deriveKey"]);
  const fingerprintKey = await crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(32), info: FINGERPRINT_INFO },
    ikm,
    { name: "HMAC", hash: "SHA-256", length: 256 },
    false,
    ["sign"],
  );
  return { id, key, secret: createSecretKey(raw), fingerprintKey };
}

/**
 * The keyed fingerprint of a device's password, `<key id>.<HMAC-SHA256 b64url>` over the device id and the
 * password: equal passwords of two devices have different fingerprints, and without the credential key a
 * fingerprint tells nothing about the password (docs/lab-as-code.md).
 */
export async function passwordFingerprint(
  k: CredentialKey,
  deviceId: string,
  password: string,
): Promise<string> {
  const mac = await crypto.subtle.sign(
    "HMAC",
    k.fingerprintKey,
    new TextEncoder().encode(`${deviceId}\0${password}`),
  );
  return `${k.id}.${base64url(new Uint8Array(mac))}`;
}

/**
 * Whether `password` is the one `stored` fingerprints, with whichever of `keys` made it (constant time).
 * False when there is no fingerprint or its key is not configured: the credential then shows as changed.
 */
export async function fingerprintMatches(
  keys: CredentialKey[],
  deviceId: string,
  password: string,
  stored: string | null,
): Promise<boolean> {
  if (!stored) return false;
  const k = keys.find((x) => x.id === stored.split(".")[0]);
  if (!k) return false;
  return timingSafeEqual(await passwordFingerprint(k, deviceId, password), stored);
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

/** Length of the AES-GCM authentication tag (crypto.subtle's default, 128 bits). */
const TAG_BYTES = 16;

export class CredentialError extends Error {
  override name = "CredentialError";
}

/** Decrypt a stored device secret with whichever of `keys` made it. Errors never include secrets. */
export function decryptSecret(keys: CredentialKey[], deviceId: string, stored: string): Promise<string> {
  // A promise (a failure is a rejection, as with crypto.subtle), though the work is synchronous.
  return new Promise((resolve) => resolve(decryptNow(keys, deviceId, stored)));
}

function decryptNow(keys: CredentialKey[], deviceId: string, stored: string): string {
  const p = partsOf(stored);
  if (!p) throw new CredentialError("Stored credential has an unknown format");
  const k = keys.find((x) => x.id === p.keyId);
  if (!k) {
    throw new CredentialError(`Stored credential was encrypted with key ${p.keyId}, which is not configured`);
  }
  try {
    // AES-256-GCM as `crypto.subtle` wrote it: the ciphertext followed by the 16-byte tag.
    const ct = fromBase64url(p.ciphertext);
    if (ct.length < TAG_BYTES) throw new Error("short");
    const d = createDecipheriv("aes-256-gcm", k.secret, fromBase64url(p.iv), { authTagLength: TAG_BYTES });
    d.setAAD(new TextEncoder().encode(deviceId));
    d.setAuthTag(ct.subarray(ct.length - TAG_BYTES));
    const head = d.update(ct.subarray(0, ct.length - TAG_BYTES));
    const tail = d.final(); // throws when the tag does not verify
    return new TextDecoder().decode(tail.length ? concatBytes([head, tail]) : head);
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
