import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Services } from "../services.ts";
import { RunService } from "../runs/service.ts";
import { checkShareLink, reportPath } from "./share.ts";
import { adminAuth } from "./auth.ts";
import { problems } from "./problem.ts";
import { renderReportPage } from "../report/page.tsx";
import type { ReportData } from "../report/types.ts";

/** GET /runs/{executionId}/report: the print page, for the admin token or a valid share link. */
export function reportPageRoutes(app: OpenAPIHono, svc: Services) {
  const runs = new RunService(svc.db.kysely, svc.registry, svc.config.DUT_DEFAULT_LICENSE_ID);
  const admin = adminAuth(svc.config.ADMIN_TOKEN);
  app.get("/runs/:executionId/report", async (c, next) => {
    const exp = c.req.query("exp");
    const sig = c.req.query("sig");
    const id = c.req.param("executionId");
    if (exp !== undefined || sig !== undefined) {
      if (!exp || !sig || !(await checkShareLink(svc.config.ADMIN_TOKEN, reportPath(id), exp, sig))) {
        throw problems.forbidden("The share link is invalid or has expired; ask for a new one");
      }
      return await next();
    }
    return await admin(c, next);
  }, async (c) => {
    const r = await runs.report(c.req.param("executionId"));
    const html = renderReportPage(JSON.parse(r.text) as ReportData);
    return c.html(html, 200, {
      "x-report-sha256": r.sha256,
      "x-license": r.licenseId,
      "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
      "referrer-policy": "no-referrer",
    });
  });
}
