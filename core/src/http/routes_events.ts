import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { streamSSE } from "hono/streaming";
import type { Services } from "../runtime/services.ts";
import { EVENT_TYPES, type StoredEvent } from "../runtime/events.ts";
import { problems } from "./problem.ts";
import { problemResponse } from "./openapi_util.ts";

/** A client further behind than this many undelivered events is disconnected (it resumes by Last-Event-ID). */
const MAX_QUEUE = 10_000;
const HEARTBEAT_MS = 15_000;

/**
 * Each event's SSE frame, encoded once and written to every client (an event is one object shared by all
 * subscribers): the per-client cost of an event is one write, not a JSON serialization and an encoding.
 */
const frames = new WeakMap<StoredEvent, Uint8Array>();
const encoder = new TextEncoder();
function frameOf(e: StoredEvent): Uint8Array {
  let f = frames.get(e);
  if (!f) {
    // JSON has no raw line breaks, so the data is one `data:` line; the type and id are ours (no newlines).
    f = encoder.encode(`event: ${e.type}\ndata: ${JSON.stringify(e)}\nid: ${e.id}\n\n`);
    frames.set(e, f);
  }
  return f;
}

/**
 * `GET /api/events`: Server-Sent Events. Each event has `id` (increasing), `event` (its type) and `data`
 * (JSON `{id, at, type, data}`). With `Last-Event-ID` (header, or `lastEventId` query for clients that cannot
 * set headers) the stream first replays every kept event after that id, then follows live.
 */
export function eventRoutes(app: OpenAPIHono, svc: Services) {
  app.get("/api/events", async (c) => {
    const raw = c.req.header("last-event-id") ?? c.req.query("lastEventId");
    if (raw !== undefined && !/^\d{1,18}$/.test(raw.trim())) {
      throw problems.badRequest(
        c.req.header("last-event-id") !== undefined ? "header.Last-Event-ID" : "query.lastEventId",
        "must be the id of an event this stream sent (digits)",
      );
    }
    await svc.events.start();
    const after = raw === undefined ? null : BigInt(raw.trim());
    return streamSSE(c, async (stream) => {
      const queue: StoredEvent[] = [];
      let wakeUp: (() => void) | undefined;
      const unsubscribe = svc.events.subscribe((e) => {
        queue.push(e);
        wakeUp?.();
      }, () => wakeUp?.());
      const open = () => !stream.aborted && !svc.events.closed;
      svc.metrics.eventClients.inc();
      stream.onAbort(() => wakeUp?.());
      let sent = after ?? svc.events.lastId;
      const send = async (e: StoredEvent) => {
        if (BigInt(e.id) <= sent) return;
        await stream.write(frameOf(e));
        sent = BigInt(e.id);
      };
      try {
        await stream.writeSSE({
          event: "stream.open",
          data: JSON.stringify({ lastEventId: sent.toString() }),
          retry: 2000,
        });
        if (after !== null) {
          const oldest = await svc.events.oldestId();
          if (oldest !== null ? after < oldest - 1n : after < svc.events.lastId) {
            // Events after `after` were dropped from the window: the client must reload its state.
            await stream.writeSSE({
              event: "stream.reset",
              data: JSON.stringify({
                type: "stream.reset",
                reason: "events after Last-Event-ID are no longer kept",
              }),
            });
          }
          for (;;) {
            const rows = await svc.events.read(sent, 500);
            for (const e of rows) await send(e);
            if (rows.length < 500 || !open()) break;
          }
        }
        while (open()) {
          if (queue.length > MAX_QUEUE) break;
          const e = queue.shift();
          if (e) {
            await send(e);
            continue;
          }
          const timer = new Promise<boolean>((resolve) => {
            const t = setTimeout(() => resolve(true), HEARTBEAT_MS);
            wakeUp = () => {
              clearTimeout(t);
              resolve(false);
            };
          });
          if (await timer && open()) await stream.write(": keep-alive\n\n");
          wakeUp = undefined;
        }
      } finally {
        unsubscribe();
        svc.metrics.eventClients.dec();
      }
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
      "proxies from closing an idle stream. Read-only: nothing is ever changed through it.",
    request: {
      headers: z.object({
        "Last-Event-ID": z.string().regex(/^\d+$/).optional().openapi({
          description: "Resume after this id",
        }),
      }),
      query: z.object({
        lastEventId: z.string().regex(/^\d+$/).optional().openapi({
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
