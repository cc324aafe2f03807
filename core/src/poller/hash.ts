/**
 * What the poll store writes for a collected payload: its RFC 8785 canonical JSON, SHA-256, stable hash and
 * size. Kept apart from the store so that the hash workers (`hash_pool.ts`) load it without the database.
 *
 * @module
 */
import { canonicalJson, sha256Hex } from "../util/hash.ts";
import { stableSha256 } from "../snapshots/volatile.ts";

/** A collected snapshot with its canonical JSON text and hash. */
export interface HashedSnapshot {
  /** The endpoint label the snapshot was collected under. */
  label: string;
  /** The payload as collected. */
  payload: unknown;
  /** RFC 8785 canonical JSON of the payload. */
  text: string;
  /** SHA-256 (hex) of `text`. */
  sha256: string;
  /**
   * The hash without the label's volatile paths (`stableSha256`, core/src/snapshots/volatile.ts). Absent or
   * null: not computed, and the change history compares this snapshot in full.
   */
  stableSha256?: string | null;
  /** Length of `text` in UTF-8 bytes. */
  size: number;
  /** `text` in UTF-8, when the hasher kept it (the store encodes `text` itself otherwise). */
  bytes?: Uint8Array;
}

const ENCODER = new TextEncoder();

/**
 * A payload as the store writes it: RFC 8785 canonical JSON, its SHA-256, the hash without the `volatile`
 * paths of its label (null or omitted: not computed) and its size. Throws when the payload has no JSON form.
 */
export async function hashSnapshot(
  label: string,
  payload: unknown,
  volatile?: readonly string[] | null,
): Promise<HashedSnapshot> {
  const text = canonicalJson(payload);
  // Encoded once: hashed, measured and, when the payload is new, sent to the database as they are.
  const bytes = ENCODER.encode(text);
  const sha256 = await sha256Hex(bytes);
  return {
    label,
    payload,
    text,
    sha256,
    stableSha256: volatile ? await stableSha256({ payload, text, sha256 }, volatile) : null,
    size: bytes.length,
    bytes,
  };
}
