/**
 * The PDF signing certificates in the database and the forms the configuration gives them in (no crypto
 * here: `pdf_sign.ts` holds the signer and is loaded only by `serve`).
 * @module
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";

/** The openssl lines that make a certificate and key `serve` accepts (docs/configuration.md). */
export const MAKE_PDF_CERTIFICATE = `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -noenc ` +
  `-keyout pdf-key.pem -out pdf-cert.pem -days 1825 -subj "/CN=<lab> report signing/O=<lab>" ` +
  `-addext keyUsage=critical,digitalSignature,nonRepudiation; then DUT_PDF_SIGNING_CERT="$(cat pdf-cert.pem)" ` +
  `DUT_PDF_SIGNING_KEY="$(cat pdf-key.pem)" (or a CA-issued certificate; or DUT_PDF_SIGNING_P12 = base64 of a ` +
  `PKCS#12 file, e.g. openssl pkcs12 -export -inkey pdf-key.pem -in pdf-cert.pem | base64 -w0, with ` +
  `DUT_PDF_SIGNING_P12_PASSWORD)`;

/** The certificate and private key that sign PDFs, as given in configuration or generated. */
export type PdfSigningMaterial =
  | { kind: "pem"; certificate: string; privateKey: string }
  | { kind: "pkcs12"; pkcs12: Uint8Array<ArrayBuffer>; password: string };

/** A certificate as `GET /api/report-keys` lists it. */
export interface PdfCertificateInfo {
  /** Lowercase hex SHA-256 of the certificate's DER (what PDF readers show as its SHA-256 fingerprint). */
  fingerprintSha256: string;
  subject: string;
  issuer: string;
  serialNumber: string;
  /** `ECDSA P-256` or `RSA <bits>`. */
  algorithm: string;
  notBefore: string;
  notAfter: string;
  certificatePem: string;
}

/** A certificate as the key list shows it: with when the service started and stopped signing with it. */
export interface ListedCertificate extends PdfCertificateInfo {
  validFrom: string;
  validUntil: string | null;
  current: boolean;
}

/**
 * Every PDF signing certificate the service has used (append-only `pdf_signing_certificates`): `register()`
 * (at the start of `serve`) records the current one; a certificate seen for the first time closes the
 * period of the ones before it (rotation), which stay listed.
 */
export class PdfCertificates {
  constructor(private db: Kysely<Database>, readonly current: PdfCertificateInfo | null) {}

  /** Record the current certificate (idempotent); a new one ends the period of the older ones. */
  async register(): Promise<void> {
    const c = this.current;
    if (!c) return;
    await this.db.transaction().execute(async (tx) => {
      await sql`lock table pdf_signing_certificates in share row exclusive mode`.execute(tx);
      const inserted = await tx.insertInto("pdf_signing_certificates").values({
        fingerprint_sha256: c.fingerprintSha256,
        certificate_pem: c.certificatePem,
        subject: c.subject,
        issuer: c.issuer,
        serial_number: c.serialNumber,
        algorithm: c.algorithm,
        not_before: c.notBefore,
        not_after: c.notAfter,
      }).onConflict((oc) => oc.column("fingerprint_sha256").doNothing()).returning("fingerprint_sha256")
        .execute();
      if (inserted.length) {
        await tx.updateTable("pdf_signing_certificates").set({ valid_until: sql<Date>`now()` })
          .where("fingerprint_sha256", "!=", c.fingerprintSha256).where("valid_until", "is", null).execute();
      }
    });
  }

  /** Every certificate, oldest first. */
  async list(): Promise<ListedCertificate[]> {
    const rows = await this.db.selectFrom("pdf_signing_certificates").selectAll().orderBy("valid_from")
      .orderBy("fingerprint_sha256").execute();
    return rows.map((r) => ({
      fingerprintSha256: r.fingerprint_sha256,
      subject: r.subject,
      issuer: r.issuer,
      serialNumber: r.serial_number,
      algorithm: r.algorithm,
      notBefore: new Date(r.not_before).toISOString(),
      notAfter: new Date(r.not_after).toISOString(),
      certificatePem: r.certificate_pem,
      validFrom: new Date(r.valid_from).toISOString(),
      validUntil: r.valid_until ? new Date(r.valid_until).toISOString() : null,
      current: r.fingerprint_sha256 === this.current?.fingerprintSha256,
    }));
  }
}
