/**
 * Signed, portable evidence (docs/reports.md "Signatures" and "Verifying a report"):
 *
 * - `GET /api/report-keys` (public): every report signing key and PDF signing certificate the service has
 *   used;
 * - `GET /api/test-runs/{executionId}/report.dsse.json`: the report's DSSE envelope (signed when first
 *   asked for if the report was frozen before signing existed);
 * - header `X-Report-Signature-Key` on `report.json`, and a report is signed as soon as its run finishes;
 * - `GET /api/test-runs/{executionId}/attestations`: both signed envelopes of a run (the report Statement
 *   and the in-toto test-result Statement; admin token or the page's share link);
 * - `GET /api/test-runs/{executionId}/report.pdf`: the print page rendered by headless Chromium, with the
 *   report and envelope attached and the whole file signed with the lab's X.509 certificate (PAdES B-B;
 *   admin token or the page's share link);
 * - `GET /verify-report.ts` (public): the standalone verifier.
 *
 * Register before the test-run routes: the two middlewares wrap `report.json` and `finish`.
 * @module
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { Services } from "../runtime/services.ts";
import { json, problemResponse, problemResponses } from "./openapi_util.ts";
import { bearerAuth } from "./auth.ts";
import { checkShareLink, reportPath, ShareLinkQuery } from "./share.ts";
import { problems } from "./problem.ts";
import { renderReportPage } from "../report/render/page.tsx";
import type { ReportData } from "../report/types.ts";
import { attachEvidence } from "../report/render/pdf.ts";
import type { PdfCertificateInfo } from "../report/pdf_certificates.ts";
import { logger } from "../util/log.ts";
import { HttpProblem } from "./problem.ts";

const ExecParam = z.object({
  executionId: z.string().openapi({
    param: { name: "executionId", in: "path" },
    description: "Execution id (UUID)",
    format: "uuid",
  }),
});

const Jwk = z.object({
  kty: z.literal("OKP"),
  crv: z.literal("Ed25519"),
  x: z.string(),
  kid: z.string(),
  alg: z.literal("EdDSA"),
  use: z.literal("sig"),
});
const ReportKey = z.object({
  keyId: z.string().openapi({ description: "SHA-256 (hex) of the DER SubjectPublicKeyInfo; the DSSE keyid" }),
  algorithm: z.literal("Ed25519"),
  publicKeyPem: z.string(),
  publicKeyJwk: Jwk,
  validFrom: z.string(),
  validUntil: z.string().nullable().openapi({ description: "Set when a newer key replaced it (rotation)" }),
  current: z.boolean(),
}).openapi("ReportSigningKey");

const PdfCertificate = z.object({
  fingerprintSha256: z.string().openapi({
    description:
      "SHA-256 (hex) of the certificate's DER: the fingerprint a PDF reader shows and the cover prints",
  }),
  subject: z.string(),
  issuer: z.string(),
  serialNumber: z.string().openapi({ description: "hex" }),
  algorithm: z.string().openapi({ description: "`ECDSA P-256` or `RSA <bits>`" }),
  notBefore: z.string(),
  notAfter: z.string(),
  certificatePem: z.string(),
  validFrom: z.string().openapi({ description: "When the service first signed PDFs with it" }),
  validUntil: z.string().nullable().openapi({
    description: "Set when a newer certificate replaced it (rotation)",
  }),
  current: z.boolean(),
}).openapi("PdfSigningCertificate");

const Envelope = z.object({
  payload: z.string().openapi({ description: "base64 of the canonical JSON of the in-toto Statement v1" }),
  payloadType: z.literal("application/vnd.in-toto+json"),
  signatures: z.array(z.object({ keyid: z.string(), sig: z.string() })),
}).openapi("DsseEnvelope");

/** The base URL the cover's verification note names. */
export function publicBase(svc: Services, requestUrl: string): string {
  return (svc.config.DUT_PUBLIC_URL ?? new URL(requestUrl).origin).replace(/\/+$/, "");
}

/** What the cover says about the PDF signing certificate. */
export function pdfCertificateNote(info: PdfCertificateInfo): { fingerprintSha256: string; subject: string } {
  return { fingerprintSha256: info.fingerprintSha256, subject: info.subject };
}

/**
 * Admin token, or a valid share link of the run's print page (`?exp&sig`), as the page accepts. A request
 * that sends `Authorization` is judged by its bearer token alone (share-link parameters beside it, even
 * empty ones, are ignored); one without is judged by its link. Only GET and HEAD are checked here: any other
 * method goes on to the router's 405 (method routing first).
 */
export function pageAccess(svc: Services): MiddlewareHandler {
  const admin = bearerAuth(svc);
  return async (c, next) => {
    if (c.req.method !== "GET" && c.req.method !== "HEAD") return await next();
    const exp = c.req.query("exp");
    const sig = c.req.query("sig");
    if (c.req.header("authorization") !== undefined || (exp === undefined && sig === undefined)) {
      return await admin(c, next);
    }
    const path = reportPath(c.req.param("executionId") ?? "");
    if (!exp || !sig || !(await checkShareLink(svc.config.ADMIN_TOKEN, path, exp, sig))) {
      throw problems.forbidden("The share link is invalid or has expired; ask for a new one");
    }
    await next();
  };
}

let verifierText: Promise<string> | null = null;
/** The standalone verifier (tools/verify_report.ts, a build output of tools/verify_report_src.ts), read once. */
export function verifierSource(): Promise<string> {
  verifierText ??= Deno.readTextFile(new URL("../../../tools/verify_report.ts", import.meta.url)).catch(
    (e) => {
      verifierText = null;
      throw e;
    },
  );
  return verifierText;
}

/**
 * The report PDF of a finished run (`GET …/report.pdf` and the evidence bundle): the print page rendered
 * by the warm Chromium, with the report and its envelope attached.
 */
export async function renderReportPdf(
  svc: Services,
  executionId: string,
  requestUrl: string,
): Promise<{ pdf: Uint8Array; sha256: string; keyId: string; licenseId: string; certificateSha256: string }> {
  const r = await svc.runs.report(executionId);
  const { text: envelopeText, keyId } = await svc.signatures.envelope(executionId);
  const report = JSON.parse(r.text) as ReportData;
  const signer = svc.pdfSigner;
  if (!signer) {
    throw new HttpProblem(
      503,
      "pdf-unavailable",
      "PDF rendering unavailable",
      "This process has no PDF signing certificate",
    );
  }
  const base = publicBase(svc, requestUrl);
  const html = renderReportPage(report, {
    signature: { keyId, baseUrl: base, pdfCertificate: pdfCertificateNote(signer.info) },
  });
  const printed = await svc.pdf.render(html);
  const lab = report.license.issuer ?? svc.config.DUT_LAB_NAME;
  const pdf = await attachEvidence(printed, {
    executionId,
    runId: report.meta.runId,
    title: `Test-run report ${report.meta.runId} — ${report.meta.planDisplayName}`,
    reportSha256: r.sha256,
    reportText: r.text,
    envelopeText,
    signingKeyId: keyId,
    generatedAt: report.generatedAt,
  }, {
    signer,
    fields: {
      reason: `Test-run report ${report.meta.runId} (execution ${executionId}), reportSha256 ${r.sha256}`,
      name: lab,
      location: lab,
      contactInfo: `${base}/api/report-keys`,
    },
  });
  return {
    pdf,
    sha256: r.sha256,
    keyId,
    licenseId: r.licenseId,
    certificateSha256: signer.info.fingerprintSha256,
  };
}

export function reportSignatureRoutes(app: OpenAPIHono, svc: Services) {
  signingRoutes(app, svc);
  const access = pageAccess(svc);
  attestationRoutes(app, svc, access);
  reportPdfRoutes(app, svc, access);
}

/** Signing on finish and on first read, the signing keys, the report envelope. */
function signingRoutes(app: OpenAPIHono, svc: Services) {
  const log = logger("signatures");
  const tags = ["Test runs"];

  // A report (and its test-result attestation) is signed as soon as its run finishes; if that fails it is
  // signed when first asked for.
  app.use("/api/test-runs/:executionId/finish", async (c, next) => {
    await next();
    if (c.res.status !== 200) return;
    const id = c.req.param("executionId");
    await svc.signatures.attestations(id).catch((e) =>
      log.error("Could not sign the report of {executionId}: {error}", { executionId: id, error: String(e) })
    );
  });
  app.use("/api/test-runs/:executionId/report.json", async (c, next) => {
    await next();
    if (c.res.status !== 200) return;
    const id = c.req.param("executionId");
    try {
      c.res.headers.set("x-report-signature-key", (await svc.signatures.envelope(id)).keyId);
    } catch (e) {
      // The report itself is still served; report.dsse.json answers with the problem.
      log.error("Could not sign the report of {executionId}: {error}", { executionId: id, error: String(e) });
    }
  });

  app.openapi(
    createRoute({
      method: "get",
      path: "/api/report-keys",
      operationId: "listReportSigningKeys",
      tags: ["Reports"],
      security: [],
      summary: "Public keys and certificates that sign reports (no token needed)",
      description:
        "`keys`: every Ed25519 key the service has signed reports with, oldest first, with its id (the DSSE " +
        "`keyid` = SHA-256 of the DER SubjectPublicKeyInfo), the public key as PEM and JWK, and its validity " +
        "period. `certificates`: every X.509 certificate report PDFs were signed with (PAdES), oldest first, " +
        "with its PEM, SHA-256 fingerprint and validity. A rotation adds a key or certificate and keeps the old " +
        "ones, so old reports and PDFs stay verifiable.",
      responses: {
        200: json(
          z.object({ keys: z.array(ReportKey), certificates: z.array(PdfCertificate) }),
          "Signing keys and PDF signing certificates",
        ),
        413: problemResponse("Request body over DUT_BODY_LIMIT_BYTES (also on a GET)"),
      },
    }),
    async (c) =>
      c.json(
        { keys: await svc.signatures.keys(), certificates: await svc.pdfCertificates.list() },
        200,
        { "cache-control": "no-cache" },
      ),
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/api/test-runs/{executionId}/report.dsse.json",
      operationId: "getRunReportEnvelope",
      tags,
      summary: "Signed DSSE envelope of a finished run's report",
      description: "A DSSE envelope whose payload is an in-toto Statement v1 naming the report (subjects: " +
        "`report-<id>.canonical.json` with digest sha256 = reportSha256, and `report-<id>.json` with the SHA-256 " +
        "of the exact report.json bytes). The signature is Ed25519 over the DSSE PAE of the payload. The same " +
        "bytes on every fetch. Header X-Report-Signature-Key = the signing key id. 404 for an unknown or " +
        "unfinished run.",
      request: { params: ExecParam },
      responses: {
        200: {
          description: "DSSE envelope",
          headers: z.object({ "X-Report-Signature-Key": z.string() }),
          content: { "application/json": { schema: Envelope } },
        },
        ...problemResponses,
        404: problemResponse("Unknown or unfinished run"),
      },
    }),
    async (c) => {
      const { text, keyId } = await svc.signatures.envelope(c.req.valid("param").executionId);
      return c.body(text, 200, {
        "content-type": "application/json; charset=utf-8",
        "x-report-signature-key": keyId,
      }) as never;
    },
  );
}

/** The attestations of a run. */
function attestationRoutes(app: OpenAPIHono, svc: Services, access: MiddlewareHandler) {
  const tags = ["Test runs"];
  app.use("/api/test-runs/:executionId/attestations", access);
  app.openapi(
    createRoute({
      method: "get",
      path: "/api/test-runs/{executionId}/attestations",
      operationId: "listRunAttestations",
      tags,
      security: [{ adminBearer: [] }, {}],
      summary: "Every signed DSSE envelope of a finished run",
      description:
        "The report's envelope (predicate `urn:dutlab:predicate:test-report:v1`, the same bytes as " +
        "report.dsse.json) and the in-toto test-result attestation (predicate " +
        "`https://in-toto.io/attestation/test-result/v0.1`: `result` PASSED / WARNED / FAILED from the " +
        "verdict, `configuration` naming the frozen plan by digest, the passed, warned and failed verdict " +
        "inputs and pre-flight checks). Both are signed the same way (Ed25519 over the DSSE PAE, keyid as in " +
        "GET /api/report-keys). `text` is the envelope's exact bytes (what a file would hold). Access: the " +
        "admin token or the print page's share-link parameters (`?exp=…&sig=…`). 404 for an unknown or " +
        "unfinished run.",
      request: {
        params: ExecParam,
        query: ShareLinkQuery,
      },
      responses: {
        200: json(
          z.object({
            executionId: z.string(),
            attestations: z.array(z.object({
              name: z.string().openapi({
                description: "File name: report-<id>.dsse.json, report-<id>.test-result.dsse.json",
              }),
              predicateType: z.string(),
              keyId: z.string(),
              envelope: Envelope,
              text: z.string().openapi({
                description: "The envelope as served and stored (JSON text + newline)",
              }),
            })),
          }).openapi("RunAttestations"),
          "Signed envelopes",
        ),
        ...problemResponses,
        403: problemResponse("Invalid or expired share link"),
        404: problemResponse("Unknown or unfinished run"),
      },
    }),
    async (c) => {
      const executionId = c.req.param("executionId") ?? "";
      const list = await svc.signatures.attestations(executionId);
      return c.json({
        executionId,
        attestations: list.map((a) => ({
          name: a.name,
          predicateType: a.predicateType,
          keyId: a.keyId,
          envelope: JSON.parse(a.text),
          text: a.text,
        })),
      }, 200);
    },
  );
}

/** The signed PDF report and the verification tool. */
function reportPdfRoutes(app: OpenAPIHono, svc: Services, access: MiddlewareHandler) {
  const tags = ["Test runs"];
  app.use("/api/test-runs/:executionId/report.pdf", access);
  app.openapi(
    createRoute({
      method: "get",
      path: "/api/test-runs/{executionId}/report.pdf",
      operationId: "getRunReportPdf",
      tags,
      security: [{ adminBearer: [] }, {}],
      summary: "The report as a signed PDF, with the report and its signature attached",
      description:
        "The print page rendered by headless Chromium (A4). The PDF embeds `report-<id>.json` (the " +
        "exact report.json bytes) and `report-<id>.dsse.json` (its DSSE envelope) as attached files; its " +
        "metadata carries the title, the run id, the execution id and reportSha256. The whole file, " +
        "attachments included, is signed with the lab's X.509 certificate (PAdES B-B: CMS detached, SubFilter " +
        "ETSI.CAdES.detached, SHA-256); header X-Pdf-Signing-Certificate = its SHA-256 fingerprint (listed " +
        "by GET /api/report-keys). Access: the admin token, or " +
        "the print page's share link parameters (`?exp=…&sig=…` from POST …/share). 503 when Chromium is not " +
        "installed, does not start, or the render exceeds DUT_PDF_TIMEOUT_SECONDS.",
      request: {
        params: ExecParam,
        query: ShareLinkQuery,
      },
      responses: {
        200: {
          description: "PDF",
          headers: z.object({
            "X-Report-Sha256": z.string(),
            "X-Report-Signature-Key": z.string(),
            "X-Pdf-Signing-Certificate": z.string(),
          }),
          content: { "application/pdf": { schema: z.string().openapi({ format: "binary" }) } },
        },
        ...problemResponses,
        403: problemResponse("Invalid or expired share link"),
        404: problemResponse("Unknown or unfinished run"),
        503: problemResponse("Chromium missing or busy beyond the time limit"),
      },
    }),
    async (c) => {
      const executionId = c.req.param("executionId") ?? "";
      const { pdf, sha256, keyId, licenseId, certificateSha256 } = await renderReportPdf(
        svc,
        executionId,
        c.req.url,
      );
      return c.body(pdf as Uint8Array<ArrayBuffer>, 200, {
        "content-type": "application/pdf",
        "content-disposition": `inline; filename="report-${executionId}.pdf"`,
        "x-report-sha256": sha256,
        "x-report-signature-key": keyId,
        "x-pdf-signing-certificate": certificateSha256,
        "x-license": licenseId,
        "cache-control": "private, no-store",
      }) as never;
    },
  );

  app.get("/verify-report.ts", async (c) => {
    const text = await verifierSource().catch(() => {
      throw new HttpProblem(
        503,
        "verifier-unavailable",
        "Verifier unavailable",
        "tools/verify_report.ts is not deployed",
      );
    });
    return c.body(text, 200, {
      "content-type": "text/typescript; charset=utf-8",
      "content-disposition": 'inline; filename="verify_report.ts"',
    });
  });
}
