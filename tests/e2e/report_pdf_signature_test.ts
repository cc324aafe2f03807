/**
 * report.pdf carries a PAdES B-B signature, judged by poppler's `pdfsig` (Debian poppler-utils) and OpenSSL,
 * never by our own reader: valid and covering the total document on a fresh PDF, invalid after one flipped
 * byte anywhere in the signed bytes or in the signature, the signer certificate the one `GET
 * /api/report-keys` lists and the cover prints; and after a certificate rotation an old PDF still
 * verifies, its certificate still listed.
 */
import assert from "node:assert/strict";
import { dbTest } from "../../core/harness/db.ts";
import { jsonReq, testServices } from "../../core/harness/app.ts";
import { fixtureModules } from "@dutlab/core/testing";
import { findChromium, pdfPages, squash } from "@dutlab/core/testing/chromium";
import { type App, type Auth, finishRun, startRun } from "../../core/harness/runs_lab.ts";
import { sha256Hex } from "@dutlab/core";
import { generatePdfSigningMaterial } from "../../core/harness/core.ts";

const chromium = findChromium();
const inCi = Boolean(Deno.env.get("CI"));
const dec = new TextDecoder();

async function finishedRun(app: App, auth: Auth): Promise<string> {
  const run = await startRun(app, auth, { planIdentifier: "fixture-plan" });
  await finishRun(app, auth, run.executionId, {
    outcome: "passed",
    results: { latencySamplesMs: [3, 4, 5] },
  });
  return run.executionId;
}

async function run(cmd: string, args: string[], cwd: string, stdin?: Uint8Array) {
  const child = new Deno.Command(cmd, {
    args,
    cwd,
    env: { NO_COLOR: "1" },
    stdin: stdin ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin) {
    const w = child.stdin.getWriter();
    await w.write(stdin);
    await w.close();
  }
  const out = await child.output();
  return {
    code: out.code,
    stdout: dec.decode(out.stdout),
    stderr: dec.decode(out.stderr),
    bytes: out.stdout,
  };
}

/**
 * What pdfsig says about the PDF's one signature, and the SHA-256 of the signer certificate in the CMS it
 * dumps (read back with OpenSSL).
 */
async function pdfsig(dir: string, pdf: Uint8Array, name = "t.pdf") {
  await Deno.writeFile(`${dir}/${name}`, pdf);
  await Deno.remove(`${dir}/${name}.sig0`).catch(() => {});
  const out = await run("pdfsig", ["-nocert", name], dir);
  const text = out.stdout + out.stderr;
  await run("pdfsig", ["-dump", name], dir); // writes <name>.sig0, the CMS, and validates nothing
  let certSha256: string | null = null;
  try {
    await Deno.stat(`${dir}/${name}.sig0`);
    const certs = await run(
      "openssl",
      ["pkcs7", "-inform", "DER", "-in", `${name}.sig0`, "-print_certs"],
      dir,
    );
    const der = await run(
      "openssl",
      ["x509", "-outform", "DER"],
      dir,
      new TextEncoder().encode(certs.stdout),
    );
    if (der.code === 0 && der.bytes.length) certSha256 = await sha256Hex(der.bytes);
  } catch { /* no signature dumped */ }
  const valid = /Signature Validation: Signature is Valid\./.test(text);
  const total = /^\s*- Total document signed$/m.test(text);
  return { text, valid, total, certSha256 };
}

/** pdfsig's verdict as docs/reports.md "PDF" defines it: valid, total document, the expected certificate. */
const verifies = (r: Awaited<ReturnType<typeof pdfsig>>, fingerprint: string) =>
  r.valid && r.total && r.certSha256 === fingerprint;

function indexOf(hay: Uint8Array, needle: string, from = 0): number {
  const n = new TextEncoder().encode(needle);
  outer: for (let i = from; i + n.length <= hay.length; i++) {
    for (let j = 0; j < n.length; j++) if (hay[i + j] !== n[j]) continue outer;
    return i;
  }
  return -1;
}

dbTest(
  "pdfsig: a fresh report.pdf is signed (PAdES, total document); one flipped byte anywhere breaks it",
  async (db) => {
    assert.ok(chromium, "Chromium is required when CI is set: install the Debian package chromium");
    const { app, auth, svc } = await testServices(db, fixtureModules());
    const dir = await Deno.makeTempDir({ prefix: "dutlab-pdfsig-" });
    try {
      const id = await finishedRun(app, auth);
      const res = await app.request(`/api/test-runs/${id}/report.pdf`, { headers: auth });
      assert.equal(res.status, 200, await res.clone().text());
      const pdf = new Uint8Array(await res.arrayBuffer());
      const fingerprint = svc.pdfSigner!.info.fingerprintSha256;
      assert.equal(res.headers.get("x-pdf-signing-certificate"), fingerprint);

      // The certificate is public, listed beside the Ed25519 keys.
      const keys = await (await app.request("/api/report-keys")).json();
      assert.equal(keys.certificates.length, 1);
      const [cert] = keys.certificates;
      assert.equal(cert.fingerprintSha256, fingerprint);
      assert.equal(cert.current, true);
      assert.equal(cert.validUntil, null);
      assert.equal(cert.algorithm, "ECDSA P-256");
      assert.match(cert.subject, /CN=dutlab test lab report signing/);
      // OpenSSL agrees on the listed PEM's fingerprint.
      await Deno.writeTextFile(`${dir}/cert.pem`, cert.certificatePem);
      const der = await run("openssl", ["x509", "-in", "cert.pem", "-outform", "DER"], dir);
      assert.equal(await sha256Hex(der.bytes), fingerprint);

      // pdfsig: valid, total document, ETSI.CAdES.detached, SHA-256, signed by the listed certificate.
      const ok = await pdfsig(dir, pdf, "report.pdf");
      assert.ok(verifies(ok, fingerprint), ok.text);
      assert.match(ok.text, /Signature Type: ETSI\.CAdES\.detached/);
      assert.match(ok.text, /Signing Hash Algorithm: SHA-256/);
      assert.match(ok.text, /Signer Certificate Common Name: dutlab test lab report signing/);

      // PAdES B-B's signed attributes (OpenSSL's reading of the CMS pdfsig dumped): content type, message
      // digest, ESS signing-certificate-v2, and no signing-time attribute.
      const cms = await run("openssl", [
        "cms",
        "-inform",
        "DER",
        "-in",
        "report.pdf.sig0",
        "-cmsout",
        "-print",
      ], dir);
      assert.equal(cms.code, 0, cms.stderr);
      for (const attr of ["contentType", "messageDigest", "id-smime-aa-signingCertificateV2"]) {
        assert.match(cms.stdout, new RegExp(`object: ${attr} `), attr);
      }
      assert.doesNotMatch(cms.stdout, /object: signingTime/);

      // The attachments are inside the signed bytes: the signature covers everything but its own value.
      const contents = indexOf(pdf, "/Contents <");
      const contentsEnd = indexOf(pdf, ">", contents);
      assert.ok(contents > 0 && contentsEnd > contents);
      const [, len1, start2, len2] = /\/ByteRange \[(\d+) (\d+) (\d+) (\d+)\]/.exec(dec.decode(pdf))!.slice(1)
        .map(Number);
      assert.equal(len1, contents + "/Contents ".length, "first range ends at the hex string");
      assert.equal(start2, contentsEnd + 1, "second range starts after it");
      assert.equal(start2! + len2!, pdf.length, "second range ends at the end of the file");
      const attachmentAt = indexOf(pdf, `report-${id}.json`);
      assert.ok(attachmentAt > start2! || attachmentAt < len1!, "the attachment is in a signed range");

      // One byte flipped: evenly across the file, plus the places that matter (the header, the attachment
      // names, the signature dictionary's time and ByteRange, the end of file; inside the CMS the padding
      // after it, the signature value, the message digest and the certificate's public key).
      const hex = dec.decode(pdf.subarray(contents + "/Contents <".length, contentsEnd));
      const cmsLen = hex.replace(/(00)+$/, "").length / 2;
      const inCms = (byte: number) => contents + "/Contents <".length + 2 * byte + 1;
      const cmsBytes = Uint8Array.from(hex.slice(0, cmsLen * 2).match(/../g)!, (h) => parseInt(h, 16));
      // messageDigest OID, then SET { OCTET STRING (32 bytes) }: 4 header bytes before the digest.
      const digestAt = findDer(cmsBytes, [0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x04]);
      assert.ok(digestAt > 0 && spkiAtOk(cmsBytes));
      const spkiAt = findDer(cmsBytes, [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]); // prime256v1
      const positions = new Map<string, number>([
        ["header", 5],
        ["attachment name", attachmentAt + 3],
        ["signature time /M", indexOf(pdf, "/M (D:") + 8],
        ["ByteRange", indexOf(pdf, "/ByteRange [") + 14],
        ["last byte", pdf.length - 1],
        ["CMS padding", contentsEnd - 2],
        ["CMS signature value", inCms(cmsLen - 3)],
        ["CMS message digest", inCms(digestAt + 4 + 16)],
        ["CMS certificate public key", inCms(spkiAt + 30)],
      ]);
      for (let i = 1; i <= 16; i++) {
        positions.set(`offset ${i}/17 of the file`, Math.floor((pdf.length * i) / 17));
      }
      for (const [what, at] of positions) {
        assert.ok(at >= 0 && at < pdf.length, what);
        const flipped = pdf.slice();
        const c = flipped[at]!;
        // Inside the hex string, flip to another hex digit (a non-digit would only be a parse error).
        flipped[at] = at > contents && at < contentsEnd ? (c === 0x30 ? 0x31 : 0x30) : c ^ 0x01;
        const r = await pdfsig(dir, flipped);
        assert.ok(
          !verifies(r, fingerprint),
          `${what} (byte ${at}) flipped: pdfsig still accepts it\n${r.text}`,
        );
      }

      // The cover and the verification section name the certificate fingerprint in plain words. The
      // cover's integrity box may go on to page 2 (a long verdict table); the report hash stays on page 1.
      const pages = await pdfPages(pdf);
      const cover = squash(pages[0]!.text + pages[1]!.text);
      assert.ok(cover.includes(fingerprint), "the certificate fingerprint is on the cover");
      assert.match(cover, /PDFsignedwithcertificate\(SHA-256fingerprint\)/i);
      assert.match(cover, /signaturepanel\(orwithpdfsigreport\.pdf\):itmustbevalid,coverthetotaldocument/);
      const last = squash(pages.at(-1)!.text);
      assert.match(last, /CheckingthePDFsignature/);
      assert.match(last, /pdfsigreport\.pdf/);
      assert.ok(last.includes(fingerprint));
    } finally {
      await svc.pdf.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
  { ignore: !chromium && !inCi },
);

/** The CMS carries a P-256 public key (the test certificate's). */
function spkiAtOk(cms: Uint8Array): boolean {
  return findDer(cms, [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]) > 0;
}

/** Offset of the DER bytes right after `prefix` in `bytes` (-1 when absent). */
function findDer(bytes: Uint8Array, prefix: number[]): number {
  outer: for (let i = 0; i + prefix.length <= bytes.length; i++) {
    for (let j = 0; j < prefix.length; j++) if (bytes[i + j] !== prefix[j]) continue outer;
    return i + prefix.length;
  }
  return -1;
}

dbTest(
  "certificate rotation: an old report.pdf still verifies with pdfsig; the old certificate stays listed",
  async (db) => {
    assert.ok(chromium, "Chromium is required when CI is set: install the Debian package chromium");
    const first = await testServices(db, fixtureModules());
    const dir = await Deno.makeTempDir({ prefix: "dutlab-pdfsig-rot-" });
    const next = await generatePdfSigningMaterial("dutlab test lab");
    const second = await testServices(db, fixtureModules(), {
      DUT_PDF_SIGNING_CERT: next.certificate,
      DUT_PDF_SIGNING_KEY: next.privateKey,
    });
    try {
      const id = await finishedRun(first.app, first.auth);
      const oldPdf = new Uint8Array(
        await (await first.app.request(`/api/test-runs/${id}/report.pdf`, { headers: first.auth }))
          .arrayBuffer(),
      );
      const oldFp = first.svc.pdfSigner!.info.fingerprintSha256;
      const newFp = second.svc.pdfSigner!.info.fingerprintSha256;
      assert.notEqual(oldFp, newFp);
      await second.svc.pdfCertificates.register(); // the new certificate's first start

      // Both listed, oldest first; the old one's period closed.
      const { certificates } = await (await second.app.request("/api/report-keys")).json();
      assert.deepEqual(certificates.map((c: { fingerprintSha256: string }) => c.fingerprintSha256), [
        oldFp,
        newFp,
      ]);
      assert.notEqual(certificates[0].validUntil, null);
      assert.equal(certificates[0].current, false);
      assert.equal(certificates[1].current, true);

      // A new PDF of the same run is signed with the new certificate; the old PDF still verifies, with the
      // old certificate, which is still listed.
      const newRes = await second.app.request(`/api/test-runs/${id}/report.pdf`, { headers: second.auth });
      assert.equal(newRes.headers.get("x-pdf-signing-certificate"), newFp);
      const fresh = await pdfsig(dir, new Uint8Array(await newRes.arrayBuffer()), "new.pdf");
      assert.ok(verifies(fresh, newFp), fresh.text);
      const old = await pdfsig(dir, oldPdf, "old.pdf");
      assert.ok(verifies(old, oldFp), old.text);

      // The list is append-only: the database refuses to delete a certificate.
      await assert.rejects(
        db.kysely.deleteFrom("pdf_signing_certificates").where("fingerprint_sha256", "=", oldFp).execute(),
        /kept for verification/,
      );
      // Share links open the PDF as before.
      const { url } = await (await second.app.request(
        `/api/test-runs/${id}/share`,
        jsonReq("POST", undefined, second.auth),
      ))
        .json();
      const shared = await second.app.request(`/api/test-runs/${id}/report.pdf${new URL(url).search}`);
      assert.equal(shared.status, 200);
      await shared.body?.cancel();
    } finally {
      await first.svc.pdf.close();
      await second.svc.pdf.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
  { ignore: !chromium && !inCi },
);

Deno.test("rotate-signing-key --certificate: a new lab certificate in secrets.json; the old one stays listed", async () => {
  const { childEnv } = await import("../../core/harness/process.ts");
  const root = new URL("../..", import.meta.url).pathname;
  const dir = await Deno.makeTempDir({ prefix: "dutlab-rotate-cert-" });
  const task = JSON.parse(await Deno.readTextFile(`${root}deno.json`)).tasks["rotate-signing-key"];
  assert.equal(task, "deno run -A tools/rotate_signing_key.ts", "the test runs what the task runs");
  const rotate = async () => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "tools/rotate_signing_key.ts", "--certificate"],
      cwd: root,
      clearEnv: true,
      env: childEnv({ DUT_DATA_DIR: dir, DUT_LAB_NAME: "Rotation Lab" }),
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, dec.decode(out.stderr));
    const secrets = JSON.parse(await Deno.readTextFile(`${dir}/secrets.json`));
    return { text: dec.decode(out.stdout), cert: secrets.pdfSigningCertificate as string };
  };
  try {
    const first = await rotate();
    const second = await rotate();
    assert.notEqual(first.cert, second.cert);
    const der = await run("openssl", ["x509", "-outform", "DER"], dir, new TextEncoder().encode(second.cert));
    const fp = await sha256Hex(der.bytes);
    assert.match(second.text, new RegExp(`now signed with certificate ${fp}; 2 certificate\\(s\\) listed`));
    const subject = await run(
      "openssl",
      ["x509", "-noout", "-subject"],
      dir,
      new TextEncoder().encode(second.cert),
    );
    assert.match(subject.stdout, /CN\s?=\s?Rotation Lab report signing, O\s?=\s?Rotation Lab/);
    assert.equal((await Deno.stat(`${dir}/secrets.json`)).mode! & 0o777, 0o600);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
