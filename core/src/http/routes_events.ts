import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Services } from "../runtime/services.ts";
import { EVENT_TYPES } from "../events/bus.ts";
import { SseHub } from "./sse_hub.ts";
import { problems } from "./problem.ts";
import { problemResponse } from "./openapi_util.ts";

/**
 * `GET /api/events`: Server-Sent Events. Each event has `id` (increasing), `event` (its type) and `data`
 * (JSON `{id, at, type, data}`). With `Last-Event-ID` (header, or `lastEventId` query for clients that cannot
 * set headers) the stream first replays every kept event after that id, then follows live. The fan-out to the
 * clients is `SseHub` (sse_hub.ts).
 */
export function eventRoutes(app: OpenAPIHono, svc: Services) {
  const hub = new SseHub(svc.events, {
    flushMs: svc.config.DUT_EVENTS_FLUSH_MS,
    heartbeatMs: 15_000,
    // About 10,000 typical events: a client this far behind reconnects and resumes from the database.
    maxQueuedBytes: 4 * 1024 * 1024,
  });
  app.get("/api/events", async (c) => {
    const raw = c.req.header("last-event-id") ?? c.req.query("lastEventId");
    if (raw !== undefined && !/^\d{1,18}$/.test(raw.trim())) {
      throw problems.badRequest(
        c.req.header("last-event-id") !== undefined ? "header.Last-Event-ID" : "query.lastEventId",
        "must be the id of an event this stream sent (digits)",
      );
    }
    // Counted once the stream exists; onClose runs exactly once, whichever way it ends.
    const body = await hub.open({
      after: raw === undefined ? null : BigInt(raw.trim()),
      onClose: () => svc.metrics.eventClients.dec(),
    });
    svc.metrics.eventClients.inc();
    return c.body(body, 200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      // Tells nginx-style proxies not to buffer the stream.
      "x-accel-buffering": "no",
    });
  });

  app.openAPIRegistry.registerPath({
    method: "get",
    path: "/api/events",
    operationId: "streamEvents",
    tags: ["Events"],
    summary: "Live events (Server-Sent Events)",
    description:
      "A `text/event-stream` for any token role. Each event: `id` (increasing), `event` = its type, `data` = " +
      "JSON `{id, at, type, data}`. Types: " + EVENT_TYPES.map((t) => `\`${t}\``).join(", ") + ". The " +
      "stream starts with `stream.open` (no id); reconnecting with `Last-Event-ID` (or `?lastEventId=`) " +
      "replays every event after it that is still kept (DUT_EVENTS_RETENTION_HOURS, default 24) and then " +
      "follows live, across restarts and, on PostgreSQL, across instances. `stream.reset` (no id) says " +
      "events after that id were already dropped: reload the lists. A comment line every 15 s keeps " +
      "proxies from closing an idle stream. Events reach the stream at most DUT_EVENTS_FLUSH_MS (default " +
      "100) after they happen, those of one window in one chunk. A client with more than 4 MiB unread is " +
      "disconnected (it resumes with Last-Event-ID). Read-only: nothing is ever changed through it.",
    request: {
      headers: z.object({
        "Last-Event-ID": z.string().regex(/^\d{1,18}$/).optional().openapi({
          description: "Resume after this id",
        }),
      }),
      query: z.object({
        lastEventId: z.string().regex(/^\d{1,18}$/).optional().openapi({
          description: "Same as the Last-Event-ID header, for clients that cannot set it",
        }),
      }),
    },
    responses: {
      200: { description: "The event stream", content: { "text/event-stream": { schema: z.string() } } },
      400: problemResponse("Last-Event-ID is not an event id"),
      401: problemResponse("Missing or invalid bearer token"),
    },
  });
}
