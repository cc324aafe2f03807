/**
 * Evidence others' tools accept (docs/reports.md "Evidence bundle" and "Replay"):
 *
 * - `GET /api/test-runs/{executionId}/evidence`: the run's evidence bundle (`.tar.gz`), with the report's
 *   access rule (admin token or the print page's share link);
 * - `POST /api/test-runs/{executionId}/replay`: the replay on the server, from the database (any role: it
 *   only reads).
 *
 * Register before the test-run routes' auth (app.ts lets `…/evidence` through to {@link pageAccess}).
 * @module
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { evidenceServices, type Services } from "../runtime/services.ts";
import { json, problemResponse, problemResponses } from "./openapi_util.ts";
import { ExecutionIdParam } from "../api/schemas.ts";
import { pageAccess, renderReportPdf, verifierSource } from "./routes_report_keys.ts";
import { collectReplayInputs, evidenceBundle } from "../report/evidence.ts";
import { replayReport } from "../report/replay.ts";
import { HttpProblem } from "./problem.ts";
import { ShareLinkQuery } from "./share.ts";
import { logger } from "../util/log.ts";

const ReplayLine = z.object({
  what: z.string().openapi({ description: "The figure, e.g. `aggregate p99_ms`, `annex snapshots sha256`" }),
  status: z.enum(["same", "differs", "input", "not-sealed", "not-reproducible"]).openapi({
    description: "`same`; `differs`; `input` (an input does not match what it claims); `not-sealed` (the " +
      "sealed report predates it); `not-reproducible` (this service cannot recompute it; `detail` says why)",
  }),
  sealed: z.string().optional(),
  replayed: z.string().optional(),
  detail: z.string().optional(),
}).openapi("ReplayLine");

const ReplayResult = z.object({
  executionId: z.string(),
  reportSha256: z.string().openapi({ description: "The sealed report's hash" }),
  replayedReportSha256: z.string().nullable().openapi({ description: "The replayed report's hash" }),
  reproduced: z.boolean().openapi({ description: "True when every figure and the whole report agree" }),
  exitCode: z.union([z.literal(0), z.literal(1), z.literal(3)]).openapi({
    description: "What `verify_report.ts --replay` exits with for the same comparison: 0 reproduced, 1 a " +
      "difference, 3 a part not reproducible",
  }),
  lines: z.array(ReplayLine),
}).openapi("ReplayResult");

export function evidenceRoutes(app: OpenAPIHono, svc: Services) {
  evidenceBundleRoutes(app, svc);
  replayRoutes(app, svc);
}

/** The evidence bundle of a run. */
function evidenceBundleRoutes(app: OpenAPIHono, svc: Services) {
  const tags = ["Test runs"];
  const log = logger("evidence");
  app.use("/api/test-runs/:executionId/evidence", pageAccess(svc));
  app.openapi(
    createRoute({
      method: "get",
      path: "/api/test-runs/{executionId}/evidence",
      operationId: "getRunEvidence",
      tags,
      security: [{ adminBearer: [] }, {}],
      summary: "The run's evidence bundle (.tar.gz)",
      description:
        "One gzip-compressed tar archive, folder `evidence-<first 8 characters of the execution id>/`, holding " +
        "`report.json`, `report.dsse.json`, `report.pdf` (or, when it cannot be made, `report.pdf.MISSING.txt` saying " +
        "why, and the header `X-Evidence-Pdf: missing`), every snapshot payload the " +
        "report cites as `payloads/<sha256>.json`, the public keys (`keys/`), the standalone `verify_report.ts`, " +
        "the raw inputs a replay reads (`inputs/`), `README.txt` and `SHA256SUMS` (every other file's SHA-256, " +
        "`sha256sum -c` format). `verify_report.ts --replay` checks and replays it offline. Access: the admin " +
        "token, or the print page's share link parameters (`?exp=…&sig=…` from POST …/share). 404 for an " +
        "unknown or unfinished run.",
      request: {
        params: ExecutionIdParam,
        query: ShareLinkQuery,
      },
      responses: {
        200: {
          description: "The bundle",
          headers: z.object({
            "X-Report-Sha256": z.string(),
            "X-Evidence-Pdf": z.enum(["included", "missing"]),
          }),
          content: { "application/gzip": { schema: z.string().openapi({ format: "binary" }) } },
        },
        ...problemResponses,
        403: problemResponse("Invalid or expired share link"),
        404: problemResponse("Unknown or unfinished run"),
      },
    }),
    async (c) => {
      const executionId = c.req.param("executionId") ?? "";
      const report = await svc.runs.report(executionId);
      const verifier = await verifierSource().catch(() => {
        throw new HttpProblem(
          503,
          "verifier-unavailable",
          "Verifier unavailable",
          "tools/verify_report.ts is not deployed",
        );
      });
      const { bytes, filename, pdfMissing } = await evidenceBundle(evidenceServices(svc), executionId, {
        verifier,
        // report.pdf when Chromium renders it; otherwise the bundle says why (README.txt,
        // report.pdf.MISSING.txt) and so does the response (X-Evidence-Pdf).
        pdf: async () => {
          try {
            return (await renderReportPdf(svc, executionId, c.req.url)).pdf;
          } catch (e) {
            log.warn("Evidence bundle of {executionId} without report.pdf: {error}", {
              executionId,
              error: String(e),
            });
            return { missing: `the PDF could not be made (${(e as Error).message.split("\n")[0]})` };
          }
        },
      });
      return c.body(bytes as Uint8Array<ArrayBuffer>, 200, {
        "content-type": "application/gzip",
        "content-disposition": `attachment; filename="${filename}"`,
        "x-report-sha256": report.sha256,
        "x-evidence-pdf": pdfMissing ? "missing" : "included",
        "cache-control": "private, no-store",
      }) as never;
    },
  );
}

/** The replay of a run report. */
function replayRoutes(app: OpenAPIHono, svc: Services) {
  const tags = ["Test runs"];
  app.openapi(
    createRoute({
      method: "post",
      path: "/api/test-runs/{executionId}/replay",
      operationId: "replayRunReport",
      tags,
      summary: "Replay a finished run's report from the database",
      description:
        "Recomputes, from the run's raw inputs (the frozen plan, the cited snapshot payloads, the submitted " +
        "results, the alerts), every figure the report derived, with the code that built it, and compares each " +
        "with the sealed one: what `verify_report.ts --replay` does with the evidence bundle. Changes nothing " +
        "(any role may call it). 404 for an unknown or unfinished run.",
      request: { params: ExecutionIdParam },
      responses: {
        200: json(ReplayResult, "The comparison"),
        ...problemResponses,
        404: problemResponse("Unknown or unfinished run"),
      },
    }),
    async (c) => {
      const { executionId } = c.req.valid("param");
      const { report, inputs } = await collectReplayInputs(evidenceServices(svc), executionId);
      const r = await replayReport(svc.registry, report, inputs);
      return c.json({
        executionId,
        reportSha256: report.reportSha256,
        replayedReportSha256: r.replayedReportSha256,
        reproduced: r.reproduced,
        exitCode: r.exitCode,
        lines: r.lines,
      }, 200);
    },
  );
}
