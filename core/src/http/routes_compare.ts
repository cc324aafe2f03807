/**
 * N-run comparison (docs/runs.md "Comparing runs"): `POST /api/test-runs/compare` answers the comparison object,
 * `GET /runs/compare?ids=...` its print page. Both only read: a viewer token may call them (access.ts
 * READ_POSTS); the POST is recorded in the audit log like every POST (audit.ts).
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Services } from "../runtime/services.ts";
import { conflictResponse, problemResponse, problemResponses } from "./openapi_util.ts";
import { bearerAuth } from "./auth.ts";
import { validationProblem, zodFieldErrors } from "./problem.ts";
import {
  compareReports,
  type Comparison,
  loadFinishedReports,
  MAX_COMPARED_RUNS,
  MIN_COMPARED_RUNS,
  REGRESSION_THRESHOLDS,
} from "../report/results/compare.ts";
import { type CompareLicences, renderComparePage } from "../report/render/compare_page.tsx";
import { problems } from "./problem.ts";
import { FormatQuery, formatted, formattedContent } from "./formats.ts";
import { comparisonResultSet } from "../formats/results.ts";

const uuid = z.uuid("must be a UUID");
/** What `uuid` accepts, without anchors (zod's grammar). */
const UUID = z.regexes.uuid().source.replace(/^\^|\$$/g, "");

/** 2-20 distinct UUIDs (compared case-insensitively); each problem names its index. */
const executionIds = z.array(uuid)
  .min(MIN_COMPARED_RUNS, `must hold at least ${MIN_COMPARED_RUNS} executionIds`)
  .max(MAX_COMPARED_RUNS, `must hold at most ${MAX_COMPARED_RUNS} executionIds`)
  .superRefine((ids, ctx) => {
    const seen = new Map<string, number>();
    ids.forEach((id, i) => {
      const k = id.toLowerCase();
      if (seen.has(k)) {
        ctx.addIssue({ code: "custom", path: [i], message: `duplicates executionIds[${seen.get(k)}]` });
      } else seen.set(k, i);
    });
  });

const CompareBody = z.object({
  executionIds: executionIds.openapi({
    description: `The runs to compare: ${MIN_COMPARED_RUNS} to ${MAX_COMPARED_RUNS} distinct executionIds ` +
      "(distinct also when compared case-insensitively)",
    uniqueItems: true,
  }),
  baseline: uuid.optional().openapi({
    description: "The run the others are measured against; one of executionIds (default: the oldest run)",
  }),
}).strict().openapi("CompareRunsRequest");

const Kpi = z.object({
  value: z.number().nullable(),
  delta: z.number().nullable(),
  deltaPct: z.number().nullable(),
  regression: z.boolean(),
}).openapi("ComparedKpi");
const ComparedRun = z.object({
  executionId: z.uuid(),
  runId: z.string(),
  reportSha256: z.string(),
  planIdentifier: z.string(),
  planSnapshotSha256: z.string(),
  licenseId: z.string(),
  startedAt: z.string(),
  endedAt: z.string(),
  outcome: z.string(),
  isBaseline: z.boolean(),
  kpis: z.object({
    p50Ms: Kpi,
    p95Ms: Kpi,
    p99Ms: Kpi,
    throughputRps: Kpi,
    errorRatePct: Kpi,
    verdict: z.object({
      value: z.enum(["pass", "fail", "invalid", "inconclusive"]).nullable(),
      worseThanBaseline: z.boolean(),
    }),
  }),
  regression: z.boolean(),
  regressionReasons: z.array(z.string()),
  planDiffers: z.boolean(),
  planChanges: z.array(z.object({ path: z.string(), baseline: z.unknown(), value: z.unknown() })),
  lab: z.object({
    devicesAdded: z.array(z.object({ id: z.string(), hostname: z.string(), vendor: z.string() })),
    devicesRemoved: z.array(z.object({ id: z.string(), hostname: z.string(), vendor: z.string() })),
    inventoryChanged: z.array(z.object({
      deviceId: z.string(),
      hostname: z.string(),
      field: z.enum(["model", "softwareVersion", "serialNumber"]),
      baseline: z.string().nullable(),
      value: z.string().nullable(),
    })),
  }),
  labDiffers: z.boolean(),
}).openapi("ComparedRun");
const ComparisonSchema = z.object({
  version: z.literal(1),
  rule: z.string(),
  baselineExecutionId: z.uuid(),
  thresholds: z.object({
    latencyPct: z.number(),
    throughputPct: z.number(),
    errorRatePoints: z.number(),
  }),
  runs: z.array(ComparedRun),
  summary: z.object({
    runs: z.number().int(),
    regressions: z.array(z.uuid()),
    planDiffers: z.array(z.uuid()),
    labDiffers: z.array(z.uuid()),
  }),
  comparisonSha256: z.string(),
}).openapi("RunComparison");

const DESCRIPTION =
  "Compares 2 to 20 finished runs from their frozen reports and changes nothing (a viewer " +
  "may call it; like every POST it is recorded in the audit log, without its body). Runs are listed oldest first; each cites its executionId and reportSha256. " +
  "KPIs side by side (p50/p95/p99 from results.aggregate, throughput from results.figures.requestsPerSecond, " +
  "error rate from results.figures.errorRatePct, the verdict) with the delta against the baseline (default: " +
  `the oldest run). A run is a regression when p50, p95 or p99 is more than ${REGRESSION_THRESHOLDS.latencyPct} ` +
  `% above the baseline's, throughput more than ${REGRESSION_THRESHOLDS.throughputPct} % below, the error ` +
  `rate more than ${REGRESSION_THRESHOLDS.errorRatePoints} percentage point above, or the verdict is more ` +
  "severe. Runs whose planSnapshotSha256 differs from the baseline's are flagged with every plan leaf that " +
  "differs; lab differences (devices added or removed, model, software version or serial number changed) come " +
  "from each report's topology at start. comparisonSha256 is the SHA-256 of the RFC 8785 canonical JSON of " +
  "the object without it: the same runs and baseline give the same hash. 400: fewer than 2 or more than 20 " +
  "ids, a duplicate, a non-UUID, or a baseline not among the ids; 404: an unknown id (all named); 409: a run " +
  "that has not finished (all named in unfinishedExecutionIds).";

const FORMAT_NOTE =
  " `?format=junit|markdown|csv` answers the comparison as JUnit XML (one testcase per run, " +
  'a regression fails), Markdown or CSV (docs/runs.md "Result formats").';

async function compare(svc: Services, ids: string[], baseline?: string) {
  const lower = ids.map((i) => i.toLowerCase());
  const base = baseline?.toLowerCase();
  if (base !== undefined && !lower.includes(base)) {
    throw problems.badRequest("baseline", "must be one of executionIds");
  }
  const reports = await loadFinishedReports(svc.db.kysely, lower);
  const cmp: Comparison = await compareReports(reports, base);
  const licences = new Map<string, CompareLicences[number]>();
  for (const r of cmp.runs) {
    const rep = reports.find((x) => x.meta.executionId === r.executionId)!;
    if (!licences.has(rep.license.id)) licences.set(rep.license.id, rep.license);
  }
  return { cmp, licences: [...licences.values()] };
}

const PageQuery = z.object({
  ids: z.string().max(20 * 40).transform((s) => s.split(",").map((x) => x.trim()).filter(Boolean))
    .pipe(executionIds),
  baseline: uuid.optional(),
});

/**
 * The GET forms' query as documented: `ids` as a string whose pattern holds 2 to 20 comma-separated UUIDs
 * (the routes read it with {@link PageQuery}, which also trims spaces and refuses duplicates).
 */
const PageQueryDoc = z.object({
  ids: z.string().openapi({
    description: `Comma-separated executionIds (${MIN_COMPARED_RUNS} to ${MAX_COMPARED_RUNS}, distinct)`,
    pattern: `^${UUID}(,${UUID}){${MIN_COMPARED_RUNS - 1},${MAX_COMPARED_RUNS - 1}}$`,
  }),
  baseline: z.string().optional().openapi({
    description: "executionId of the baseline (default: oldest); one of ids",
    format: "uuid",
  }),
});

export function compareRoutes(app: OpenAPIHono, svc: Services) {
  compareApiRoutes(app, svc);
  comparePageRoutes(app, svc);
}

/** The comparison API: compare runs, read a stored comparison. */
function compareApiRoutes(app: OpenAPIHono, svc: Services) {
  app.openapi(
    createRoute({
      method: "post",
      path: "/api/test-runs/compare",
      operationId: "compareRuns",
      tags: ["Test runs"],
      summary: "Compare finished runs (KPIs, plan and lab differences)",
      description: DESCRIPTION + FORMAT_NOTE,
      request: {
        query: FormatQuery,
        body: { content: { "application/json": { schema: CompareBody } }, required: true },
      },
      responses: {
        200: { description: "The comparison", content: formattedContent(ComparisonSchema) },
        ...problemResponses,
        404: problemResponse("An executionId names no run"),
        ...conflictResponse,
      },
    }),
    async (c) => {
      const { executionIds, baseline } = c.req.valid("json");
      const { cmp } = await compare(svc, executionIds, baseline);
      return formatted(c, c.req.valid("query").format, cmp, () => comparisonResultSet(cmp), 200) as never;
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/api/test-runs/compare",
      operationId: "getRunComparison",
      tags: ["Test runs"],
      summary: "Compare finished runs (the GET form, for links and CI)",
      description: "compareRuns with the runs in the query: `ids` is a comma-separated list of 2 to 20 " +
        "executionIds (problems name the position: `query.ids.2`), `baseline` optional. Same rules and " +
        "answers." + FORMAT_NOTE,
      request: {
        query: PageQueryDoc.extend(FormatQuery.shape),
      },
      responses: {
        200: { description: "The comparison", content: formattedContent(ComparisonSchema) },
        ...problemResponses,
        404: problemResponse("An executionId names no run"),
        ...conflictResponse,
      },
    }),
    async (c) => {
      const raw = c.req.valid("query");
      const q = PageQuery.safeParse({ ids: raw.ids, baseline: raw.baseline });
      if (!q.success) return validationProblem(c, zodFieldErrors(q.error, "query")) as never;
      const { cmp } = await compare(svc, q.data.ids, q.data.baseline);
      return formatted(c, raw.format, cmp, () => comparisonResultSet(cmp), 200) as never;
    },
  );
}

/** The comparison page (HTML) and its OpenAPI description. */
function comparePageRoutes(app: OpenAPIHono, svc: Services) {
  app.get("/runs/compare", bearerAuth(svc), async (c) => {
    const q = PageQuery.safeParse({ ids: c.req.query("ids") ?? "", baseline: c.req.query("baseline") });
    if (!q.success) {
      // `ids` problems name the position in the comma-separated list: query.ids.2.
      return validationProblem(c, zodFieldErrors(q.error, "query"));
    }
    const { cmp, licences } = await compare(svc, q.data.ids, q.data.baseline);
    return c.html(renderComparePage(cmp, licences), 200, {
      "x-comparison-sha256": cmp.comparisonSha256,
      "cache-control": "private, no-store",
      "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
      "referrer-policy": "no-referrer",
    });
  });

  app.openAPIRegistry.registerPath({
    method: "get",
    path: "/runs/compare",
    operationId: "getRunComparisonPage",
    tags: ["Reports"],
    summary: "Print page of a run comparison",
    description:
      "Server-rendered HTML (A4, page n of N, the licence footer of the report page; no script): the KPI " +
      "table with regressions flagged, SVG charts of the KPIs across runs, the runs cited with their " +
      "reportSha256, plan and lab differences, and each licence's restrictions. Bearer token (any role). " +
      "`ids` is a comma-separated list of 2 to 20 executionIds; the same rules and answers as compareRuns.",
    request: { query: PageQueryDoc },
    responses: {
      200: {
        description: "The comparison page",
        headers: z.object({ "X-Comparison-Sha256": z.string() }),
        content: { "text/html": { schema: z.string() } },
      },
      400: problemResponse("Bad ids or baseline"),
      401: problemResponse("No valid bearer token"),
      404: problemResponse("An executionId names no run"),
      409: problemResponse("A run has not finished"),
    },
  });
}
