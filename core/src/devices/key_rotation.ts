import type { Kysely } from "kysely";
import type { Database } from "../db/schema.ts";
import { decryptSecret, encryptSecret, keyIdOf, passwordFingerprint } from "./credentials.ts";
import type { KeyRing } from "./store.ts";
import { logger } from "../util/log.ts";

/**
 * Re-encrypt every stored credential not made with the current key (key rotation, docs/security.md "Credentials at rest and key rotation"),
 * and recompute its password fingerprint with the current key's fingerprint key (a fingerprint made with a
 * key no longer configured could not be checked any more).
 * Each row is rewritten only if it is unchanged since it was read, so a concurrent password change wins.
 * Returns counts; rows whose key is not configured are reported, not touched.
 */
export async function reencryptCredentials(
  db: Kysely<Database>,
  keys: KeyRing,
): Promise<{ rotated: number; current: number; undecryptable: number }> {
  const log = logger("keys");
  const rows = await db.selectFrom("devices").select(["id", "hostname", "password_enc", "password_fp"])
    .execute();
  let rotated = 0, current = 0, undecryptable = 0;
  for (const r of rows) {
    if (keyIdOf(r.password_enc) === keys.current.id && r.password_fp?.startsWith(`${keys.current.id}.`)) {
      current++;
      continue;
    }
    let plain: string;
    try {
      plain = await decryptSecret(keys.all, r.id, r.password_enc);
    } catch (e) {
      undecryptable++;
      log.error("Cannot re-encrypt the credential of {hostname}: {error}", {
        hostname: r.hostname,
        error: (e as Error).message,
      });
      continue;
    }
    const next = keyIdOf(r.password_enc) === keys.current.id
      ? r.password_enc
      : await encryptSecret(keys.current, r.id, plain);
    const fp = await passwordFingerprint(keys.current, r.id, plain);
    const res = await db.updateTable("devices").set({ password_enc: next, password_fp: fp })
      .where("id", "=", r.id).where("password_enc", "=", r.password_enc).executeTakeFirst();
    if (Number(res.numUpdatedRows) === 1) rotated++;
  }
  log.info(
    "Credential key rotation: {rotated} re-encrypted, {current} already current, {bad} undecryptable",
    {
      rotated,
      current,
      bad: undecryptable,
    },
  );
  return { rotated, current, undecryptable };
}
