/**
 * `deno task rotate-signing-key`: start signing reports with a new Ed25519 key. Old keys stay in
 * `GET /api/report-keys` (with `validUntil` set), so reports signed before keep verifying; their
 * envelopes are not re-signed.
 *
 * - Embedded mode (no DATABASE_URL, no DUT_REPORT_SIGNING_KEY): with the server stopped, replaces
 *   `reportSigningKey` in `<DUT_DATA_DIR>/secrets.json` and registers the new public key at once.
 * - Otherwise: prints a new key (base64 PKCS#8 DER). Set it as DUT_REPORT_SIGNING_KEY on every instance
 *   and restart them; the first start registers it and closes the previous key's validity period.
 *
 * Exit codes: 0 done; 2 the data directory is in use or the configuration is invalid.
 * @module
 */
import { bootstrap, exitOnStartupError } from "@dutlab/core/runtime";
import { lockDataDir } from "../core/src/runtime/datadir.ts";
import { parseEnv } from "../core/src/runtime/config.ts";
import { generateSigningKey, ReportSigningKey } from "../core/src/report/sign.ts";
import { modules } from "../modules.gen.ts";

const env = (() => {
  try {
    return parseEnv(Deno.env.toObject());
  } catch (e) {
    return exitOnStartupError(e);
  }
})();
const fresh = await generateSigningKey();
const keyId = (await ReportSigningKey.fromText(fresh)).keyId;

if (env.DATABASE_URL || env.DUT_REPORT_SIGNING_KEY) {
  console.log(`New report signing key ${keyId} (Ed25519, base64 PKCS#8 DER):\n${fresh}`);
  console.log(
    "Set it as DUT_REPORT_SIGNING_KEY on every instance and restart them: the first start registers it " +
      "(GET /api/report-keys) and ends the previous key's validity; old reports keep their signatures.",
  );
  Deno.exit(0);
}

const dir = env.DUT_DATA_DIR;
const lock = await lockDataDir(dir).catch(exitOnStartupError);
try {
  const path = `${dir}/secrets.json`;
  let stored: Record<string, unknown> = {};
  try {
    stored = JSON.parse(await Deno.readTextFile(path));
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  stored.reportSigningKey = fresh;
  await Deno.writeTextFile(path, JSON.stringify(stored, null, 2) + "\n", { mode: 0o600 });
  await Deno.chmod(path, 0o600);
} finally {
  lock.release();
}
const rt = await bootstrap(modules).catch(exitOnStartupError);
const keys = await rt.services.signatures.keys();
await rt.close();
console.log(`Reports are now signed with key ${keyId}; ${keys.length} key(s) listed by GET /api/report-keys`);
