import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { sha256Hex } from "../src/util/hash.ts";

x509.cryptoProvider.set(crypto);

const ALG = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;

/** A certificate with its private key, as PEM, plus the SHA-256 of the certificate's DER. */
export interface CertificateBundle {
  /** The certificate, PEM. */
  certPem: string;
  /** The private key, PKCS#8 PEM. */
  keyPem: string;
  /** SHA-256 (hex) of the certificate's DER, the pin a device record takes. */
  sha256: string;
  /** The key pair, for issuing certificates when this is a CA. */
  keys: CryptoKeyPair;
  /** The certificate's subject (distinguished name): the issuer of the certificates a CA bundle signs. */
  subject: string;
}

function serial(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0")).join(
    "",
  )
    .replace(/^[89a-f]/, "1");
}

function sanFor(hosts: string[]) {
  return new x509.SubjectAlternativeNameExtension(
    hosts.map((h): x509.JsonGeneralName =>
      /^[\d.]+$/.test(h) || h.includes(":") ? { type: "ip", value: h } : { type: "dns", value: h }
    ),
  );
}

async function bundle(cert: x509.X509Certificate, keys: CryptoKeyPair): Promise<CertificateBundle> {
  const pkcs8 = await crypto.subtle.exportKey("pkcs8", keys.privateKey);
  return {
    certPem: cert.toString("pem"),
    keyPem: x509.PemConverter.encode(pkcs8, "PRIVATE KEY"),
    sha256: await sha256Hex(new Uint8Array(cert.rawData)),
    keys,
    subject: cert.subject,
  };
}

/** A fresh self-signed leaf certificate (ECDSA P-256) for the given host names and IPs. */
async function selfSignedCertificate(
  opts: { commonName?: string; hosts?: string[] } = {},
): Promise<CertificateBundle> {
  const keys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${opts.commonName ?? "dutlab-simulator"}`,
    notBefore: new Date(Date.now() - 86_400_000),
    notAfter: new Date(Date.now() + 365 * 86_400_000),
    signingAlgorithm: ALG,
    keys,
    extensions: [sanFor(opts.hosts ?? ["localhost", "127.0.0.1"])],
  });
  return bundle(cert, keys);
}

/** A fresh certificate authority, to test `strict` mode with a trusted chain. */
async function certificateAuthority(commonName = "dutlab test CA"): Promise<CertificateBundle> {
  const keys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${commonName}`,
    notBefore: new Date(Date.now() - 86_400_000),
    notAfter: new Date(Date.now() + 365 * 86_400_000),
    signingAlgorithm: ALG,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });
  return bundle(cert, keys);
}

/** A leaf certificate for `hosts`, issued by `ca`. */
async function issueCertificate(ca: CertificateBundle, hosts: string[]): Promise<CertificateBundle> {
  const keys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=${hosts[0]}`,
    issuer: ca.subject,
    notBefore: new Date(Date.now() - 86_400_000),
    notAfter: new Date(Date.now() + 365 * 86_400_000),
    signingAlgorithm: ALG,
    publicKey: keys.publicKey,
    signingKey: ca.keys.privateKey,
    extensions: [
      sanFor(hosts),
      new x509.BasicConstraintsExtension(false),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
    ],
  });
  return bundle(cert, keys);
}

/** A bundle from stored PEM text (a certificate and its PKCS#8 ECDSA P-256 key), e.g. kept across restarts. */
async function certificateFromPem(certPem: string, keyPem: string): Promise<CertificateBundle> {
  const cert = new x509.X509Certificate(certPem);
  const privateKey = await crypto.subtle.importKey(
    "pkcs8",
    x509.PemConverter.decodeFirst(keyPem),
    ALG,
    true,
    ["sign"],
  );
  const publicKey = await cert.publicKey.export(ALG, ["verify"]);
  return {
    certPem,
    keyPem,
    sha256: await sha256Hex(new Uint8Array(cert.rawData)),
    keys: { privateKey, publicKey },
    subject: cert.subject,
  };
}

/**
 * The kit's certificates (ECDSA P-256, valid from a day ago for a year), as {@link CertificateBundle}s: a
 * simulator serves a fresh self-signed one unless given one, and `Simulator.rotateCertificate` takes any.
 *
 * @example
 * ```ts
 * import { certificates } from "@dutlab/core/testing";
 * const ca = await certificates.authority();
 * const leaf = await certificates.issue(ca, ["localhost", "127.0.0.1"]); // for `strict` mode over `ca`
 * const again = await certificates.fromPem(leaf.certPem, leaf.keyPem); // same certificate, same pin
 * console.log(again.sha256 === leaf.sha256); // true
 * ```
 */
export const certificates: {
  /** A fresh self-signed leaf certificate for the given host names and IPs (default `localhost`, `127.0.0.1`). */
  selfSigned(opts?: { commonName?: string; hosts?: string[] }): Promise<CertificateBundle>;
  /** A fresh certificate authority (default common name `dutlab test CA`), to test `strict` mode with a trusted chain. */
  authority(commonName?: string): Promise<CertificateBundle>;
  /** A leaf certificate for `hosts` (the first is its common name), issued by `ca`. */
  issue(ca: CertificateBundle, hosts: string[]): Promise<CertificateBundle>;
  /** A bundle from stored PEM text (a certificate and its PKCS#8 ECDSA P-256 key), e.g. kept across restarts. */
  fromPem(certPem: string, keyPem: string): Promise<CertificateBundle>;
} = {
  selfSigned: selfSignedCertificate,
  authority: certificateAuthority,
  issue: issueCertificate,
  fromPem: certificateFromPem,
};
