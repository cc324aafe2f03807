import { StartupError } from "../errors.ts";
import { generateSigningKey } from "../report/sign.ts";

export { lockDataDir, parseLock, processStart } from "./datadir_lock.ts";

/**
 * Embedded mode: read secrets from `<dir>/secrets.json` (mode 0600), generating strong values for the
 * ones the environment does not give (admin token, credential key, report signing key, and for `serve` a
 * self-signed PDF signing certificate naming the lab, with its key). Returns the file path when it was written.
 */
export async function loadOrCreateSecrets(
  dir: string,
  given: { ADMIN_TOKEN?: string; DUT_CRED_ENC_KEY?: string; DUT_REPORT_SIGNING_KEY?: string },
  /** `serve` (signs PDFs), when the environment gives no PDF certificate: the lab's name for a new one. */
  pdfCertificateFor?: { labName: string },
): Promise<
  {
    adminToken: string;
    credEncKey: string;
    reportSigningKey: string;
    /** The stored (or just generated) PDF signing certificate and key, PEM; null unless asked for. */
    pdfSigning: { certificate: string; privateKey: string } | null;
    generatedAdminToken: boolean;
    /** A new PDF signing certificate was generated (first start of `serve`). */
    generatedPdfCertificate: boolean;
    path: string;
  }
> {
  const path = `${dir}/secrets.json`;
  let stored: {
    adminToken?: string;
    credEncKey?: string;
    reportSigningKey?: string;
    pdfSigningCertificate?: string;
    pdfSigningKey?: string;
  } = {};
  try {
    stored = JSON.parse(await Deno.readTextFile(path));
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) {
      throw new StartupError("BAD_SECRETS_FILE", `Cannot read ${path}: ${(e as Error).name}`);
    }
  }
  const hex = (n: number) =>
    Array.from(crypto.getRandomValues(new Uint8Array(n)), (b) => b.toString(16).padStart(2, "0")).join("");
  let changed = false;
  let generatedAdminToken = false;
  if (!given.ADMIN_TOKEN && !stored.adminToken) {
    stored.adminToken = hex(32);
    changed = generatedAdminToken = true;
  }
  if (!given.DUT_CRED_ENC_KEY && !stored.credEncKey) {
    stored.credEncKey = hex(32);
    changed = true;
  }
  if (!given.DUT_REPORT_SIGNING_KEY && !stored.reportSigningKey) {
    stored.reportSigningKey = await generateSigningKey();
    changed = true;
  }
  let generatedPdfCertificate = false;
  if (pdfCertificateFor && !(stored.pdfSigningCertificate && stored.pdfSigningKey)) {
    const { generatePdfSigningMaterial } = await import("../report/pdf_sign.ts");
    const m = await generatePdfSigningMaterial(pdfCertificateFor.labName);
    stored.pdfSigningCertificate = m.certificate;
    stored.pdfSigningKey = m.privateKey;
    changed = generatedPdfCertificate = true;
  }
  if (changed) {
    await Deno.writeTextFile(path, JSON.stringify(stored, null, 2) + "\n", { mode: 0o600 });
    await Deno.chmod(path, 0o600);
  }
  return {
    adminToken: given.ADMIN_TOKEN ?? stored.adminToken!,
    credEncKey: given.DUT_CRED_ENC_KEY ?? stored.credEncKey!,
    reportSigningKey: given.DUT_REPORT_SIGNING_KEY ?? stored.reportSigningKey!,
    pdfSigning: pdfCertificateFor
      ? { certificate: stored.pdfSigningCertificate!, privateKey: stored.pdfSigningKey! }
      : null,
    generatedAdminToken,
    generatedPdfCertificate,
    path,
  };
}
