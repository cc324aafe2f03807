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
  validationProblem,
  zodFieldErrors,
} from "./problem.ts";
import { deviceRoutes } from "./routes_devices.ts";
import { snapshotRoutes } from "./routes_snapshots.ts";
import { testRunRoutes } from "./routes_runs.ts";
import { reportPageRoutes } from "./routes_report_page.ts";
import { reportSignatureRoutes } from "./routes_report_keys.ts";
import { CORE_VERSION } from "../version.ts";

export type App = OpenAPIHono;

/** A new OpenAPIHono whose validation failures are 400 problem+json naming the fields. */
export function newRouter(): OpenAPIHono {
  return new OpenAPIHono({
    defaultHook: (result, c) => {
      if (!result.success) {
        const where = (result as { target?: string }).target;
        return validationProblem(c, zodFieldErrors(result.error, where === "query" ? "query" : ""));
      }
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
        exposeHeaders: ["X-Report-Sha256", "X-License", "X-Report-Signature-Key"],
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

  app.get("/healthz", (c) => c.json({ status: "ok" }));
  app.get("/readyz", async (c) => {
    try {
      await sql`select 1`.execute(svc.db.kysely);
      return c.json({ status: "ready", database: svc.db.kind });
    } catch {
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
  // report.pdf has the print page's access rule (token or share link): routes_report_keys.ts.
  app.use("/api/test-runs/*", (c, next) => /\/report\.pdf$/.test(c.req.path) ? next() : admin(c, next));

  deviceRoutes(app, svc);
  snapshotRoutes(app, svc);
  reportSignatureRoutes(app, svc);
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
