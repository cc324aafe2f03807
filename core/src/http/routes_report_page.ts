import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Services } from "../runtime/services.ts";
import { renderReportPage } from "../report/render/page.tsx";
import type { ReportData } from "../report/types.ts";
import { pageAccess, pdfCertificateNote, publicBase } from "./routes_report_keys.ts";

/**
 * `GET /runs/{executionId}/report`: the print page of a finished run, for the admin bearer token or a
 * signed share link (`?exp=<unix seconds>&sig=<HMAC>`, see share.ts), as `pageAccess` judges them: a link that
 * is present but tampered with or expired is 403; no token and no link is 401; a sent bearer token is judged
 * alone; an unknown or unfinished run is 404.
 */
export function reportPageRoutes(app: OpenAPIHono, svc: Services) {
  const runs = svc.runs;
  app.get("/runs/:executionId/report", pageAccess(svc), async (c) => {
    const r = await runs.report(c.req.param("executionId"));
    const { keyId } = await svc.signatures.envelope(c.req.param("executionId"));
    // A request without a bearer token reaches here only with a checked link (pageAccess).
    const exp = c.req.header("authorization") === undefined ? c.req.query("exp") : undefined;
    const html = renderReportPage(JSON.parse(r.text) as ReportData, {
      shareNote: exp ? `Shared link, valid until ${new Date(Number(exp) * 1000).toISOString()}` : undefined,
      signature: {
        keyId,
        baseUrl: publicBase(svc, c.req.url),
        pdfCertificate: svc.pdfSigner ? pdfCertificateNote(svc.pdfSigner.info) : undefined,
      },
    });
    return c.html(html, 200, {
      "x-report-sha256": r.sha256,
      "x-license": r.licenseId,
      "cache-control": "private, no-store",
      "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
      "referrer-policy": "no-referrer",
    });
  });
}
