/**
 * `deno task rotate-key`: re-encrypt every device credential and webhook signing secret with DUT_CRED_ENC_KEY, decrypting the old
 * ones with DUT_CRED_ENC_KEY_PREVIOUS. Safe while other instances run (rows are swapped only if unchanged).
 * Exits 1 if any credential could not be decrypted with the configured keys.
 */
import { bootstrap, exitOnStartupError } from "@dutlab/core/runtime";
import { runtimeInternals } from "../core/ops.ts";
import { reencryptCredentials, reencryptWebhookSecrets, secretCipher } from "../core/ops.ts";
import { modules } from "../modules.gen.ts";

const rt = runtimeInternals(await bootstrap(modules).catch(exitOnStartupError));
const r = await reencryptCredentials(rt.db.kysely, rt.services.keys);
const w = await reencryptWebhookSecrets(rt.db.kysely, secretCipher(rt.services.keys));
await rt.close();
console.log(`re-encrypted ${r.rotated}, already current ${r.current}, undecryptable ${r.undecryptable}`);
console.log(`webhook secrets: re-encrypted ${w.rotated}, undecryptable ${w.undecryptable}`);
if (r.undecryptable || w.undecryptable) Deno.exit(1);
if (!Deno.env.get("DUT_CRED_ENC_KEY_PREVIOUS")) {
  console.log(
    "note: DUT_CRED_ENC_KEY_PREVIOUS is not set; only credentials already under the current key can be read",
  );
}
