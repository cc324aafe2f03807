/**
 * The cover's signature block: the signing key's fingerprint (next to `reportSha256`) and the verification
 * note saying how to check the report without the service (README "Verifying a report").
 * @module
 */

/** What the cover shows about the report's signature. */
export interface ReportSignatureInfo {
  /** `keyid` of the DSSE signature: SHA-256 (hex) of the signing key's DER SubjectPublicKeyInfo. */
  keyId: string;
  /** Base URL of the service (where `/verify-report.ts` and `/api/report-keys` are served). */
  baseUrl: string;
  /** The X.509 certificate that signs the PDF of this page (PAdES), when the service has one. */
  pdfCertificate?: { fingerprintSha256: string; subject: string };
}

/** The signing key fingerprint, laid out like the other hashes of the cover. */
export function SigningKeyHash({ signature }: { signature?: ReportSignatureInfo }) {
  if (!signature) return null;
  const cert = signature.pdfCertificate;
  return (
    <>
      <div class="hash">
        <div class="label">Signed by Ed25519 key (SHA-256 fingerprint)</div>
        <code class="hex" data-hash="signing-key">{signature.keyId}</code>
      </div>
      {cert && (
        <div class="hash" data-hash-block="pdf-certificate">
          <div class="label">PDF signed with certificate (SHA-256 fingerprint)</div>
          <code class="hex" data-hash="pdf-certificate">{cert.fingerprintSha256}</code>
          <p class="verify">
            Check the PDF signature in your PDF reader's signature panel (or with{" "}
            <code>pdfsig report.pdf</code>): it must be valid, cover the total document and be made with the
            certificate {cert.subject} whose fingerprint is printed above.
          </p>
        </div>
      )}
    </>
  );
}

/** How a reader checks the PDF signature (the verification section). */
function PdfSignatureNote({ signature }: { signature: ReportSignatureInfo }) {
  const cert = signature.pdfCertificate;
  if (!cert) return null;
  const base = signature.baseUrl.replace(/\/+$/, "");
  return (
    <p class="verify" data-verify="pdf-signature">
      <strong>Checking the PDF signature:</strong>{" "}
      the PDF of this report is signed as a whole, attachments included (PAdES, certificate{" "}
      <code>{cert.subject}</code>). Open it in a PDF reader and look at its signature panel (Adobe Acrobat
      Reader: "Signature panel"), or run <code>pdfsig report.pdf</code>{" "}
      (poppler-utils): it must say the signature is valid and the total document is signed. Then check that
      the signing certificate's SHA-256 fingerprint is <code class="hex">{cert.fingerprintSha256}</code> (in
      {" "}
      <code>{base}/api/report-keys</code>, field{" "}
      <code>certificates</code>, or the one the lab gave you). Any changed byte of the signed file makes the
      signature invalid. The reader may call the certificate's issuer unknown or untrusted: that is about
      trust, not integrity; trusting the certificate is your decision, by its fingerprint. A later certificate
      rotation does not change this: the PDF carries its own certificate, and old certificates stay listed.
    </p>
  );
}

/** How to verify: with the standalone verifier and the public key, or by hand. */
export function VerificationNote(
  { executionId, signature }: { executionId: string; signature?: ReportSignatureInfo },
) {
  if (!signature) {
    return (
      <p class="verify">
        <strong>How to verify:</strong> fetch <code>report.json</code> for execution{" "}
        <code>{executionId}</code>, remove the <code>reportSha256</code>{" "}
        member, compute the SHA-256 of its RFC 8785 canonical JSON and compare with the Report SHA-256 on the
        cover; or run{" "}
        <code>deno task verify-report &lt;url&gt;</code>, which also checks the plan and annex hashes.
      </p>
    );
  }
  const base = signature.baseUrl.replace(/\/+$/, "");
  return (
    <>
      <PdfSignatureNote signature={signature} />
      <p class="verify">
        <strong>How to verify without this service:</strong> save <code>{base}/verify-report.ts</code>{" "}
        and the public key whose fingerprint the cover prints (<code>{base}/api/report-keys</code>, field{" "}
        <code>publicKeyPem</code>, as <code>key.pem</code>), then run{" "}
        <code>npx -y deno@2.9.6 run -A verify_report.ts report.pdf --key key.pem</code> (or give it{" "}
        <code>report.json</code> with{" "}
        <code>report.dsse.json</code>). It checks every hash, the signature of the DSSE envelope embedded in
        the PDF, and that the embedded report is the one whose SHA-256 is printed here. Without the tool:{" "}
        <code>openssl pkeyutl -verify -pubin -inkey key.pem -rawin</code>{" "}
        over the envelope's DSSE PAE bytes (README "Verifying a report").
      </p>
    </>
  );
}
