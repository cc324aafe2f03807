import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Services } from "../runtime/services.ts";
import { CORE_VERSION } from "../version.ts";
import { INPUT_LIMITS } from "./input_guard.ts";
import { json, problemResponse } from "./openapi_util.ts";
import { refusedRoles, requiredRole } from "../access/tokens.ts";
import { ShareLinkQuery } from "./share.ts";
import { type DocumentEnums, documentEnums, tightenDocument } from "./openapi_strict.ts";

/** OpenAPI 3.1 licence object (`identifier` is an SPDX expression; the library's types are 3.0's). */
const LICENSE = {
  name: "Proprietary, internal use of the lab operator",
  identifier: "LicenseRef-dutlab-internal",
} as { name: string };

/** Tags of the document, in display order, with what they group. */
const TAGS = [
  {
    name: "Devices",
    description: "Devices under test: registration, credentials, connection tests, manual polls",
  },
  {
    name: "Lab",
    description:
      "The lab as code: a lab file's JSON Schema, its plan (dry run) and its apply in one transaction " +
      "(docs/lab-as-code.md)",
  },
  { name: "Snapshots", description: "Append-only, hashed snapshots the poller collects" },
  { name: "Test runs", description: "Test-plan catalog, pre-flight, runs and their frozen reports" },
  { name: "Reports", description: "Human-readable report pages" },
  { name: "Events", description: "Live change notifications (Server-Sent Events)" },
  { name: "Access", description: "API tokens with roles, and the audit log of every state-changing request" },
  { name: "Webhooks", description: "Signed webhook subscriptions, their delivery log, redelivery and ping" },
  { name: "Operations", description: "Health, readiness, metrics and this document" },
];

const DESCRIPTION =
  "Device-under-test registry, polling worker, pre-flight checks and run reports. Errors are RFC 9457 " +
  "application/problem+json documents with a stable `type` (urn:dutlab:problem:<slug>), the HTTP `status` " +
  "and, for validation problems, `errors: [{field, message}]`. Reads answer with a strong `ETag`; send it " +
  "back in `If-None-Match` to get a bodiless 304 when nothing changed. A known path called with a method it " +
  "does not support answers 405 with `Allow`. Lists that grow page with `limit` and an opaque `cursor` " +
  "(`nextCursor` of the previous page, null on the last).\n\n" +
  "**What the schemas cannot say.** Every request obeys limits no schema repeats (docs/http-api.md " +
  '"Input limits"): no string or member name holds NUL or a lone UTF-16 surrogate, no number is beyond ' +
  `${INPUT_LIMITS.maxAbsNumber} in magnitude, no body nests deeper than ${INPUT_LIMITS.maxDepth} levels; ` +
  "each is a 400 naming the field. Vendors, device roles, check ids and plan ids are the enums of the " +
  "modules this instance runs. Rules that depend on stored data (a duplicate hostname or token name: 409; " +
  "an id, hostname or tag that names nothing: 404 or 400 as each operation says) or on two fields together " +
  "(each operation's description names them) are business rules, not schema.";

/** Every route applies DUT_BODY_LIMIT_BYTES, a GET with a body included. */
const tooLarge = { 413: problemResponse("Request body over DUT_BODY_LIMIT_BYTES (also on a GET)") };

const text = (description: string, type: string) => ({
  description,
  content: { [type]: { schema: z.string() } },
});

/** The routes served outside `app.openapi` (plain Hono handlers), so that the document names every route. */
export function registerPlainRoutes(app: OpenAPIHono): void {
  registerProbeRoutes(app);
  registerDocRoutes(app);
  registerPageRoutes(app);
}

/** Liveness, readiness, metrics. */
function registerProbeRoutes(app: OpenAPIHono) {
  const r = app.openAPIRegistry;
  r.registerPath({
    method: "get",
    path: "/healthz",
    operationId: "getHealth",
    tags: ["Operations"],
    summary: "Liveness",
    description: "200 while the process serves HTTP; it does not touch the database.",
    security: [],
    responses: { 200: json(z.object({ status: z.literal("ok") }), "Alive"), ...tooLarge },
  });
  r.registerPath({
    method: "get",
    path: "/readyz",
    operationId: "getReadiness",
    tags: ["Operations"],
    summary: "Readiness",
    description: "200 when the database answers a query; 503 problem otherwise.",
    security: [],
    responses: {
      200: json(
        z.object({ status: z.literal("ready"), database: z.enum(["pglite", "postgres"]) }),
        "Ready",
      ),
      503: problemResponse("The database is not reachable"),
      ...tooLarge,
    },
  });
  r.registerPath({
    method: "get",
    path: "/metrics",
    operationId: "getMetrics",
    tags: ["Operations"],
    summary: "Prometheus metrics",
    description:
      "Prometheus text exposition format 0.0.4: process metrics, HTTP request count and duration by route " +
      'template and status, poller metrics and refused token attempts (docs/http-api.md "Metrics").',
    security: [],
    responses: { 200: text("Metrics", "text/plain"), ...tooLarge },
  });
}

/** The OpenAPI document, the API reference page and its assets. */
function registerDocRoutes(app: OpenAPIHono) {
  const r = app.openAPIRegistry;
  r.registerPath({
    method: "get",
    path: "/api/openapi.json",
    operationId: "getOpenApiDocument",
    tags: ["Operations"],
    summary: "This OpenAPI 3.1 document",
    security: [],
    responses: { 200: json(z.object({}).passthrough(), "The OpenAPI document"), ...tooLarge },
  });
  r.registerPath({
    method: "get",
    path: "/api/docs",
    operationId: "getApiReference",
    tags: ["Operations"],
    summary: "API reference page",
    description:
      "An HTML reference of this document rendered by Swagger UI (npm swagger-ui-dist, served by the service " +
      "itself under /api/docs/assets/, no CDN).",
    security: [],
    responses: { 200: text("HTML page", "text/html"), ...tooLarge },
  });
  r.registerPath({
    method: "get",
    path: "/api/docs/assets/{file}",
    operationId: "getApiReferenceAsset",
    tags: ["Operations"],
    summary: "Static file of the API reference page",
    security: [],
    request: {
      params: z.object({
        file: z.enum(["swagger-ui-bundle.js", "swagger-ui.css", "init.js"]).openapi({
          param: { name: "file", in: "path" },
        }),
      }),
    },
    responses: {
      200: {
        description: "`swagger-ui-bundle.js` and `init.js` as text/javascript, `swagger-ui.css` as text/css",
        content: {
          "text/javascript": {
            schema: z.string().openapi({ description: "swagger-ui-bundle.js, init.js" }),
          },
          "text/css": { schema: z.string().openapi({ description: "swagger-ui.css" }) },
        },
      },
      404: problemResponse("No such file"),
      ...tooLarge,
    },
  });
}

/** The report verifier and the report page. */
function registerPageRoutes(app: OpenAPIHono) {
  const r = app.openAPIRegistry;
  r.registerPath({
    method: "get",
    path: "/verify-report.ts",
    operationId: "getReportVerifier",
    tags: ["Reports"],
    summary: "The standalone report verifier",
    description:
      "tools/verify_report.ts, one self-contained file with pinned npm: imports: save it anywhere and run " +
      '`npx -y deno@2.9.6 run -A verify_report.ts report.pdf --key key.pem` (docs/reports.md "Verifying a report").',
    security: [],
    responses: {
      200: text("TypeScript source", "text/typescript"),
      413: problemResponse("Request body over DUT_BODY_LIMIT_BYTES (also on a GET)"),
      503: problemResponse("The verifier file is not deployed with this service"),
    },
  });
  r.registerPath({
    method: "get",
    path: "/runs/{executionId}/report",
    operationId: "getRunReportPage",
    tags: ["Reports"],
    summary: "Print page of a finished run",
    description:
      "Server-rendered HTML (A4, page n of N, licence footer). Opened with a bearer token or with a signed " +
      "share link from `shareRunReport` (`exp` and `sig` query parameters). A request with an " +
      "`Authorization` header is judged by its token alone (share-link parameters beside it are ignored). " +
      "No token and no link: 401; a tampered or expired link: 403; an unknown or unfinished run: 404.",
    security: [{ adminBearer: [] }, {}],
    request: {
      params: z.object({
        executionId: z.string().openapi({ param: { name: "executionId", in: "path" }, format: "uuid" }),
      }),
      query: ShareLinkQuery,
    },
    responses: {
      200: text("The report page", "text/html"),
      401: problemResponse("Neither a token nor a share link"),
      403: problemResponse("The share link is invalid or has expired"),
      404: problemResponse("Unknown or unfinished run"),
    },
  });
}

/**
 * `GET /api/openapi.json`: the document, with `servers` naming where this instance is reached and the
 * enums of the registry the service was built with.
 */
export function serveDocument(app: OpenAPIHono, svc: Services): void {
  const enums = documentEnums(svc.registry);
  let cache: { origin: string; doc: unknown } | undefined;
  app.get("/api/openapi.json", (c: Context) => {
    const origin = svc.config.DUT_PUBLIC_URL?.replace(/\/+$/, "") ?? new URL(c.req.url).origin;
    if (cache?.origin !== origin) cache = { origin, doc: buildDocument(app, origin, enums) };
    return c.json(cache.doc as Record<string, unknown>);
  });
}

/** The document of `app`'s routes, served at `origin`, with the registry's `enums` (openapi_strict.ts). */
export function buildDocument(
  app: OpenAPIHono,
  origin: string,
  enums: DocumentEnums,
): Record<string, unknown> {
  const doc = app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: {
      title: "dutlab API",
      version: CORE_VERSION,
      description: DESCRIPTION,
      license: LICENSE,
    },
    servers: [{ url: origin, description: "This instance (DUT_PUBLIC_URL, or the origin of the request)" }],
    tags: TAGS,
    security: [{ adminBearer: [] }],
  }) as unknown as Record<string, unknown> & { paths: Record<string, Record<string, Operation>> };
  // Routes added without an explicit name still get a stable one, so that generated clients never have to
  // invent names (method + path words, e.g. getApiReportKeys).
  const used = new Set<string>();
  const tagNames = new Set(TAGS.map((t) => t.name));
  const extraTags: Array<{ name: string; description: string }> = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (typeof op !== "object" || op === null || !("responses" in op)) continue;
      op.operationId ??= method + path.split(/[^A-Za-z0-9]+/).filter(Boolean)
        .map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join("");
      used.add(op.operationId);
      for (const t of op.tags ?? []) {
        if (!tagNames.has(t)) {
          tagNames.add(t);
          extraTags.push({ name: t, description: `Operations tagged ${t}` });
        }
      }
    }
  }
  declareRoleRefusals(doc.paths);
  tightenDocument(doc, enums);
  const usedTags = new Set(
    Object.values(doc.paths).flatMap((item) => Object.values(item).flatMap((op) => op?.tags ?? [])),
  );
  doc.tags = [...TAGS, ...extraTags].filter((t) => usedTags.has(t.name));
  return doc;
}

interface Operation {
  operationId?: string;
  tags?: string[];
  security?: unknown[];
  responses?: Record<string, { description: string; content?: unknown }>;
}

/**
 * A 403 problem on every operation that some token role is refused, derived from the role table `bearerAuth`
 * enforces (access/tokens.ts `requiredRole`), so the document cannot drift from the enforcement (issue 33
 * point 2). Operations without security (`security: []`) are never role-checked. An operation that already
 * declares a 403 for another reason (a share link) keeps its wording, with the role refusal added to it.
 */
function declareRoleRefusals(paths: Record<string, Record<string, Operation>>): void {
  for (const [path, item] of Object.entries(paths)) {
    const template = path.replace(/\{([^}]+)\}/g, ":$1");
    for (const [method, op] of Object.entries(item)) {
      if (typeof op !== "object" || op === null || !op.responses) continue;
      if (op.security && op.security.length === 0) continue;
      const refused = refusedRoles(method, template);
      if (refused.length === 0) continue;
      const need = requiredRole(method.toUpperCase(), template);
      const why = `The token's role is refused: this operation needs role \`${need}\` (refused to ${
        refused.map((r) => `\`${r}\``).join(" and ")
      }); problem type \`urn:dutlab:problem:forbidden\``;
      const prior = op.responses["403"];
      op.responses["403"] = {
        description: prior && !prior.description.startsWith("The token's role")
          ? `${prior.description}. ${why}`
          : why,
        content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } },
      };
    }
  }
}
