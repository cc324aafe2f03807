import type { Command, Ctx } from "./_command.ts";
import { ok } from "./_client.ts";
import { CliError, EXIT } from "./_exit.ts";
import { out, printJson, table } from "./_output.ts";
import type { components } from "./generated/dutlab-api.ts";

type Reservation = components["schemas"]["Reservation"];

const row = (r: Reservation) => [
  r.state,
  r.holder,
  r.testbed ?? "-",
  r.devices.map((d) => d.hostname).join(","),
  r.state === "queued" ? `wait until ${r.waitUntil}` : r.expiresAt ?? "-",
  r.executionId ?? "-",
  r.id,
];
const HEADERS = ["state", "holder", "testbed", "devices", "until", "run", "id"];

function printReservations(ctx: Ctx, rs: Reservation[]) {
  out(table(HEADERS, rs.map(row), ctx.paint, []));
}

/** A whole number flag, or a usage error naming it. */
function int(ctx: Ctx, name: string): number | undefined {
  const v = ctx.flags[name];
  if (v === undefined) return undefined;
  if (typeof v !== "string" || !/^-?\d+$/.test(v)) throw ctx.usage(`--${name} must be a whole number`);
  return Number(v);
}

export const reservationCommands: Command[] = [
  {
    path: ["testbeds", "list"],
    summary: "List the testbeds and the devices each selects",
    arity: [0, 0],
    async run(ctx) {
      const r = ok(await ctx.svc().api.GET("/api/admin/testbeds", {}));
      if (ctx.json) printJson(r);
      else {
        out(table(
          ["name", "devices", "managed by", "description"],
          r.testbeds.map((
            t,
          ) => [
            t.name,
            t.devices.map((d) => d.hostname).join(","),
            t.managedBy ?? "-",
            t.description ?? "-",
          ]),
          ctx.paint,
          [],
        ));
      }
      return EXIT.ok;
    },
  },
  {
    path: ["reserve"],
    summary: "Reserve a testbed: every device or none, for a lease",
    args: "<testbed>",
    arity: [1, 1],
    flags: {
      lease: {
        type: "string",
        value: "SECONDS",
        description: "The lease (default 900); renew before it ends",
      },
      wait: {
        type: "string",
        value: "SECONDS",
        description: "Queue this long when it is held (else exit 1)",
      },
      priority: {
        type: "string",
        value: "N",
        description: "Among queued requests, higher first (default 0)",
      },
      holder: { type: "string", value: "NAME", description: "Who holds it (default: the token's name)" },
      purpose: { type: "string", value: "TEXT", description: "Free text" },
      ready: {
        type: "string",
        value: "PLAN",
        description: "Snapshot now and require this plan's pre-flight",
      },
      "mark-out-of-service": { type: "boolean", description: "With --ready: disable each failing device" },
      quiet: { type: "boolean", short: "q", description: "Print only the reservation id" },
    },
    more:
      "Exit 1 when it is held by another holder (the holder and until when are printed), when the wait\n" +
      "times out, or when --ready finds a failing check (each check and device is printed).",
    async run(ctx) {
      const body: Record<string, unknown> = { testbed: ctx.args[0] };
      const lease = int(ctx, "lease");
      if (lease !== undefined) body.leaseSeconds = lease;
      const wait = int(ctx, "wait");
      if (wait !== undefined) body.waitSeconds = wait;
      const priority = int(ctx, "priority");
      if (priority !== undefined) body.priority = priority;
      if (ctx.flags.holder !== undefined) body.holder = ctx.flags.holder;
      if (ctx.flags.purpose !== undefined) body.purpose = ctx.flags.purpose;
      if (ctx.flags.ready !== undefined) {
        body.readiness = {
          planIdentifier: ctx.flags.ready,
          markOutOfService: ctx.flags["mark-out-of-service"] === true,
        };
      }
      const api = ctx.svc().api;
      let r = ok(await api.POST("/api/admin/reservations", { body: body as never }));
      while (r.state === "queued") {
        await new Promise((res) => setTimeout(res, 1000));
        r = ok(await api.GET("/api/admin/reservations/{id}", { params: { path: { id: r.id } } }));
      }
      if (ctx.json) printJson(r);
      else if (ctx.flags.quiet === true && r.state === "held") out(r.id);
      else printReservations(ctx, [r]);
      if (r.state !== "held") {
        throw new CliError(`Not reserved: ${r.state} (${r.endReason ?? ""})`, EXIT.failed);
      }
      return EXIT.ok;
    },
  },
  {
    path: ["reservations", "list"],
    summary: "Current and queued reservations (--all: the ended ones too, and why)",
    arity: [0, 0],
    flags: { all: { type: "boolean", description: "Include released, expired and timed-out reservations" } },
    async run(ctx) {
      const query = ctx.flags.all === true ? { ended: "true" as const } : {};
      const r = ok(await ctx.svc().api.GET("/api/admin/reservations", { params: { query } }));
      if (ctx.json) printJson(r);
      else printReservations(ctx, r.reservations);
      return EXIT.ok;
    },
  },
  {
    path: ["reservations", "renew"],
    summary: "Renew a reservation's lease",
    args: "<id>",
    arity: [1, 1],
    flags: { lease: { type: "string", value: "SECONDS", description: "The new lease (default: its own)" } },
    async run(ctx) {
      const lease = int(ctx, "lease");
      const r = ok(
        await ctx.svc().api.POST("/api/admin/reservations/{id}/renew", {
          params: { path: { id: ctx.args[0]! } },
          body: lease === undefined ? {} : { leaseSeconds: lease },
        }),
      );
      if (ctx.json) printJson(r);
      else printReservations(ctx, [r]);
      return EXIT.ok;
    },
  },
  {
    path: ["reservations", "release"],
    summary: "Release a reservation (or withdraw a queued one)",
    args: "<id>",
    arity: [1, 1],
    flags: { reason: { type: "string", value: "TEXT", description: "Why (recorded)" } },
    async run(ctx) {
      const reason = ctx.flags.reason;
      const r = ok(
        await ctx.svc().api.POST("/api/admin/reservations/{id}/release", {
          params: { path: { id: ctx.args[0]! } },
          body: typeof reason === "string" ? { reason } : {},
        }),
      );
      if (ctx.json) printJson(r);
      else printReservations(ctx, [r]);
      return EXIT.ok;
    },
  },
];
