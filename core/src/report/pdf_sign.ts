/**
 * PDF signatures (PAdES baseline B-B, ETSI EN 319 142-1): `report.pdf` carries a CMS detached signature
 * (SubFilter `ETSI.CAdES.detached`, SHA-256) over the whole file, attachments included, made with the lab's
 * X.509 signing certificate (ECDSA P-256 or RSA of at least 3072 bits: PDF readers do not accept Ed25519).
 *
 * - The signature field and its placeholder are written by `@signpdf/placeholder-pdf-lib` into the pdf-lib
 *   document that already holds the attachments; `@signpdf/signpdf` computes the ByteRange (everything but
 *   the `/Contents` hex string) and places the CMS.
 * - The CMS (RFC 5652 SignedData, built with pkijs) has the signed attributes PAdES B-B asks for:
 *   content-type, message-digest (SHA-256 of the ByteRange bytes) and ESS signing-certificate-v2 (RFC 5035:
 *   the SHA-256 of the signing certificate and its issuer and serial), and no signing-time attribute (the
 *   time is the signature dictionary's `/M`). It carries the certificate (and any chain given with it).
 * - The `/Contents` placeholder is the CMS length measured once at start plus 8 bytes (an ECDSA signature's
 *   DER length varies by a byte or two with the signed bytes); the rest is zero padding, which poppler
 *   checks too (a changed padding byte is "not total document signed").
 *
 * The certificate and key are configuration of `serve` (docs/configuration.md); embedded mode generates a
 * self-signed lab certificate on first start. Every certificate used is recorded (`pdf_signing_certificates`)
 * and listed by `GET /api/report-keys`, so a PDF signed before a rotation names a certificate still listed.
 * @module
 */
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import * as asn1js from "asn1js";
import * as pkijs from "pkijs";
import type { PdfCertificateInfo, PdfSigningMaterial } from "./pdf_certificates.ts";
import { sha256Hex } from "../util/hash.ts";
import { pemBlocks, toPem } from "../util/pem.ts";

x509.cryptoProvider.set(crypto);
pkijs.setEngine("webcrypto", new pkijs.CryptoEngine({ name: "webcrypto", crypto }));

/** SubFilter of a PAdES signature (CAdES detached CMS). */
export const PADES_SUBFILTER = "ETSI.CAdES.detached";

const OID = {
  data: "1.2.840.113549.1.7.1",
  signedData: "1.2.840.113549.1.7.2",
  contentType: "1.2.840.113549.1.9.3",
  messageDigest: "1.2.840.113549.1.9.4",
  signingCertificateV2: "1.2.840.113549.1.9.16.2.47",
  keyBag: "1.2.840.113549.1.12.10.1.1",
  shroudedKeyBag: "1.2.840.113549.1.12.10.1.2",
  certBag: "1.2.840.113549.1.12.10.1.3",
} as const;

/** Why a configured certificate or key cannot sign PDFs (a start-up error names it). */
export class PdfSigningConfigError extends Error {}

function keyAlgorithm(
  cert: x509.X509Certificate,
): { alg: RsaHashedImportParams | EcKeyImportParams; name: string } {
  const a = cert.publicKey.algorithm as { name: string; namedCurve?: string; modulusLength?: number };
  if (a.name === "ECDSA" && a.namedCurve === "P-256") {
    return { alg: { name: "ECDSA", namedCurve: "P-256" }, name: "ECDSA P-256" };
  }
  if (a.name === "RSASSA-PKCS1-v1_5" || a.name === "RSA-PSS" || a.name === "RSA-OAEP") {
    if ((a.modulusLength ?? 0) < 3072) {
      throw new PdfSigningConfigError(
        `the certificate's RSA key has ${a.modulusLength} bits; at least 3072 are needed`,
      );
    }
    return { alg: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, name: `RSA ${a.modulusLength}` };
  }
  throw new PdfSigningConfigError(
    `the certificate's key is ${a.name}${
      a.namedCurve ? ` ${a.namedCurve}` : ""
    }; PDF signatures need ECDSA P-256 or RSA (3072 bits or more)`,
  );
}

/** Certificates (leaf first) and the PKCS#8 private key of a PKCS#12 file. */
async function readPkcs12(
  bytes: Uint8Array<ArrayBuffer>,
  password: string,
): Promise<{ certs: Uint8Array[]; pkcs8: Uint8Array }> {
  const pw = new TextEncoder().encode(password).buffer as ArrayBuffer;
  let pfx: pkijs.PFX;
  try {
    pfx = pkijs.PFX.fromBER(bytes);
  } catch {
    throw new PdfSigningConfigError("DUT_PDF_SIGNING_P12 is not a PKCS#12 file (base64 of the .p12 bytes)");
  }
  try {
    await pfx.parseInternalValues({ password: pw, checkIntegrity: true });
  } catch (e) {
    throw new PdfSigningConfigError(
      `cannot open the PKCS#12 file (${
        (e as Error).message
      }): wrong DUT_PDF_SIGNING_P12_PASSWORD, or a legacy ` +
        `cipher (re-export it with OpenSSL 3 defaults: openssl pkcs12 -export, AES-256 and PBKDF2)`,
    );
  }
  const safe = pfx.parsedValue?.authenticatedSafe;
  if (!safe) throw new PdfSigningConfigError("the PKCS#12 file holds no authenticated safe");
  try {
    await safe.parseInternalValues({ safeContents: safe.safeContents.map(() => ({ password: pw })) });
  } catch (e) {
    throw new PdfSigningConfigError(`cannot decrypt the PKCS#12 contents (${(e as Error).message})`);
  }
  const certs: Uint8Array[] = [];
  let pkcs8: Uint8Array | null = null;
  for (const sc of safe.parsedValue?.safeContents ?? []) {
    for (const bag of sc.value.safeBags) {
      if (bag.bagId === OID.shroudedKeyBag) {
        const shrouded = bag.bagValue as pkijs.PKCS8ShroudedKeyBag;
        // Declared protected in pkijs' types, but it is the documented way to decrypt the bag.
        await (shrouded as unknown as { parseInternalValues(p: { password: ArrayBuffer }): Promise<void> })
          .parseInternalValues({ password: pw });
        pkcs8 = new Uint8Array(shrouded.parsedValue!.toSchema().toBER(false));
      } else if (bag.bagId === OID.keyBag) {
        pkcs8 = new Uint8Array((bag.bagValue as pkijs.PrivateKeyInfo).toSchema().toBER(false));
      } else if (bag.bagId === OID.certBag) {
        const cert = (bag.bagValue as pkijs.CertBag).parsedValue;
        if (cert instanceof pkijs.Certificate) certs.push(new Uint8Array(cert.toSchema().toBER(false)));
      }
    }
  }
  if (!pkcs8) throw new PdfSigningConfigError("the PKCS#12 file holds no private key");
  if (!certs.length) throw new PdfSigningConfigError("the PKCS#12 file holds no certificate");
  return { certs, pkcs8 };
}

/**
 * The lab's PDF signing certificate and key: signs the ByteRange bytes of a PDF as a CAdES detached CMS.
 *
 * @example
 * ```ts ignore
 * const signer = await PdfSigner.load(await generatePdfSigningMaterial("Example lab"));
 * console.log(signer.info.fingerprintSha256);
 * ```
 */
export class PdfSigner {
  /** The room the CMS has in the PDF (bytes; the placeholder is twice as many hex digits). */
  cmsLength = 0;

  private constructor(
    private key: CryptoKey,
    private chain: pkijs.Certificate[],
    readonly info: PdfCertificateInfo,
    private leafDer: Uint8Array<ArrayBuffer>,
  ) {}

  /** Load and check a certificate and key: ECDSA P-256 or RSA ≥ 3072, the key matching the certificate. */
  static async load(material: PdfSigningMaterial): Promise<PdfSigner> {
    let certDers: Uint8Array[];
    let keyDer: Uint8Array;
    if (material.kind === "pkcs12") {
      const p = await readPkcs12(material.pkcs12, material.password);
      certDers = p.certs;
      keyDer = p.pkcs8;
    } else {
      const certs = pemBlocks(material.certificate, "CERTIFICATE");
      const keys = pemBlocks(material.privateKey, "PRIVATE KEY");
      if (!certs?.length) throw new PdfSigningConfigError("DUT_PDF_SIGNING_CERT holds no certificate (PEM)");
      if (keys?.length !== 1) {
        throw new PdfSigningConfigError(
          "DUT_PDF_SIGNING_KEY must be one unencrypted PKCS#8 private key (PEM -----BEGIN PRIVATE KEY-----; " +
            "convert with: openssl pkcs8 -topk8 -nocrypt -in key.pem)",
        );
      }
      certDers = certs;
      keyDer = keys[0]!;
    }
    let parsed: x509.X509Certificate[];
    try {
      parsed = certDers.map((d) => new x509.X509Certificate(d as Uint8Array<ArrayBuffer>));
    } catch (e) {
      throw new PdfSigningConfigError(`the certificate cannot be read (${(e as Error).message})`);
    }
    // The leaf first: the certificate whose key is the private key; order the rest as given.
    const { alg, name } = keyAlgorithm(parsed[0]!);
    let key: CryptoKey;
    try {
      key = await crypto.subtle.importKey("pkcs8", keyDer as Uint8Array<ArrayBuffer>, alg, false, ["sign"]);
    } catch {
      throw new PdfSigningConfigError(`the private key is not a ${name} key of the certificate`);
    }
    const signAlg = alg.name === "ECDSA" ? { name: "ECDSA", hash: "SHA-256" } : { name: "RSASSA-PKCS1-v1_5" };
    const probe = new TextEncoder().encode("dutlab pdf signing key check");
    const pub = await parsed[0]!.publicKey.export(alg, ["verify"]);
    if (!(await crypto.subtle.verify(signAlg, pub, await crypto.subtle.sign(signAlg, key, probe), probe))) {
      throw new PdfSigningConfigError("the private key does not belong to the certificate");
    }
    const leaf = parsed[0]!;
    const leafDer = new Uint8Array(leaf.rawData);
    const info: PdfCertificateInfo = {
      fingerprintSha256: await sha256Hex(leafDer),
      subject: leaf.subject,
      issuer: leaf.issuer,
      serialNumber: leaf.serialNumber.toLowerCase(),
      algorithm: name,
      notBefore: leaf.notBefore.toISOString(),
      notAfter: leaf.notAfter.toISOString(),
      certificatePem: toPem("CERTIFICATE", leafDer),
    };
    const chain = certDers.map((d) => pkijs.Certificate.fromBER(d as Uint8Array<ArrayBuffer>));
    const signer = new PdfSigner(key, chain, info, leafDer);
    // The room the CMS needs: one probe's length plus what an ECDSA signature's DER may add.
    signer.cmsLength = (await signer.#cms(probe)).length + 8;
    return signer;
  }

  /** The CMS SignedData (DER) of a CAdES detached signature over `content`. */
  async #cms(content: Uint8Array): Promise<Uint8Array> {
    const leaf = this.chain[0]!;
    const digest = await crypto.subtle.digest("SHA-256", content as Uint8Array<ArrayBuffer>);
    const certHash = await crypto.subtle.digest("SHA-256", this.leafDer);
    // SigningCertificateV2 ::= SEQUENCE { certs SEQUENCE OF ESSCertIDv2 } (RFC 5035); ESSCertIDv2 ::=
    // SEQUENCE { hashAlgorithm DEFAULT sha256 (omitted), certHash, issuerSerial }.
    const issuerSerial = new pkijs.IssuerSerial({
      issuer: new pkijs.GeneralNames({ names: [new pkijs.GeneralName({ type: 4, value: leaf.issuer })] }),
      serialNumber: leaf.serialNumber,
    });
    const signingCertificateV2 = new asn1js.Sequence({
      value: [
        new asn1js.Sequence({
          value: [
            new asn1js.Sequence({
              value: [new asn1js.OctetString({ valueHex: certHash }), issuerSerial.toSchema()],
            }),
          ],
        }),
      ],
    });
    const signedAttrs = new pkijs.SignedAndUnsignedAttributes({
      type: 0,
      attributes: [
        new pkijs.Attribute({
          type: OID.contentType,
          values: [new asn1js.ObjectIdentifier({ value: OID.data })],
        }),
        new pkijs.Attribute({
          type: OID.messageDigest,
          values: [new asn1js.OctetString({ valueHex: digest })],
        }),
        new pkijs.Attribute({ type: OID.signingCertificateV2, values: [signingCertificateV2] }),
      ],
    });
    const signed = new pkijs.SignedData({
      version: 1,
      encapContentInfo: new pkijs.EncapsulatedContentInfo({ eContentType: OID.data }),
      signerInfos: [
        new pkijs.SignerInfo({
          version: 1,
          sid: new pkijs.IssuerAndSerialNumber({ issuer: leaf.issuer, serialNumber: leaf.serialNumber }),
          signedAttrs,
        }),
      ],
      certificates: this.chain,
    });
    await signed.sign(this.key, 0, "SHA-256");
    const info = new pkijs.ContentInfo({ contentType: OID.signedData, content: signed.toSchema(true) });
    return new Uint8Array(info.toSchema().toBER(false));
  }

  /** The CMS over `content`: at most {@link cmsLength} bytes. */
  async sign(content: Uint8Array): Promise<Uint8Array> {
    const cms = await this.#cms(content);
    if (cms.length > this.cmsLength) {
      throw new Error(`the CMS has ${cms.length} bytes, over ${this.cmsLength}`);
    }
    return cms;
  }
}

/** Options of {@link signPdfDocument}: what the signature dictionary says. */
export interface PdfSignatureFields {
  /** `/Reason`. */
  reason: string;
  /** `/Name`: the signer (the lab). */
  name: string;
  /** `/Location`. */
  location: string;
  /** `/ContactInfo`: where the certificate is listed. */
  contactInfo: string;
}

/**
 * Add a signature field to a pdf-lib document, save it and sign the saved bytes (PAdES B-B over the whole
 * file). Call last: any later change to the bytes breaks the signature.
 */
export async function signPdfDocument(
  // deno-lint-ignore no-explicit-any
  doc: any,
  signer: PdfSigner,
  fields: PdfSignatureFields,
): Promise<Uint8Array> {
  const [{ pdflibAddPlaceholder }, utils, { SignPdf }, { Buffer }] = await Promise.all([
    import("@signpdf/placeholder-pdf-lib"),
    import("@signpdf/utils"),
    import("@signpdf/signpdf"),
    import("node:buffer"),
  ]);
  pdflibAddPlaceholder({
    pdfDoc: doc,
    ...fields,
    signingTime: new Date(),
    signatureLength: 2 * signer.cmsLength, // hex digits
    subFilter: utils.SUBFILTER_ETSI_CADES_DETACHED,
  });
  const saved: Uint8Array = await doc.save({ addDefaultPage: false });
  class CadesSigner extends utils.Signer {
    override async sign(pdf: Uint8Array): Promise<Buffer> {
      return Buffer.from(await signer.sign(pdf));
    }
  }
  const signed = await new SignPdf().sign(Buffer.from(saved), new CadesSigner());
  return new Uint8Array(signed);
}

/**
 * A new self-signed ECDSA P-256 certificate naming the lab (`CN=<lab> report signing, O=<lab>`), valid five
 * years, key usage digitalSignature + nonRepudiation; the certificate and its PKCS#8 key as PEM.
 */
export async function generatePdfSigningMaterial(
  labName: string,
): Promise<{ certificate: string; privateKey: string }> {
  const alg = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
  const keys = await crypto.subtle.generateKey(alg, true, ["sign", "verify"]) as CryptoKeyPair;
  const serial = Array.from(
    crypto.getRandomValues(new Uint8Array(16)),
    (b) => b.toString(16).padStart(2, "0"),
  );
  serial[0] = (parseInt(serial[0]!, 16) & 0x7f).toString(16).padStart(2, "0"); // a positive INTEGER
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial.join(""),
    name: [{ CN: [`${labName} report signing`] }, { O: [labName] }],
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 5 * 365 * 86_400_000),
    signingAlgorithm: alg,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.nonRepudiation,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  return {
    certificate: toPem("CERTIFICATE", new Uint8Array(cert.rawData)),
    privateKey: toPem("PRIVATE KEY", pkcs8),
  };
}
