import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Services } from "../runtime/services.ts";
import {
  conflictResponse,
  json,
  notFoundResponse,
  problemResponse,
  problemResponses,
} from "./openapi_util.ts";
import { runPreflight } from "../preflight/engine.ts";
import { problems } from "./problem.ts";
import { shareLink } from "./share.ts";
import { RunListQuery } from "../api/schemas_query.ts";
import { FormatQuery, formatted, formattedContent } from "./formats.ts";
import { preflightResultSet, runResultSet } from "../formats/results.ts";
import {
  ExecutionIdParam,
  FinishRunRequest,
  Plan,
  PreflightRequest,
  PreflightResult,
  StartRunRequest,
  TestRun,
} from "../api/schemas.ts";

const body = <T>(schema: T) => ({ body: { content: { "application/json": { schema } }, required: true } });
const tags = ["Test runs"];

export function testRunRoutes(app: OpenAPIHono, svc: Services) {
  const runs = svc.runs;

  app.openapi(
    createRoute({
      method: "get",
      path: "/api/test-runs/plans",
      operationId: "listPlans",
      tags,
      summary: "The test-plan catalog",
      description:
        "Plans with stable identifiers and their parameters (TLS-decrypt requirement, SLO p99 target, deployment " +
        "mode, phases, vendors and roles). `catalogVersion` goes up whenever any plan changes; a run records it.",
      responses: {
        200: json(z.object({ catalogVersion: z.number().int(), plans: z.array(Plan) }), "Plans"),
        ...problemResponses,
      },
    }),
    (c) => c.json(svc.registry.planCatalog, 200),
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/api/test-runs/preflight",
      operationId: "runPreflight",
      tags,
      summary: "Run the pre-flight checks for a plan",
      description:
        "Read-only: evaluates the latest stored snapshot per enabled device and label; never collects or " +
        "contacts a device. 200 when every check passed; 422 (same body) when any failed or was skipped " +
        "(a skipped check means the lab is not known to be ready) or when no check applies. A check that " +
        "cannot read its payload gives status `error` (counted as failed), never a 500. Disabled devices are " +
        "left out. Unknown planIdentifier: 404. `?format=junit|markdown|csv` answers the same result (same " +
        'status) as JUnit XML, Markdown or CSV (README "Result formats").',
      request: { query: FormatQuery, ...body(PreflightRequest) },
      responses: {
        200: { description: "Every check passed", content: formattedContent(PreflightResult) },
        422: {
          description: "At least one check failed or was skipped",
          content: formattedContent(PreflightResult),
        },
        ...problemResponses,
        ...notFoundResponse,
      },
    }),
    async (c) => {
      const { planIdentifier } = c.req.valid("json");
      const plan = svc.registry.plan(planIdentifier);
      if (!plan) {
        const known = svc.registry.planCatalog.plans.map((p) => p.identifier).join(", ") || "none";
        throw problems.notFound(`No plan with identifier "${planIdentifier}" (known plans: ${known})`);
      }
      const r = await runPreflight(svc.db.kysely, svc.registry, plan);
      const { format } = c.req.valid("query");
      return formatted(c, format, r, () => preflightResultSet(r), r.pass ? 200 : 422) as never;
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/api/test-runs",
      operationId: "startRun",
      tags,
      summary: "Start a test run",
      description:
        "Freezes the plan, records the lab state (devices, firewalls' TLS-decrypt state) and the pre-flight " +
        "result at start. Pre-flight does not gate the start (spec 1). Only one run is active at a time (409). " +
        "While active, every stored snapshot carries its executionId.",
      request: body(StartRunRequest),
      responses: {
        201: json(TestRun, "Started"),
        ...problemResponses,
        ...notFoundResponse,
        ...conflictResponse,
      },
    }),
    async (c) => {
      const run = await runs.start(c.req.valid("json"));
      await svc.events.publish("run.started", {
        executionId: run.executionId,
        planIdentifier: run.planIdentifier,
        startedAt: run.startedAt,
      });
      return c.json(run, 201);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/api/test-runs",
      operationId: "listRuns",
      tags,
      summary: "List test runs, newest first",
      description:
        "Newest first (start time). Filters: status, planIdentifier, `from` (started at or after) and `to` " +
        "(started before), RFC 3339. `limit` 1-1000 (default 100); `nextCursor` (null on the last page) is " +
        "passed as `cursor` for the next page.",
      request: { query: RunListQuery },
      responses: {
        200: json(
          z.object({ runs: z.array(TestRun), nextCursor: z.string().nullable() }).openapi("TestRunPage"),
          "A page of runs",
        ),
        ...problemResponses,
      },
    }),
    async (c) => {
      const r = await runs.page(c.req.valid("query"));
      if (!r) throw problems.badRequest("query.cursor", "must be a cursor returned by a previous page");
      return c.json(r, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/api/test-runs/{executionId}",
      operationId: "getRun",
      tags,
      summary: "One test run",
      description: "`?format=junit|markdown|csv` answers the run's verdict as JUnit XML (one testcase per " +
        'verdict input; an active run has one skipped testcase), Markdown or CSV (README "Result formats").',
      request: { params: ExecutionIdParam, query: FormatQuery },
      responses: {
        200: { description: "The run", content: formattedContent(TestRun) },
        ...problemResponses,
        ...notFoundResponse,
      },
    }),
    async (c) => {
      const run = await runs.get(c.req.valid("param").executionId);
      return formatted(c, c.req.valid("query").format, run, () => runResultSet(run), 200) as never;
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/api/test-runs/{executionId}/finish",
      operationId: "finishRun",
      tags,
      summary: "Finish the run and freeze its report",
      description:
        "`results` is either raw latency samples in ms or a k6 --summary-export JSON (with p(99) in its trend " +
        "stats). The service computes count, min, max, mean, p50, p95, p99 (linear interpolation) and builds " +
        "the report once; later fetches return the same bytes and hashes. Samples are bounded by " +
        "DUT_BODY_LIMIT_BYTES (1 MiB by default: about 100,000 samples). 409 when the run is already finished.",
      request: { params: ExecutionIdParam, ...body(FinishRunRequest) },
      responses: {
        200: json(TestRun, "Finished"),
        ...problemResponses,
        ...notFoundResponse,
        ...conflictResponse,
      },
    }),
    async (c) => {
      const { executionId } = c.req.valid("param");
      const run = await runs.finish(executionId, c.req.valid("json"));
      await svc.events.publish("run.finished", {
        executionId: run.executionId,
        planIdentifier: run.planIdentifier,
        outcome: run.outcome,
        endedAt: run.endedAt,
        reportSha256: run.reportSha256,
      });
      return c.json(run, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/api/test-runs/{executionId}/report.json",
      operationId: "getRunReport",
      tags,
      summary: "ReportData of a finished run",
      description:
        "The frozen report. Headers: X-Report-Sha256 (= reportSha256), X-License (= license.id). 404 for an " +
        "unknown or unfinished run.",
      request: { params: ExecutionIdParam },
      responses: {
        200: {
          description: "ReportData v1",
          headers: z.object({ "X-Report-Sha256": z.string(), "X-License": z.string() }),
          content: { "application/json": { schema: z.object({}).passthrough().openapi("ReportData") } },
        },
        ...problemResponses,
        404: problemResponse("Unknown or unfinished run"),
      },
    }),
    async (c) => {
      const r = await runs.report(c.req.valid("param").executionId);
      return c.body(r.text, 200, {
        "content-type": "application/json; charset=utf-8",
        "x-report-sha256": r.sha256,
        "x-license": r.licenseId,
      }) as never;
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/api/test-runs/{executionId}/share",
      operationId: "shareRunReport",
      tags,
      summary: "A signed, expiring link to the print page",
      description:
        "Returns a URL of /runs/{executionId}/report carrying `exp` (Unix seconds) and `sig` (HMAC-SHA256 over " +
        "the path and expiry). Anyone with the link can open the page until it expires; a tampered or expired " +
        "link gets 403. Lifetime: DUT_SHARE_LINK_TTL_SECONDS.",
      request: { params: ExecutionIdParam },
      responses: {
        200: json(z.object({ url: z.string(), expiresAt: z.string() }), "Share link"),
        ...problemResponses,
        ...notFoundResponse,
      },
    }),
    async (c) => {
      const { executionId } = c.req.valid("param");
      await runs.report(executionId);
      const origin = svc.config.DUT_PUBLIC_URL?.replace(/\/+$/, "") ?? new URL(c.req.url).origin;
      return c.json(
        await shareLink(svc.config.ADMIN_TOKEN, origin, executionId, svc.config.DUT_SHARE_LINK_TTL_SECONDS),
        200,
      );
    },
  );
}
