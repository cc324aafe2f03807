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
}

/** The signing key fingerprint, laid out like the other hashes of the cover. */
export function SigningKeyHash({ signature }: { signature?: ReportSignatureInfo }) {
  if (!signature) return null;
  return (
    <div class="hash">
      <div class="label">Signed by Ed25519 key (SHA-256 fingerprint)</div>
      <code class="hex" data-hash="signing-key">{signature.keyId}</code>
    </div>
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
    <p class="verify">
      <strong>How to verify without this service:</strong> save <code>{base}/verify-report.ts</code>{" "}
      and the public key whose fingerprint the cover prints (<code>{base}/api/report-keys</code>, field{" "}
      <code>publicKeyPem</code>, as <code>key.pem</code>), then run{" "}
      <code>npx -y deno@2.9.6 run -A verify_report.ts report.pdf --key key.pem</code> (or give it{" "}
      <code>report.json</code> with{" "}
      <code>report.dsse.json</code>). It checks every hash, the signature of the DSSE envelope embedded in the
      PDF, and that the embedded report is the one whose SHA-256 is printed here. Without the tool:{" "}
      <code>openssl pkeyutl -verify -pubin -inkey key.pem -rawin</code>{" "}
      over the envelope's DSSE PAE bytes (README "Verifying a report").
    </p>
  );
}
