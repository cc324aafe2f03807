import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Services } from "../services.ts";
import {
  conflictResponse,
  json,
  notFoundResponse,
  problemResponse,
  problemResponses,
} from "./openapi_util.ts";
import { runPreflight } from "../preflight.ts";
import { problems } from "./problem.ts";
import { RunService } from "../runs/service.ts";
import { shareLink } from "./share.ts";
import { RunListQuery } from "./schemas_query.ts";

const Evidence = z.object({ snapshotId: z.string(), payloadSha256: z.string(), collectedAt: z.string() })
  .nullable();
const CheckResult = z.object({
  checkId: z.string(),
  description: z.string(),
  deviceId: z.uuid(),
  deviceHostname: z.string(),
  vendor: z.string(),
  pass: z.boolean(),
  status: z.enum(["pass", "fail", "skipped", "error"]).openapi({
    description: "`error`: the check could not read the payload (a fail distinguishable from a plain fail)",
  }),
  detail: z.string(),
  evidence: Evidence,
}).openapi("CheckResult");
export const PreflightResult = z.object({
  planIdentifier: z.string(),
  ranAt: z.string(),
  checksRun: z.number().int(),
  checksPassed: z.number().int(),
  checksFailed: z.number().int(),
  checksSkipped: z.number().int(),
  pass: z.boolean(),
  checks: z.array(CheckResult),
  summary: z.string(),
}).openapi("PreflightResult");

const PlanPhase = z.object({
  name: z.string(),
  durationS: z.number(),
  load: z.record(z.string(), z.union([z.number(), z.string()])),
});
const Plan = z.object({
  identifier: z.string(),
  displayName: z.string(),
  description: z.string(),
  tlsDecrypt: z.enum(["on", "off"]),
  sloTargetP99Ms: z.number(),
  deploymentMode: z.string(),
  phases: z.array(PlanPhase),
  vendors: z.array(z.string()),
  deviceRoles: z.array(z.string()),
  parameters: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
}).openapi("Plan");

const Alert = z.object({
  name: z.literal("TLSDecryptModeChanged"),
  at: z.string(),
  deviceId: z.string(),
  deviceHostname: z.string(),
  from: z.enum(["on", "off"]),
  to: z.enum(["on", "off"]),
  snapshotId: z.string(),
}).openapi("TLSDecryptModeChanged");
const Run = z.object({
  runId: z.string(),
  executionId: z.uuid(),
  planIdentifier: z.string(),
  planDisplayName: z.string(),
  planCatalogVersion: z.number().int(),
  planSnapshotSha256: z.string(),
  licenseId: z.string(),
  notes: z.string().nullable(),
  status: z.enum(["active", "finished"]),
  startedAt: z.string(),
  endedAt: z.string().nullable(),
  outcome: z.string().nullable(),
  preflightAtStart: z.object({
    pass: z.boolean(),
    summary: z.string(),
    checksRun: z.number().int(),
    checksPassed: z.number().int(),
    checksFailed: z.number().int(),
    checksSkipped: z.number().int(),
  }).openapi({ description: "The pre-flight result at start (in full: report annex preflight-at-start)" }),
  labAtStart: z.object({
    devices: z.array(z.object({
      id: z.string(),
      hostname: z.string(),
      vendor: z.string(),
      deviceRole: z.string().nullable(),
    })),
    decrypt: z.record(
      z.string(),
      z.object({
        state: z.enum(["on", "off", "unknown"]),
        snapshotId: z.string().nullable(),
        ruleCount: z.number().int().nullable(),
      }),
    ).openapi({
      description: "Per firewall device id: TLS-decrypt state from its latest decrypt_policy snapshot",
    }),
    tlsDecrypt: z.enum(["on", "off", "mixed", "unknown"]).openapi({
      description: "`on`/`off` when every firewall with a known state agrees, `mixed` when they differ",
    }),
  }),
  alerts: z.array(Alert),
  reportSha256: z.string().nullable(),
}).openapi("TestRun");

const planIdentifier = z.string().trim().min(1, "must not be empty").max(200);
const PreflightBody = z.object({ planIdentifier }).strict().openapi("PreflightRequest");
const StartBody = z.object({
  planIdentifier,
  licenseId: z.string().trim().min(1).max(100).regex(
    /^[A-Za-z0-9._-]+$/,
    "must be letters, digits, dot, dash or underscore",
  )
    .optional(),
  notes: z.string().max(10_000).nullable().optional(),
}).strict().openapi("StartRunRequest");

const finite = z.number().finite().min(0, "must be non-negative");
const K6Summary = z.object({
  metrics: z.object({
    http_req_duration: z.object({
      avg: finite,
      min: finite,
      med: finite,
      max: finite,
      "p(90)": finite.optional(),
      "p(95)": finite,
      "p(99)": finite.optional(),
    }, { message: "must be the http_req_duration trend of a k6 --summary-export file" }).passthrough()
      .refine((t) => t["p(99)"] !== undefined, {
        message: 'lacks p(99): run k6 with --summary-trend-stats "avg,min,med,max,p(90),p(95),p(99)"',
      }),
    http_reqs: z.object({ count: finite }).passthrough().optional(),
  }).passthrough(),
}).passthrough();
const FinishBody = z.object({
  outcome: z.enum(["passed", "failed", "aborted"]),
  results: z.union([
    z.object({ latencySamplesMs: z.array(finite).min(1, "must hold at least one sample").max(1_000_000) })
      .strict(),
    z.object({ k6Summary: K6Summary }).strict(),
  ], { message: "must be {latencySamplesMs: [...]} or {k6Summary: <k6 --summary-export JSON>}" }),
}).strict().openapi("FinishRunRequest");

const ExecParam = z.object({
  executionId: z.string().openapi({
    param: { name: "executionId", in: "path" },
    description: "Execution id (UUID)",
  }),
});
const body = <T>(schema: T) => ({ body: { content: { "application/json": { schema } }, required: true } });
const tags = ["Test runs"];

export function testRunRoutes(app: OpenAPIHono, svc: Services) {
  const runs = new RunService(svc.db.kysely, svc.registry, svc.config.DUT_DEFAULT_LICENSE_ID);

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
        "left out. Unknown planIdentifier: 404.",
      request: body(PreflightBody),
      responses: {
        200: json(PreflightResult, "Every check passed"),
        422: json(PreflightResult, "At least one check failed or was skipped"),
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
      return c.json(r, r.pass ? 200 : 422);
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
      request: body(StartBody),
      responses: { 201: json(Run, "Started"), ...problemResponses, ...notFoundResponse, ...conflictResponse },
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
          z.object({ runs: z.array(Run), nextCursor: z.string().nullable() }).openapi("TestRunPage"),
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
      request: { params: ExecParam },
      responses: { 200: json(Run, "The run"), ...problemResponses, ...notFoundResponse },
    }),
    async (c) => c.json(await runs.get(c.req.valid("param").executionId), 200),
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
      request: { params: ExecParam, ...body(FinishBody) },
      responses: {
        200: json(Run, "Finished"),
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
      request: { params: ExecParam },
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
      request: { params: ExecParam },
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

export { RunService };
