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
 * `deno task rotate-signing-key --certificate` does the same for the X.509 certificate that signs report
 * PDFs (PAdES): old certificates stay listed (`certificates`, with `validUntil`), and a PDF signed before
 * carries its own certificate, so it keeps verifying.
 *
 * - Embedded mode (no DATABASE_URL, no DUT_PDF_SIGNING_*): with the server stopped, generates a new
 *   self-signed certificate naming the lab (DUT_LAB_NAME), replaces `pdfSigningCertificate` and
 *   `pdfSigningKey` in `<DUT_DATA_DIR>/secrets.json` and registers it at once.
 * - Otherwise: prints a new self-signed certificate and its key (PEM), and the openssl command for one of
 *   your own. Set them as DUT_PDF_SIGNING_CERT and DUT_PDF_SIGNING_KEY (or DUT_PDF_SIGNING_P12) on every
 *   `serve` instance and restart them; the first start registers it.
 *
 * Exit codes: 0 done; 2 the data directory is in use or the configuration is invalid.
 * @module
 */
import { bootstrap, exitOnStartupError } from "@dutlab/core/runtime";
import { runtimeInternals } from "../core/ops.ts";
import { lockDataDir } from "../core/ops.ts";
import { parseEnv } from "../core/ops.ts";
import { generateSigningKey, ReportSigningKey } from "../core/ops.ts";
import { generatePdfSigningMaterial, PdfSigner } from "../core/ops.ts";
import { MAKE_PDF_CERTIFICATE } from "../core/ops.ts";
import { modules } from "../modules.gen.ts";

const certificate = Deno.args.includes("--certificate");
const unknown = Deno.args.filter((a) => a !== "--certificate");
if (unknown.length) {
  console.error(`Usage: rotate_signing_key.ts [--certificate] (unknown argument "${unknown[0]}")`);
  Deno.exit(2);
}

const env = (() => {
  try {
    return parseEnv(Deno.env.toObject());
  } catch (e) {
    return exitOnStartupError(e);
  }
})();

/** Replace entries of `<DUT_DATA_DIR>/secrets.json` (0600) while holding the data directory's lock. */
async function updateSecrets(dir: string, entries: Record<string, string>): Promise<void> {
  const lock = await lockDataDir(dir).catch(exitOnStartupError);
  try {
    const path = `${dir}/secrets.json`;
    let stored: Record<string, unknown> = {};
    try {
      stored = JSON.parse(await Deno.readTextFile(path));
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    Object.assign(stored, entries);
    await Deno.writeTextFile(path, JSON.stringify(stored, null, 2) + "\n", { mode: 0o600 });
    await Deno.chmod(path, 0o600);
  } finally {
    lock.release();
  }
}

if (certificate) {
  const m = await generatePdfSigningMaterial(env.DUT_LAB_NAME);
  const info = (await PdfSigner.load({ kind: "pem", ...m })).info;
  if (env.DATABASE_URL || env.DUT_PDF_SIGNING_CERT || env.DUT_PDF_SIGNING_P12) {
    console.log(`New self-signed PDF signing certificate ${info.fingerprintSha256} (${info.subject}):`);
    console.log(m.certificate + m.privateKey);
    console.log(
      "Set them as DUT_PDF_SIGNING_CERT and DUT_PDF_SIGNING_KEY on every serve instance and restart them: the " +
        "first start registers the certificate (GET /api/report-keys, certificates) and ends the previous one's " +
        `period; old PDFs keep their signatures. A certificate of your own: ${MAKE_PDF_CERTIFICATE}`,
    );
    Deno.exit(0);
  }
  await updateSecrets(env.DUT_DATA_DIR, {
    pdfSigningCertificate: m.certificate,
    pdfSigningKey: m.privateKey,
  });
  const rt = runtimeInternals(
    await bootstrap(modules, Deno.env.toObject(), { serve: true }).catch(exitOnStartupError),
  );
  const certs = await rt.services.pdfCertificates.list();
  await rt.close();
  console.log(
    `Report PDFs are now signed with certificate ${info.fingerprintSha256}; ${certs.length} certificate(s) ` +
      "listed by GET /api/report-keys",
  );
  Deno.exit(0);
}

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

await updateSecrets(env.DUT_DATA_DIR, { reportSigningKey: fresh });
const rt = runtimeInternals(await bootstrap(modules).catch(exitOnStartupError));
const keys = await rt.services.signatures.keys();
await rt.close();
console.log(`Reports are now signed with key ${keyId}; ${keys.length} key(s) listed by GET /api/report-keys`);
