import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Services } from "../runtime/services.ts";
import { ROLES } from "../access/tokens.ts";
import { conflictResponse, json, notFoundResponse, problemResponses } from "./openapi_util.ts";
import { problems } from "./problem.ts";
import { cursorParam, dateTimeParam, limitParam } from "../api/schemas_query.ts";

const tags = ["Access"];
const Token = z.object({
  id: z.uuid(),
  name: z.string(),
  role: z.enum(ROLES),
  createdAt: z.string().openapi({ format: "date-time" }),
  revokedAt: z.string().nullable().openapi({ format: "date-time" }),
}).openapi("ApiToken");
const TokenCreate = z.object({
  name: z.string().trim().min(1, "must not be empty").max(100).regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]*$/,
    "must be letters, digits, dot, dash or underscore",
  ),
  role: z.enum(ROLES),
}).strict().openapi("ApiTokenCreate");
const CreatedToken = Token.extend({
  token: z.string().openapi({
    description: "The bearer token: shown once, here; only its SHA-256 is stored",
    example: "dut_<43 base64url characters>",
  }),
}).openapi("ApiTokenCreated");
const TokenParam = z.object({
  id: z.string().openapi({ param: { name: "id", in: "path" }, description: "Token id (UUID) or name" }),
});
const AuditEntry = z.object({
  id: z.string(),
  at: z.string().openapi({ format: "date-time" }),
  tokenName: z.string().nullable().openapi({ description: "null when no valid token was sent" }),
  role: z.enum(ROLES).nullable(),
  method: z.string(),
  route: z.string().openapi({ description: "Route template, e.g. /api/admin/dut/devices/:id" }),
  targetId: z.string().nullable().openapi({
    description: "Device, run, snapshot or token the request acted on",
  }),
  status: z.number().int(),
  outcome: z.enum(["success", "refused", "failed"]),
  requestId: z.string().openapi({ description: "The X-Request-Id of the request" }),
  detail: z.string().nullable().openapi({
    description: "A note the route added, never a body: today only a run started over a failed pre-flight " +
      "(the override, its reason and who gave it); null otherwise",
  }),
}).openapi("AuditEntry");
const AuditQuery = z.object({
  limit: limitParam(1000, "Page size (1-1000, default 100)"),
  cursor: cursorParam,
  tokenName: z.string().min(1).max(100).optional(),
  method: z.enum(["POST", "PATCH", "PUT", "DELETE"]).optional(),
  route: z.string().min(1).max(300).optional().openapi({ description: "Route template" }),
  targetId: z.string().min(1).max(100).optional(),
  outcome: z.enum(["success", "refused", "failed"]).optional(),
  from: dateTimeParam("Only entries at or after this time"),
  to: dateTimeParam("Only entries before this time"),
}).strict();
const body = <T>(schema: T) => ({ body: { content: { "application/json": { schema } }, required: true } });

export function accessRoutes(app: OpenAPIHono, svc: Services) {
  app.openapi(
    createRoute({
      method: "post",
      path: "/api/admin/tokens",
      operationId: "createToken",
      tags,
      summary: "Create a named API token (admin)",
      description:
        "Roles: `admin` (everything), `operator` (snapshots, connection tests, pre-flight, runs; no device " +
        "registration, change or deletion, no tokens), `viewer` (reads and events). The token is in the answer " +
        "once and never again.",
      request: body(TokenCreate),
      responses: {
        201: json(CreatedToken, "Created"),
        ...problemResponses,
        ...conflictResponse,
      },
    }),
    async (c) => {
      const { name, role } = c.req.valid("json");
      return c.json(await svc.tokens.create(name, role), 201);
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/api/admin/tokens",
      operationId: "listTokens",
      tags,
      summary: "List API tokens (admin)",
      description: "Names, roles and dates; never a token or its hash.",
      responses: {
        200: json(z.object({ tokens: z.array(Token) }), "Tokens"),
        ...problemResponses,
      },
    }),
    async (c) => c.json({ tokens: await svc.tokens.list() }, 200),
  );
  app.openapi(
    createRoute({
      method: "delete",
      path: "/api/admin/tokens/{id}",
      operationId: "revokeToken",
      tags,
      summary: "Revoke an API token (admin)",
      description:
        "By id or name. The token stops working at once on this instance and within 5 s on others. The name " +
        "stays taken. Revoking twice keeps the first revocation time.",
      request: { params: TokenParam },
      responses: { 200: json(Token, "Revoked"), ...problemResponses, ...notFoundResponse },
    }),
    async (c) => c.json(await svc.tokens.revoke(c.req.valid("param").id), 200),
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/api/admin/audit",
      operationId: "listAuditEntries",
      tags,
      summary: "The audit log (admin)",
      description:
        "Every state-changing request (any method but GET, HEAD, OPTIONS), refused ones included, newest " +
        "first. Filters: tokenName, method, route (template), targetId, outcome, from/to. Append-only: the " +
        "database refuses UPDATE, DELETE and TRUNCATE of it.",
      request: { query: AuditQuery },
      responses: {
        200: json(z.object({ entries: z.array(AuditEntry), nextCursor: z.string().nullable() }), "A page"),
        ...problemResponses,
      },
    }),
    async (c) => {
      const r = await svc.audit.query(c.req.valid("query"));
      if (!r) throw problems.badRequest("query.cursor", "must be a cursor returned by a previous page");
      return c.json(r, 200);
    },
  );
}
