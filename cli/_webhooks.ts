import type { Command } from "./_command.ts";
import { ok } from "./_client.ts";
import { EXIT } from "./_exit.ts";
import { out, printJson, table } from "./_output.ts";

type EventType =
  | "dutlab.run.finished"
  | "dutlab.preflight.failed"
  | "dutlab.device.status_changed"
  | "dutlab.alert.raised"
  | "dutlab.lab.synced";
const idPath = (id: string) => ({ params: { path: { id } } });

/** `webhooks …`: subscriptions, secret rotation, the delivery log, ping (docs/notifications.md). */
export const webhookCommands: Command[] = [
  {
    path: ["webhooks", "list"],
    summary: "List the webhook subscriptions (never their secrets)",
    arity: [0, 0],
    async run(ctx) {
      const r = ok(await ctx.svc().api.GET("/api/admin/webhooks", {}));
      if (ctx.json) printJson(r);
      else {
        out(table(
          ["name", "format", "events", "failing", "url", "id"],
          r.subscriptions.map((s) => [
            s.name,
            s.format,
            s.eventTypes.join(","),
            s.failing ? "yes" : "no",
            s.url,
            s.id,
          ]),
          ctx.paint,
        ));
      }
      return EXIT.ok;
    },
  },
  {
    path: ["webhooks", "create"],
    summary: "Subscribe an endpoint; its signing secret is shown once",
    args: "<name> <url>",
    arity: [2, 2],
    flags: {
      event: {
        type: "string",
        multiple: true,
        value: "TYPE",
        description: "event type (required, repeatable)",
      },
      format: { type: "string", value: "FORMAT", description: "cloudevents (default), slack or teams" },
      "allow-http": { type: "boolean", description: "admit an http:// URL" },
    },
    async run(ctx) {
      const events = ctx.flags.event as string[] | undefined;
      if (!events?.length) throw ctx.usage("Missing --event");
      const r = ok(
        await ctx.svc().api.POST("/api/admin/webhooks", {
          body: {
            name: ctx.args[0]!,
            url: ctx.args[1]!,
            eventTypes: events as EventType[],
            format: (ctx.flags.format as "cloudevents" | undefined) ?? undefined,
            allowHttp: ctx.flags["allow-http"] === true,
          },
        }),
      );
      if (ctx.json) printJson(r);
      else out(`created ${r.name} ${r.id}\nsecret: ${r.secret}\nIt is shown only now: store it.`);
      return EXIT.ok;
    },
  },
  {
    path: ["webhooks", "delete"],
    summary: "Delete a webhook subscription and its delivery log",
    args: "<id>",
    arity: [1, 1],
    async run(ctx) {
      const r = ok(await ctx.svc().api.DELETE("/api/admin/webhooks/{id}", idPath(ctx.args[0]!)));
      if (ctx.json) printJson(r);
      else out(`deleted ${r.name}`);
      return EXIT.ok;
    },
  },
  {
    path: ["webhooks", "rotate"],
    summary: "Rotate a subscription's secret; the old one also signs during the overlap",
    args: "<id>",
    arity: [1, 1],
    flags: { overlap: { type: "string", value: "SECONDS", description: "overlap (default 86400)" } },
    async run(ctx) {
      const overlap = ctx.flags.overlap === undefined ? undefined : Number(ctx.flags.overlap);
      if (overlap !== undefined && !Number.isInteger(overlap)) {
        throw ctx.usage("--overlap must be an integer");
      }
      const r = ok(
        await ctx.svc().api.POST("/api/admin/webhooks/{id}/rotate-secret", {
          ...idPath(ctx.args[0]!),
          body: { overlapSeconds: overlap },
        }),
      );
      if (ctx.json) printJson(r);
      else {out(
          `secret: ${r.secret}\nprevious secret signs until ${r.previousSecretUntil ?? "now (no overlap)"}`,
        );}
      return EXIT.ok;
    },
  },
  {
    path: ["webhooks", "deliveries"],
    summary: "A subscription's recent deliveries, newest first",
    args: "<id>",
    arity: [1, 1],
    async run(ctx) {
      const r = ok(
        await ctx.svc().api.GET("/api/admin/webhooks/{id}/deliveries", { ...idPath(ctx.args[0]!) }),
      );
      if (ctx.json) printJson(r);
      else {
        out(table(
          ["id", "event", "state", "status", "attempts", "ms", "created"],
          r.deliveries.map((d) => [
            d.id,
            d.eventType,
            d.state,
            String(d.statusCode ?? "-"),
            String(d.attempts),
            String(d.durationMs ?? "-"),
            d.createdAt,
          ]),
          ctx.paint,
        ));
      }
      return EXIT.ok;
    },
  },
  {
    path: ["webhooks", "ping"],
    summary: "Queue a signed test ping to one subscription",
    args: "<id>",
    arity: [1, 1],
    async run(ctx) {
      const r = ok(await ctx.svc().api.POST("/api/admin/webhooks/{id}/ping", idPath(ctx.args[0]!)));
      if (ctx.json) printJson(r);
      else out(`queued ping ${r.eventId} (delivery ${r.deliveryId})`);
      return EXIT.ok;
    },
  },
];
