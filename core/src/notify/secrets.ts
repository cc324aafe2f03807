/**
 * Webhook signing secrets at rest (issue 51): encrypted like device credentials (devices/credentials.ts),
 * AES-256-GCM with the service's credential key (`DUT_CRED_ENC_KEY`), the row's subscription id as associated
 * data (prefixed, so a ciphertext copied to a device row or another subscription does not decrypt), and
 * re-encrypted with the current key at start-up after a key rotation (docs/security.md). A secret is shown
 * once, in the answer that creates or rotates it, and is never logged. A row written before secrets were
 * encrypted (a plain `whsec_…` value) still signs and is encrypted at the next start.
 */
import type { Kysely } from "kysely";
import type { Database } from "../db/schema.ts";
import { logger } from "../util/log.ts";

/**
 * The device credentials' cipher (devices/credentials.ts with the service's key ring), handed in by the
 * runtime (runtime/services.ts `secretCipher`): notify sits below devices.
 */
export interface SecretCipher {
  /** Id of the key new ciphertexts are made with. */
  currentKeyId: string;
  /** AES-256-GCM with the current key, `aad` as associated data. */
  encrypt(aad: string, plaintext: string): Promise<string>;
  /** With whichever configured key made `stored`; rejects otherwise (the error names no secret). */
  decrypt(aad: string, stored: string): Promise<string>;
  /** The key id a ciphertext names. */
  keyIdOf(stored: string): string | null;
}

const aad = (subscriptionId: string) => `webhook:${subscriptionId}`;

/** Whether a stored value is a plain secret of a row written before encryption. */
const isPlain = (stored: string) => stored.startsWith("whsec_");

/** The stored form of a subscription's signing secret. */
export function sealWebhookSecret(
  keys: SecretCipher,
  subscriptionId: string,
  secret: string,
): Promise<string> {
  return keys.encrypt(aad(subscriptionId), secret);
}

/** The signing secret of a stored value (encrypted, or plain for a row written before encryption). */
export function openWebhookSecret(
  keys: SecretCipher,
  subscriptionId: string,
  stored: string,
): Promise<string> {
  return isPlain(stored) ? Promise.resolve(stored) : keys.decrypt(aad(subscriptionId), stored);
}

/**
 * Encrypt with the current key every secret (current and previous) of every subscription that is plain or
 * was encrypted with another key. A row changed since it was read (a rotation) is left to that change.
 */
export async function reencryptWebhookSecrets(
  db: Kysely<Database>,
  keys: SecretCipher,
): Promise<{ rotated: number; undecryptable: number }> {
  const log = logger("keys");
  const rows = await db.selectFrom("webhook_subscriptions").select([
    "id",
    "name",
    "secret",
    "previous_secret",
  ])
    .execute();
  let rotated = 0, undecryptable = 0;
  const stale = (s: string | null) => s !== null && (isPlain(s) || keys.keyIdOf(s) !== keys.currentKeyId);
  for (const r of rows) {
    if (!stale(r.secret) && !stale(r.previous_secret)) continue;
    try {
      const next = await sealWebhookSecret(keys, r.id, await openWebhookSecret(keys, r.id, r.secret));
      const prev = r.previous_secret === null
        ? null
        : await sealWebhookSecret(keys, r.id, await openWebhookSecret(keys, r.id, r.previous_secret));
      let q = db.updateTable("webhook_subscriptions").set({ secret: next, previous_secret: prev })
        .where("id", "=", r.id).where("secret", "=", r.secret);
      q = r.previous_secret === null
        ? q.where("previous_secret", "is", null)
        : q.where("previous_secret", "=", r.previous_secret);
      if (Number((await q.executeTakeFirst()).numUpdatedRows) === 1) rotated++;
    } catch (e) {
      undecryptable++;
      log.error("Cannot re-encrypt the signing secret of webhook {name}: {error}", {
        name: r.name,
        error: (e as Error).message,
      });
    }
  }
  if (rotated || undecryptable) {
    log.info("Webhook secrets: {rotated} re-encrypted, {bad} undecryptable", { rotated, bad: undecryptable });
  }
  return { rotated, undecryptable };
}
