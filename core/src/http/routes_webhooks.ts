/**
 * Webhook subscriptions (issue 51, docs/notifications.md): admin CRUD, secret rotation, the delivery log,
 * redelivery and a test ping. Every route is admin-only (reads too: a chat webhook URL is itself a secret)
 * and every change is in the audit log.
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Services } from "../runtime/services.ts";
import { conflictResponse, json, notFoundResponse, problemResponses } from "./openapi_util.ts";
import { problems } from "./problem.ts";
import { SEVERITIES, WEBHOOK_EVENT_TYPES, WEBHOOK_FORMATS } from "../notify/types.ts";
import { literalAddressRefusal, urlRefusal } from "../notify/send.ts";

const tags = ["Webhooks"];
const dateTime = (description?: string) => z.string().openapi({ format: "date-time", description });
const Filters = z.object({
  plans: z.array(z.string().min(1).max(200)).max(50).optional().openapi({
    description: "Only events about one of these plans (run and pre-flight events)",
  }),
  deviceTags: z.array(z.string().min(1).max(100)).max(50).optional().openapi({
    description: "Only events about a device carrying one of these tags (device and alert events)",
  }),
  minSeverity: z.enum(SEVERITIES).optional().openapi({
    description: "Only events at or above this severity",
  }),
}).strict().openapi("WebhookFilters");
const Name = z.string().min(1, "must not be empty").max(100);
const Url = z.url().max(2000).openapi({
  description: "https:// URL (http:// only with allowHttp); the address rules of device connections apply: " +
    "400 naming `url` for another scheme, http:// without allowHttp, a user or fragment, or a literal address " +
    "DUT_DEVICE_NETWORKS or the guarded ranges refuse",
  example: "https://hooks.example/dutlab",
});
const Types = z.array(z.enum(WEBHOOK_EVENT_TYPES)).min(1, "must name at least one event type").max(20);
const Subscription = z.object({
  id: z.uuid(),
  name: z.string(),
  url: z.string(),
  format: z.enum(WEBHOOK_FORMATS),
  eventTypes: z.array(z.enum(WEBHOOK_EVENT_TYPES)),
  filters: Filters,
  allowHttp: z.boolean(),
  enabled: z.boolean(),
  failing: z.boolean().openapi({
    description: "True after DUT_WEBHOOK_FAILING_AFTER failed attempts in a row; a success clears it",
  }),
  consecutiveFailures: z.number().int(),
  lastSuccessAt: dateTime().nullable(),
  lastFailureAt: dateTime().nullable(),
  previousSecretUntil: dateTime("Until when the previous secret also signs (after a rotation)").nullable(),
  createdAt: dateTime(),
  updatedAt: dateTime(),
}).openapi("WebhookSubscription");
const WithSecret = Subscription.extend({
  secret: z.string().openapi({
    description: "The Standard Webhooks signing secret: shown once, here",
    example: "whsec_<base64 of 32 bytes>",
  }),
}).openapi("WebhookSubscriptionWithSecret");
const Create = z.object({
  name: Name,
  url: Url,
  format: z.enum(WEBHOOK_FORMATS).optional().openapi({
    description: "`cloudevents` (default: CloudEvents 1.0 structured JSON), `slack` or `teams` messages",
  }),
  eventTypes: Types,
  filters: Filters.optional(),
  allowHttp: z.boolean().optional().openapi({ description: "Admit an http:// URL (default false)" }),
  enabled: z.boolean().optional(),
}).strict().openapi("WebhookSubscriptionCreate");
const Patch = Create.partial().strict().openapi("WebhookSubscriptionPatch");
const Rotate = z.object({
  overlapSeconds: z.number().int().min(0).max(7 * 86400).optional().openapi({
    description: "How long the previous secret keeps signing beside the new one (default 86400; 0: none)",
  }),
}).strict().openapi("WebhookSecretRotate");
const Attempt = z.object({
  attempt: z.number().int(),
  at: dateTime(),
  statusCode: z.number().int().nullable(),
  durationMs: z.number().int(),
  error: z.string().nullable(),
  response: z.string().nullable().openapi({ description: "The answer's first bytes (up to 1 KiB)" }),
});
const Delivery = z.object({
  id: z.string(),
  eventId: z.string().openapi({
    description: "The CloudEvents id and webhook-id (the same on every attempt)",
  }),
  eventType: z.string(),
  state: z.enum(["pending", "delivered", "failed"]),
  attempts: z.number().int(),
  createdAt: dateTime(),
  nextAttemptAt: dateTime().nullable(),
  finishedAt: dateTime().nullable(),
  statusCode: z.number().int().nullable(),
  durationMs: z.number().int().nullable(),
  error: z.string().nullable(),
  response: z.string().nullable(),
  attemptLog: z.array(Attempt),
}).openapi("WebhookDelivery");
const IdParam = z.object({
  id: z.string().max(100).openapi({ param: { name: "id", in: "path" }, description: "Subscription id" }),
});
const DeliveryParam = IdParam.extend({
  deliveryId: z.string().max(30).openapi({ param: { name: "deliveryId", in: "path" } }),
});
const body = <T>(schema: T) => ({ body: { content: { "application/json": { schema } }, required: true } });

/** 400 naming `url` when it is not an admissible webhook URL. */
function checkUrl(svc: Services, url: string, allowHttp: boolean): void {
  const why = urlRefusal(url, allowHttp) ?? literalAddressRefusal(url, svc.limits.networks);
  if (why) throw problems.badRequest("url", why);
}

export function webhookRoutes(app: OpenAPIHono, svc: Services) {
  subscriptionRoutes(app, svc);
  secretAndDeliveryRoutes(app, svc);
}

function subscriptionRoutes(app: OpenAPIHono, svc: Services) {
  app.openapi(
    createRoute({
      tags,
      method: "post",
      path: "/api/admin/webhooks",
      operationId: "createWebhook",
      summary: "Subscribe a webhook endpoint (admin)",
      description: "The signing secret is in the answer once and never again (rotate it to get a new one). " +
        "`url` must be https:// unless `allowHttp` is true (the two fields together), and a literal address " +
        "must pass the address rules of the configuration (DUT_DEVICE_NETWORKS): else 400 naming `url`.",
      request: body(Create),
      responses: { 201: json(WithSecret, "Created"), ...problemResponses },
    }),
    async (c) => {
      const input = c.req.valid("json");
      checkUrl(svc, input.url, input.allowHttp ?? false);
      return c.json(await svc.webhooks.create(input), 201);
    },
  );
  app.openapi(
    createRoute({
      tags,
      method: "get",
      path: "/api/admin/webhooks",
      operationId: "listWebhooks",
      summary: "List webhook subscriptions (admin)",
      responses: {
        200: json(z.object({ subscriptions: z.array(Subscription) }), "Subscriptions"),
        ...problemResponses,
      },
    }),
    async (c) => c.json({ subscriptions: await svc.webhooks.list() }, 200),
  );
  app.openapi(
    createRoute({
      tags,
      method: "get",
      path: "/api/admin/webhooks/{id}",
      operationId: "getWebhook",
      summary: "One webhook subscription (admin)",
      request: { params: IdParam },
      responses: { 200: json(Subscription, "The subscription"), ...problemResponses, ...notFoundResponse },
    }),
    async (c) => c.json(await svc.webhooks.get(c.req.valid("param").id), 200),
  );
  app.openapi(
    createRoute({
      tags,
      method: "patch",
      path: "/api/admin/webhooks/{id}",
      operationId: "updateWebhook",
      summary: "Change a webhook subscription (admin)",
      description: "A new URL or a re-enable clears the failure count and the failing mark. `url` and " +
        "`allowHttp` (given or stored) are checked together as at creation: else 400 naming `url`.",
      request: { params: IdParam, ...body(Patch) },
      responses: { 200: json(Subscription, "Changed"), ...problemResponses, ...notFoundResponse },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const patch = c.req.valid("json");
      if (patch.url !== undefined || patch.allowHttp !== undefined) {
        const cur = await svc.webhooks.get(id);
        checkUrl(svc, patch.url ?? cur.url, patch.allowHttp ?? cur.allowHttp);
      }
      return c.json(await svc.webhooks.update(id, patch), 200);
    },
  );
  app.openapi(
    createRoute({
      tags,
      method: "delete",
      path: "/api/admin/webhooks/{id}",
      operationId: "deleteWebhook",
      summary: "Delete a webhook subscription and its delivery log (admin)",
      request: { params: IdParam },
      responses: { 200: json(Subscription, "Deleted"), ...problemResponses, ...notFoundResponse },
    }),
    async (c) => c.json(await svc.webhooks.delete(c.req.valid("param").id), 200),
  );
}

function secretAndDeliveryRoutes(app: OpenAPIHono, svc: Services) {
  app.openapi(
    createRoute({
      tags,
      method: "post",
      path: "/api/admin/webhooks/{id}/rotate-secret",
      operationId: "rotateWebhookSecret",
      summary: "Rotate a subscription's signing secret (admin)",
      description: "The new secret is in the answer once. During the overlap every delivery carries two " +
        "signatures (new and previous secret), so receivers can switch without losing one.",
      request: { params: IdParam, ...body(Rotate) },
      responses: { 200: json(WithSecret, "Rotated"), ...problemResponses, ...notFoundResponse },
    }),
    async (c) => {
      const { overlapSeconds } = c.req.valid("json");
      return c.json(await svc.webhooks.rotateSecret(c.req.valid("param").id, overlapSeconds ?? 86400), 200);
    },
  );
  app.openapi(
    createRoute({
      tags,
      method: "get",
      path: "/api/admin/webhooks/{id}/deliveries",
      operationId: "listWebhookDeliveries",
      summary: "A subscription's recent deliveries, newest first (admin)",
      request: {
        params: IdParam,
        query: z.object({
          limit: z.coerce.number().int().min(1).max(500).optional().openapi({
            description: "1-500, default 50",
          }),
        }).strict(),
      },
      responses: {
        200: json(z.object({ deliveries: z.array(Delivery) }), "Deliveries"),
        ...problemResponses,
        ...notFoundResponse,
      },
    }),
    async (c) =>
      c.json({
        deliveries: await svc.webhooks.deliveries(c.req.valid("param").id, c.req.valid("query").limit ?? 50),
      }, 200),
  );
  app.openapi(
    createRoute({
      tags,
      method: "post",
      path: "/api/admin/webhooks/{id}/deliveries/{deliveryId}/redeliver",
      operationId: "redeliverWebhook",
      summary: "Send a finished delivery's event again (admin)",
      description: "A new delivery of the same event (same id) at the end of the subscription's queue; 409 " +
        "while the delivery is still pending.",
      request: { params: DeliveryParam },
      responses: {
        202: json(z.object({ deliveryId: z.string() }), "Queued"),
        ...problemResponses,
        ...notFoundResponse,
        ...conflictResponse,
      },
    }),
    async (c) => {
      const { id, deliveryId } = c.req.valid("param");
      return c.json(await svc.webhooks.redeliver(id, deliveryId), 202);
    },
  );
  app.openapi(
    createRoute({
      tags,
      method: "post",
      path: "/api/admin/webhooks/{id}/ping",
      operationId: "pingWebhook",
      summary: "Queue a test ping to one subscription (admin)",
      description: "A `dutlab.webhook.ping` event, signed and logged like any delivery.",
      request: { params: IdParam },
      responses: {
        202: json(z.object({ eventId: z.string(), deliveryId: z.string() }), "Queued"),
        ...problemResponses,
        ...notFoundResponse,
      },
    }),
    async (c) => c.json(await svc.webhooks.ping(c.req.valid("param").id), 202),
  );
}
