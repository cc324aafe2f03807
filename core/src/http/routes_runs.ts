import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Services } from "../runtime/services.ts";
import {
  conflictResponse,
  json,
  notFoundResponse,
  problemResponse,
  problemResponses,
} from "./openapi_util.ts";
import { planPreflight, runPreflight } from "../preflight/engine.ts";
import { resolveSelection } from "../preflight/selection.ts";
import { StartGateRefused } from "../runs/service.ts";
import { principalOf } from "./auth.ts";
import { OVERRIDE_START_GATE_ROLE, roleAllows } from "../access/tokens.ts";
import { noteForAudit } from "./audit.ts";
import { problems } from "./problem.ts";
import { shareLink } from "./share.ts";
import { RunListQuery } from "../api/schemas_query.ts";
import { FormatQuery, formatted, formattedContent } from "./formats.ts";
import { preflightResultSet, runResultSet } from "../formats/results.ts";
import {
  ExecutionIdParam,
  FinishRunRequest,
  Plan,
  PreflightPlan,
  PreflightRequest,
  PreflightResult,
  StartRunRequest,
  TestRun,
} from "../api/schemas.ts";

const body = <T>(schema: T) => ({ body: { content: { "application/json": { schema } }, required: true } });
const tags = ["Test runs"];

export function testRunRoutes(app: OpenAPIHono, svc: Services) {
  planRoutes(app, svc);
  runStartRoutes(app, svc);
  runFinishRoutes(app, svc);
  runReportRoutes(app, svc);
}

/** Plans and the pre-flight. */
function planRoutes(app: OpenAPIHono, svc: Services) {
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
        "Evaluates the latest stored snapshot per enabled device and label; never collects or contacts a " +
        "device. A failing evaluation (not a dry run, not asOf) writes a `dutlab.preflight.failed` webhook " +
        "event (docs/notifications.md), nothing else. 200 when every check passed; 422 (same body) when any failed or was skipped " +
        "(a skipped check means the lab is not known to be ready) or when no check applies. A check that " +
        "cannot read its payload gives status `error` (counted as failed), never a 500. Disabled devices are " +
        "left out. Unknown planIdentifier: 404. `?format=junit|markdown|csv` answers the same result (same " +
        'status) as JUnit XML, Markdown or CSV (docs/runs.md "Result formats"); a dry run answers JSON only.\n\n' +
        "**Filters** (optional): `devices` (ids or hostnames), `checks` (check ids), `tags` (a device must " +
        "carry every tag). Devices named and devices tagged are intersected. A filtered result carries " +
        "`selection` and says so in its `summary`; `pass` is true only when every evaluated check passed " +
        "**and** the filter left out no (check, device) pair the whole plan evaluates, so a filter never " +
        "turns a plan whose required devices or checks were left out into a pass. An unknown (or disabled) " +
        "device, an unknown check or a tag no device carries is a 400 naming it (`devices.0`, `checks.1`, `tags.0`).\n\n" +
        "**asOf** (ISO 8601 date-time, not later than now): the lab as it stood then: devices registered at " +
        "or before it (enabled now), per device and label the newest snapshot collected at or before it, " +
        "and `snapshot-fresh` judged against asOf instead of now.\n\n" +
        "**dryRun**: answers 200 with a PreflightPlan: every (device, check, label) triple that would be " +
        "evaluated and the snapshot it would read (null: none), without reading payloads or evaluating.",
      request: { query: FormatQuery, ...body(PreflightRequest) },
      responses: {
        200: {
          description: "Every check passed (PreflightResult), or a dry run's plan (PreflightPlan)",
          content: formattedContent(z.union([PreflightResult, PreflightPlan])),
        },
        422: {
          description: "At least one check failed or was skipped, or the filter left out part of the plan",
          content: formattedContent(PreflightResult),
        },
        ...problemResponses,
        ...notFoundResponse,
      },
    }),
    async (c) => {
      const { planIdentifier, checks, tags, dryRun, asOf, testbed } = c.req.valid("json");
      let { devices } = c.req.valid("json");
      if (testbed !== undefined) {
        const ids = (await svc.reservations.testbeds.get(testbed)).devices.map((d) => d.id);
        devices = [...(devices ?? []), ...ids];
      }
      const plan = svc.registry.plan(planIdentifier);
      if (!plan) {
        const known = svc.registry.planCatalog.plans.map((p) => p.identifier).join(", ") || "none";
        throw problems.notFound(`No plan with identifier "${planIdentifier}" (known plans: ${known})`);
      }
      const now = new Date();
      if (asOf && asOf.getTime() > now.getTime()) {
        throw problems.badRequest("asOf", `must not be later than now (${now.toISOString()})`);
      }
      const { format } = c.req.valid("query");
      if (dryRun && format && format !== "json") {
        throw problems.badRequest("format", "a dry run answers JSON only (it evaluates no check)");
      }
      const selection = await resolveSelection(svc.db.kysely, svc.registry, { devices, checks, tags });
      if (dryRun) {
        return c.json(await planPreflight(svc.db.kysely, svc.registry, plan, now, { asOf, selection }), 200);
      }
      const r = await runPreflight(svc.db.kysely, svc.registry, plan, now, { asOf, selection });
      // A failing evaluation of the lab as it stands is an event for the webhook subscribers (not a
      // historical one: asOf answers a question about the past).
      if (!r.pass && !asOf) await svc.runs.preflightFailedStandalone(r);
      return formatted(c, format, r, () => preflightResultSet(r), r.pass ? 200 : 422) as never;
    },
  );
}

/** Starting a run and listing runs. */
function runStartRoutes(app: OpenAPIHono, svc: Services) {
  const runs = svc.runs;
  app.openapi(
    createRoute({
      method: "post",
      path: "/api/test-runs",
      operationId: "startRun",
      tags,
      summary: "Start a test run",
      description:
        "Freezes the plan, records the lab state (devices, firewalls' TLS-decrypt state) and the pre-flight " +
        "result at start. Only one run is active at a time (409). While active, every stored snapshot carries " +
        "its executionId.\n\n" +
        '**Gating** (opt-in): a start is gated when the plan declares `startGate: "preflight-pass"` or the ' +
        "request sets `requirePreflightPass: true` (false cannot lift a plan's gate). A gated start whose " +
        "pre-flight does not pass answers 422 with the pre-flight result as its body and starts nothing. " +
        "`override: {reason}` starts it anyway: admin role only (403 for any other role, whatever the " +
        "pre-flight), recorded (reason, token name, role, time) in the audit entry's `detail`, on the run " +
        "(`startGate`), in the report (`startGate` and the verdict's `preflight` reason) and on the print " +
        "page. `override` on an ungated start: 400. Ungated starts behave as before.",
      request: body(StartRunRequest),
      responses: {
        201: json(TestRun, "Started"),
        422: json(
          PreflightResult,
          "Gated start refused: the pre-flight at start did not pass (nothing started)",
        ),
        ...problemResponses,
        ...notFoundResponse,
        ...conflictResponse,
      },
    }),
    async (c) => {
      const input = c.req.valid("json");
      const principal = principalOf(c);
      if (input.override && !(principal && roleAllows(principal.role, OVERRIDE_START_GATE_ROLE))) {
        throw problems.forbidden(
          `Overriding the start gate needs the ${OVERRIDE_START_GATE_ROLE} role; the token "${
            principal?.name ?? "unknown"
          }" has ${principal?.role ?? "no role"}`,
        );
      }
      const held = await runReservation(svc, input, principal?.name ?? "unknown");
      let run;
      try {
        // The report names the testbed the run holds (topology.testbed).
        run = await runs.start({ ...input, testbed: held?.testbed ?? input.testbed }, principal ?? null);
      } catch (e) {
        if (held?.taken) await svc.reservations.release(held.id, "the run's start was refused");
        if (e instanceof StartGateRefused) return c.json(e.preflight, 422);
        throw e;
      }
      if (held) await svc.reservations.bindRun(held.id, run.executionId);
      const o = run.startGate?.override;
      if (o) {
        noteForAudit(
          c,
          `started over a failed pre-flight (${run.preflightAtStart.summary}); start gate overridden by ` +
            `${o.by} (${o.role}), reason: ${JSON.stringify(o.reason)}`,
        );
      }
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
}

/** Reading a run and finishing it. */
function runFinishRoutes(app: OpenAPIHono, svc: Services) {
  const runs = svc.runs;
  app.openapi(
    createRoute({
      method: "get",
      path: "/api/test-runs/{executionId}",
      operationId: "getRun",
      tags,
      summary: "One test run",
      description: "`?format=junit|markdown|csv` answers the run's verdict as JUnit XML (one testcase per " +
        'verdict input; an active run has one skipped testcase), Markdown or CSV (docs/runs.md "Result formats").',
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
      const run = await runs.finish(
        executionId,
        c.req.valid("json"),
        svc.config.DUT_PUBLIC_URL ?? new URL(c.req.url).origin,
      );
      await svc.reservations.releaseRun(executionId); // the run's reservation ends with it
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
}

/** A run report and its sharing. */
function runReportRoutes(app: OpenAPIHono, svc: Services) {
  const runs = svc.runs;
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

/**
 * The reservation a run starts under (docs/reservations.md "Runs"): the held `reservationId` (409 when it is not
 * held, or is not of the named testbed), or the `testbed` reserved now for the run (`taken`: released again
 * when the start is refused). Null: the run names neither.
 */
async function runReservation(
  svc: Services,
  input: { testbed?: string; reservationId?: string; planIdentifier: string },
  who: string,
): Promise<{ id: string; taken: boolean; testbed?: string } | null> {
  if (input.reservationId) {
    const r = await svc.reservations.get(input.reservationId);
    if (r.state !== "held") throw problems.conflict(`The reservation ${r.id} is ${r.state}, not held`);
    if (input.testbed !== undefined && r.testbed !== input.testbed) {
      throw problems.conflict(
        `The reservation ${r.id} is of ${r.testbed ?? "a device list"}, not ${input.testbed}`,
      );
    }
    return { id: r.id, taken: false, testbed: r.testbed ?? undefined };
  }
  if (input.testbed === undefined) return null;
  const r = await svc.reservations.reserve({
    holder: who,
    purpose: `run of ${input.planIdentifier}`,
    testbed: input.testbed,
    leaseSeconds: 900,
  });
  return { id: r.id, taken: true, testbed: input.testbed };
}
