import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Services } from "../runtime/services.ts";
import { checkShareLink, reportPath } from "./share.ts";
import { bearerAuth } from "./auth.ts";
import { problems } from "./problem.ts";
import { renderReportPage } from "../report/render/page.tsx";
import type { ReportData } from "../report/types.ts";
import { pdfCertificateNote, publicBase } from "./routes_report_keys.ts";

/**
 * `GET /runs/{executionId}/report`: the print page of a finished run, for the admin bearer token or a
 * signed share link (`?exp=<unix seconds>&sig=<HMAC>`, see share.ts). A link that is present but
 * tampered with or expired is 403; no token and no link is 401; an unknown or unfinished run is 404.
 */
export function reportPageRoutes(app: OpenAPIHono, svc: Services) {
  const runs = svc.runs;
  const admin = bearerAuth(svc);
  app.get("/runs/:executionId/report", async (c, next) => {
    const exp = c.req.query("exp");
    const sig = c.req.query("sig");
    if (exp === undefined && sig === undefined) return await admin(c, next);
    const path = reportPath(c.req.param("executionId"));
    if (!exp || !sig || !(await checkShareLink(svc.config.ADMIN_TOKEN, path, exp, sig))) {
      throw problems.forbidden("The share link is invalid or has expired; ask for a new one");
    }
    return await next();
  }, async (c) => {
    const r = await runs.report(c.req.param("executionId"));
    const { keyId } = await svc.signatures.envelope(c.req.param("executionId"));
    // Only a checked link reaches here with `exp`.
    const exp = c.req.query("exp");
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
