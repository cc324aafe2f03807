import { OpenAPIHono } from "@hono/zod-openapi";
import { bodyLimit } from "hono/body-limit";
import { cors } from "hono/cors";
import { sql } from "kysely";
import type { Services } from "../services.ts";
import { adminAuth } from "./auth.ts";
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
import { snapshotRoutes } from "./routes_snapshots.ts";
import { testRunRoutes } from "./routes_runs.ts";
import { reportPageRoutes } from "./routes_report_page.ts";
import { CORE_VERSION } from "../version.ts";
import { SafeInput } from "./input_guard.ts";

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
  app.notFound(notFound);
  if (svc.config.DUT_CORS_ORIGINS.length) {
    app.use(
      "*",
      cors({
        origin: svc.config.DUT_CORS_ORIGINS,
        allowHeaders: ["Authorization", "Content-Type"],
        allowMethods: ["GET", "POST", "PATCH", "DELETE", "OPTIONS"],
        exposeHeaders: ["X-Report-Sha256", "X-License"],
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
  app.get("/metrics", (c) => {
    svc.metrics.lockHeld.set(svc.worker?.holdsLock ? 1 : 0);
    return c.text(svc.metrics.render(), 200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
  });

  const admin = adminAuth(svc.config.ADMIN_TOKEN);
  app.use("/api/admin/*", admin);
  app.use("/api/test-runs", admin);
  app.use("/api/test-runs/*", admin);

  deviceRoutes(app, svc);
  snapshotRoutes(app, svc);
  testRunRoutes(app, svc);
  reportPageRoutes(app, svc);

  app.openAPIRegistry.registerComponent("securitySchemes", "adminBearer", {
    type: "http",
    scheme: "bearer",
    description: "The ADMIN_TOKEN of the service",
  });
  app.doc31("/api/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "dutlab API",
      version: CORE_VERSION,
      description:
        "Device-under-test registry, polling worker, pre-flight checks and run reports. Errors are RFC 9457 " +
        "application/problem+json documents with a stable `type` (urn:dutlab:problem:<slug>), the HTTP " +
        "`status` and, for validation problems, `errors: [{field, message}]`.",
    },
    security: [{ adminBearer: [] }],
  });
  return app;
}
