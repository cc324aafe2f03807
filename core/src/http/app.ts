import { OpenAPIHono } from "@hono/zod-openapi";
import { bodyLimit } from "hono/body-limit";
import { cors } from "hono/cors";
import { etag } from "hono/etag";
import { sql } from "kysely";
import type { Services } from "../runtime/services.ts";
import { requestId } from "hono/request-id";
import { bearerAuth } from "./auth.ts";
import { auditTrail } from "./audit.ts";
import { routeTemplate } from "./route.ts";
import { accessRoutes } from "./routes_access.ts";
import { webhookRoutes } from "./routes_webhooks.ts";
import { eventRoutes } from "./routes_events.ts";
import {
  notFound,
  onError,
  problemResponse,
  problemType,
  RETRY_AFTER_SECONDS,
  validationProblem,
  zodFieldErrors,
} from "./problem.ts";
import { deviceRoutes } from "./routes_devices.ts";
import { labRoutes } from "./routes_lab.ts";
import { netboxRoutes } from "./routes_netbox.ts";
import { reservationRoutes } from "./routes_reservations.ts";
import { snapshotRoutes } from "./routes_snapshots.ts";
import { diffRoutes } from "./routes_diffs.ts";
import { testRunRoutes } from "./routes_runs.ts";
import { reportPageRoutes } from "./routes_report_page.ts";
import { compareRoutes } from "./routes_compare.ts";
import { registerPlainRoutes, serveDocument } from "./openapi_doc.ts";
import { docsRoutes } from "./routes_docs.ts";
import { evidenceRoutes } from "./routes_evidence.ts";
import { reportSignatureRoutes } from "./routes_report_keys.ts";
import { backupRoutes } from "./routes_backup.ts";
import { SafeInput } from "./input_guard.ts";
import { literalRoutesFirst, methodNotAllowed, MethodTable } from "./methods.ts";

export type App = OpenAPIHono;

/** A new OpenAPIHono whose validation failures are 400 problem+json naming the fields. */
export function newRouter(): OpenAPIHono {
  return new OpenAPIHono({
    defaultHook: (result, c) => {
      const where = (result as { target?: string }).target === "query" ? "query" : "";
      if (!result.success) return validationProblem(c, zodFieldErrors(result.error, where));
      // One check for every body, query and path parameter of every route (input_guard.ts).
      const safe = SafeInput.safeParse(result.data);
      if (!safe.success) return validationProblem(c, zodFieldErrors(safe.error, where));
    },
  });
}

/** The HTTP API. Tests call `app.request(...)` in process. */
export function createApp(svc: Services): OpenAPIHono {
  const app = newRouter();
  app.onError(onError);
  const methods = new MethodTable(app);
  app.notFound((c) => {
    const allow = methods.allowed(c.req.path);
    return allow.length ? methodNotAllowed(c, allow) : notFound(c);
  });
  requestMiddleware(app, svc);
  probeRoutes(app, svc);
  apiAccess(app, svc);
  // After authentication (a 405 on an admin path is for a valid token, as every other answer there).
  app.use("*", literalRoutesFirst(methods));

  deviceRoutes(app, svc);
  labRoutes(app, svc);
  netboxRoutes(app, svc);
  reservationRoutes(app, svc);
  accessRoutes(app, svc);
  webhookRoutes(app, svc);
  eventRoutes(app, svc);
  snapshotRoutes(app, svc);
  reportSignatureRoutes(app, svc);
  evidenceRoutes(app, svc);
  diffRoutes(app, svc);
  // Before the runs: GET /api/test-runs/compare must not be taken for GET /api/test-runs/{executionId}.
  compareRoutes(app, svc);
  testRunRoutes(app, svc);
  reportPageRoutes(app, svc);
  backupRoutes(app, svc);

  docsRoutes(app);
  registerPlainRoutes(app);

  app.openAPIRegistry.registerComponent("securitySchemes", "adminBearer", {
    type: "http",
    scheme: "bearer",
    description:
      "The ADMIN_TOKEN of the service (bootstrap admin) or a named API token with role admin, operator or viewer",
  });
  serveDocument(app, svc);
  return app;
}

/** What every request passes through: metrics, request id, audit trail, CORS, body limit, UTF-8 check. */
function requestMiddleware(app: OpenAPIHono, svc: Services): void {
  app.use("*", async (c, next) => {
    const t0 = performance.now();
    // Background work (the poll worker and store) gives way while requests are answered (util/foreground.ts).
    const done = svc.foreground.enter();
    try {
      await next();
    } finally {
      done();
    }
    const labels = {
      method: c.req.method,
      route: routeTemplate(c) ?? "unmatched",
      status: String(c.res.status),
    };
    svc.metrics.httpRequests.inc(labels);
    svc.metrics.httpDuration.observe(labels, (performance.now() - t0) / 1000);
  });
  app.use("*", requestId({ limitLength: 100 }));
  app.use("*", auditTrail(svc));
  if (svc.config.DUT_CORS_ORIGINS.length) {
    app.use(
      "*",
      cors({
        origin: svc.config.DUT_CORS_ORIGINS,
        allowHeaders: ["Authorization", "Content-Type", "If-None-Match", "Last-Event-ID", "X-Request-Id"],
        allowMethods: ["GET", "POST", "PATCH", "DELETE", "OPTIONS"],
        exposeHeaders: ["X-Report-Sha256", "X-License", "X-Report-Signature-Key", "ETag", "X-Request-Id"],
        maxAge: 600,
      }),
    );
  }
  app.use(
    "*",
    bodyLimit({
      maxSize: svc.config.DUT_BODY_LIMIT_BYTES,
      onError: (c) =>
        problemResponse(c, {
          type: problemType("payload-too-large"),
          title: "Payload too large",
          status: 413,
          detail: `Request bodies are limited to ${svc.config.DUT_BODY_LIMIT_BYTES} bytes`,
          instance: c.req.path,
        }),
    }),
  );
  // A JSON body must be valid UTF-8: decoding would otherwise replace bad bytes with U+FFFD, a silent change.
  app.use("*", async (c, next) => {
    if (c.req.raw.body && /json/i.test(c.req.header("content-type") ?? "")) {
      try {
        new TextDecoder("utf-8", { fatal: true }).decode(await c.req.arrayBuffer());
      } catch (e) {
        if (!(e instanceof TypeError)) throw e; // e.g. the body limit, answered 413 by its middleware
        return problemResponse(c, {
          type: problemType("malformed-json"),
          title: "Malformed JSON in request body",
          status: 400,
          detail: "The request body is not valid UTF-8",
          instance: c.req.path,
        });
      }
    }
    await next();
  });
}

/** Liveness, readiness and metrics. */
function probeRoutes(app: OpenAPIHono, svc: Services): void {
  app.get("/healthz", (c) => c.json({ status: "ok" }));
  app.get("/readyz", async (c) => {
    try {
      await sql`select 1`.execute(svc.db.kysely);
      return c.json({ status: "ready", database: svc.db.kind });
    } catch {
      c.header("Retry-After", String(RETRY_AFTER_SECONDS));
      return problemResponse(c, {
        type: problemType("not-ready"),
        title: "Not ready",
        status: 503,
        detail: "The database is not reachable",
      });
    }
  });
  app.get("/metrics", async (c) => {
    return c.text(await svc.metrics.render(), 200, { "content-type": svc.metrics.contentType });
  });
}

/** ETags and authentication of the API paths. */
function apiAccess(app: OpenAPIHono, svc: Services): void {
  // Strong validators on every read of the API: a client sending If-None-Match with the last ETag gets a
  // bodiless 304 when the representation is byte-for-byte unchanged.
  const tag = etag({ generateDigest: (body) => crypto.subtle.digest("SHA-256", body) });
  app.use("/api/admin/*", tag);
  app.use("/api/test-runs", tag);
  app.use("/api/test-runs/*", tag);

  const auth = bearerAuth(svc);
  app.use("/api/admin/*", auth);
  app.use("/api/test-runs", auth);
  // report.pdf, the evidence bundle and the attestations have the print page's access rule (token or share
  // link): routes_report_keys.ts and routes_evidence.ts.
  app.use(
    "/api/test-runs/*",
    (c, next) => /\/(report\.pdf|evidence|attestations)$/.test(c.req.path) ? next() : auth(c, next),
  );
  app.use("/api/events", auth);
}
