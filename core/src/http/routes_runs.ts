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
import { k6Issues } from "../runs/k6.ts";
import { RunListQuery } from "./schemas_query.ts";
import { capJsonSize } from "./input_guard.ts";

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
  maxErrorRatePct: z.number().optional().openapi({
    description: "Highest acceptable share of failed requests in percent (verdict input `error-rate`)",
  }),
  deploymentMode: z.string(),
  phases: z.array(PlanPhase),
  vendors: z.array(z.string()),
  deviceRoles: z.array(z.string()),
  checks: z.array(z.string()).optional().openapi({
    description: "Opt-in checks the plan runs besides every check that applies (absent: none)",
  }),
  dependsOn: z.array(z.object({ deviceRole: z.string(), labels: z.array(z.string()) })).optional().openapi({
    description: "Per device role, the snapshot labels whose drift during a run makes the verdict input " +
      "`configuration-drift` invalid (absent: drift never affects the verdict)",
  }),
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
  customer: z.string().nullable(),
  labName: z.string().nullable(),
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
    inventory: z.record(
      z.string(),
      z.object({
        status: z.enum(["read", "no-snapshot", "unreadable", "not-supported"]),
        model: z.string().nullable(),
        softwareVersion: z.string().nullable(),
        serialNumber: z.string().nullable(),
        snapshotId: z.string().nullable(),
        payloadSha256: z.string().nullable(),
      }),
    ).optional().openapi({ description: "Per device id: what its adapter's inventory fact read at start" }),
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
  verdict: z.object({
    value: z.enum(["pass", "fail", "invalid", "inconclusive"]),
    reasons: z.array(z.object({
      input: z.string(),
      effect: z.enum(["pass", "fail", "invalid", "inconclusive", "none"]),
      detail: z.string(),
    })),
  }).nullable().openapi({
    description: "The frozen report's verdict (null while active or in older reports)",
  }),
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
  customer: z.string().trim().min(1, "must not be empty").max(200).nullable().optional().openapi({
    description: "The customer (licensee) the report is issued to; the licence text names it",
  }),
}).strict().openapi("StartRunRequest");

/** Latencies (ms) are at most one day: sums of a million samples stay finite and exact enough. */
export const MAX_LATENCY_MS = 86_400_000;
/** A k6 summary (members kept as sent) is capped, as JSON, at 256 KiB. */
export const MAX_K6_SUMMARY_BYTES = 256 * 1024;
const finite = z.number().finite().min(0, "must be non-negative")
  .max(MAX_LATENCY_MS, `must be at most ${MAX_LATENCY_MS} (one day in ms)`);
const count = z.number().int("must be a whole number").min(0, "must be non-negative")
  .max(1e12, "must be at most 1e12");
const K6Summary = z.object({ metrics: z.record(z.string(), z.unknown()) }).passthrough()
  .superRefine((v, ctx) => {
    for (const i of k6Issues(v)) ctx.addIssue({ code: "custom", path: i.path, message: i.message });
  })
  .openapi({
    description:
      "A k6 summary: the `--summary-export` JSON, or the JSON of `handleSummary(data)`. Required " +
      "metrics: http_req_duration (with p(99): --summary-trend-stats), http_reqs, http_req_failed; read when " +
      "present: data_sent, data_received, iterations, checks and every metric's thresholds.",
  });
const RawResults = z.object({
  latencySamplesMs: z.array(finite).min(1, "must hold at least one sample").max(1_000_000),
  requests: count.optional().openapi({ description: "Requests sent (default: the number of samples)" }),
  failedRequests: count.optional().openapi({ description: "Requests that failed" }),
  bytesSent: count.optional(),
  bytesReceived: count.optional(),
  durationS: finite.optional().openapi({ description: "Duration of the load in seconds" }),
}).strict().superRefine((v, ctx) => {
  const requests = v.requests ?? v.latencySamplesMs.length;
  if (v.failedRequests !== undefined && v.failedRequests > requests) {
    ctx.addIssue({
      code: "custom",
      path: ["failedRequests"],
      message: `must not exceed requests (${requests})`,
    });
  }
});
const FinishBody = z.object({
  outcome: z.enum(["passed", "failed", "aborted"]),
  results: z.union([
    RawResults,
    z.object({ k6Summary: capJsonSize(K6Summary, MAX_K6_SUMMARY_BYTES) }).strict(),
  ], { message: "must be {latencySamplesMs: [...]} or {k6Summary: <k6 summary JSON>}" }),
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
  const runs = new RunService(
    svc.db.kysely,
    svc.registry,
    svc.config.DUT_DEFAULT_LICENSE_ID,
    svc.config.DUT_LAB_NAME,
  );

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
