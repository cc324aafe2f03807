import assert from "node:assert/strict";
import { generatePdfSigningMaterial, PdfSigner, PdfSigningConfigError } from "./pdf_sign.ts";
import { sha256Hex } from "../util/hash.ts";

const dec = new TextDecoder();

/** OpenSSL makes the certificates and files (an outside tool, as an operator would). */
async function openssl(dir: string, ...args: string[]) {
  const out = await new Deno.Command("openssl", { args, cwd: dir, stdout: "piped", stderr: "piped" })
    .output();
  assert.equal(out.code, 0, dec.decode(out.stderr));
  return out.stdout;
}

async function withDir(fn: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "dutlab-pdfcert-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const req = (key: string[], subj: string) => [
  "req",
  "-x509",
  "-newkey",
  ...key,
  "-noenc",
  "-keyout",
  "key.pem",
  "-out",
  "cert.pem",
  "-days",
  "30",
  "-subj",
  subj,
];

Deno.test("PdfSigner loads OpenSSL's P-256 and RSA 3072 certificates; refuses RSA 2048, P-384, a foreign key", async () => {
  await withDir(async (dir) => {
    const read = (f: string) => Deno.readTextFile(`${dir}/${f}`);
    await openssl(dir, ...req(["ec", "-pkeyopt", "ec_paramgen_curve:P-256"], "/CN=Lab P-256/O=Lab"));
    const ec = await PdfSigner.load({
      kind: "pem",
      certificate: await read("cert.pem"),
      privateKey: await read("key.pem"),
    });
    assert.equal(ec.info.algorithm, "ECDSA P-256");
    assert.equal(ec.info.subject, "CN=Lab P-256, O=Lab");
    const der = await openssl(dir, "x509", "-in", "cert.pem", "-outform", "DER");
    assert.equal(ec.info.fingerprintSha256, await sha256Hex(der));
    const ecKey = await read("key.pem");

    await openssl(dir, ...req(["rsa:3072"], "/CN=Lab RSA"));
    const rsa = await PdfSigner.load({
      kind: "pem",
      certificate: await read("cert.pem"),
      privateKey: await read("key.pem"),
    });
    assert.equal(rsa.info.algorithm, "RSA 3072");
    await assert.rejects(
      PdfSigner.load({ kind: "pem", certificate: await read("cert.pem"), privateKey: ecKey }),
      PdfSigningConfigError,
    );

    await openssl(dir, ...req(["rsa:2048"], "/CN=Lab RSA 2048"));
    await assert.rejects(
      PdfSigner.load({ kind: "pem", certificate: await read("cert.pem"), privateKey: await read("key.pem") }),
      /2048 bits; at least 3072 are needed/,
    );
    await openssl(dir, ...req(["ec", "-pkeyopt", "ec_paramgen_curve:P-384"], "/CN=Lab P-384"));
    await assert.rejects(
      PdfSigner.load({ kind: "pem", certificate: await read("cert.pem"), privateKey: await read("key.pem") }),
      /ECDSA P-384; PDF signatures need ECDSA P-256 or RSA/,
    );
  });
});

Deno.test("PdfSigner reads an OpenSSL PKCS#12 file; a wrong password is a clear error", async () => {
  await withDir(async (dir) => {
    await openssl(dir, ...req(["ec", "-pkeyopt", "ec_paramgen_curve:P-256"], "/CN=Lab P12"));
    await openssl(
      dir,
      "pkcs12",
      "-export",
      "-inkey",
      "key.pem",
      "-in",
      "cert.pem",
      "-passout",
      "pass:s3cret",
      "-out",
      "lab.p12",
    );
    const pkcs12 = await Deno.readFile(`${dir}/lab.p12`);
    const signer = await PdfSigner.load({ kind: "pkcs12", pkcs12, password: "s3cret" });
    const der = await openssl(dir, "x509", "-in", "cert.pem", "-outform", "DER");
    assert.equal(signer.info.fingerprintSha256, await sha256Hex(der));
    await assert.rejects(
      PdfSigner.load({ kind: "pkcs12", pkcs12, password: "wrong" }),
      /cannot open the PKCS#12 file .*wrong DUT_PDF_SIGNING_P12_PASSWORD/,
    );
  });
});

Deno.test("the generated lab certificate: self-signed P-256 naming the lab, signing key usages (OpenSSL's reading)", async () => {
  await withDir(async (dir) => {
    const m = await generatePdfSigningMaterial("ACME Test Lab, Berlin");
    await Deno.writeTextFile(`${dir}/cert.pem`, m.certificate);
    const text = dec.decode(await openssl(dir, "x509", "-in", "cert.pem", "-noout", "-text"));
    assert.match(
      text,
      /Subject: CN\s?=\s?"ACME Test Lab, Berlin report signing", O\s?=\s?"ACME Test Lab, Berlin"/,
    );
    assert.match(text, /ASN1 OID: prime256v1/);
    assert.match(text, /X509v3 Key Usage: critical\s+Digital Signature, Non Repudiation/);
    assert.match(text, /CA:FALSE/);
    // Self-signed: OpenSSL verifies it against itself.
    const ok = dec.decode(await openssl(dir, "verify", "-CAfile", "cert.pem", "cert.pem"));
    assert.match(ok, /cert\.pem: OK/);
    const signer = await PdfSigner.load({ kind: "pem", ...m });
    assert.equal(signer.info.algorithm, "ECDSA P-256");
  });
});

Deno.test("the openssl command the start-up error prints makes a certificate serve accepts", async () => {
  const { MAKE_PDF_CERTIFICATE } = await import("./pdf_certificates.ts");
  await withDir(async (dir) => {
    const cmd = MAKE_PDF_CERTIFICATE.split("; then ")[0]!.replaceAll("<lab>", "Example Lab");
    const out = await new Deno.Command("bash", {
      args: ["-c", cmd],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
    })
      .output();
    assert.equal(out.code, 0, dec.decode(out.stderr));
    const signer = await PdfSigner.load({
      kind: "pem",
      certificate: await Deno.readTextFile(`${dir}/pdf-cert.pem`),
      privateKey: await Deno.readTextFile(`${dir}/pdf-key.pem`),
    });
    assert.equal(signer.info.subject, "CN=Example Lab report signing, O=Example Lab");
  });
});
