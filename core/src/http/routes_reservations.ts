import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import type { Services } from "../runtime/services.ts";
import { Ok } from "../api/schemas.ts";
import {
  Reservation,
  ReservationCreate,
  ReservationList,
  ReservationListQuery,
  ReservationParam,
  ReservationRelease,
  ReservationRenew,
  Testbed,
  TestbedList,
  TestbedParam,
  TestbedPut,
} from "../api/schemas_reservations.ts";
import {
  conflictResponse,
  json,
  notFoundResponse,
  problemResponse,
  problemResponses,
  unprocessableResponse,
} from "./openapi_util.ts";
import { principalOf } from "./auth.ts";
import { checkReadiness } from "./readiness.ts";

const body = <T>(schema: T) => ({ body: { content: { "application/json": { schema } }, required: true } });

/** Testbeds and reservations (issue 52, docs/reservations.md). */
export function reservationRoutes(app: OpenAPIHono, svc: Services) {
  testbedRoutes(app, svc);
  reserveRoutes(app, svc);
  leaseRoutes(app, svc);
}

function testbedRoutes(app: OpenAPIHono, svc: Services) {
  const tags = ["Testbeds"];
  app.openapi(
    createRoute({
      method: "get",
      path: "/api/admin/testbeds",
      operationId: "listTestbeds",
      tags,
      summary: "List testbeds and the devices each selects now",
      responses: { 200: json(TestbedList, "Testbeds by name"), ...problemResponses },
    }),
    async (c) => c.json({ testbeds: await svc.reservations.testbeds.list() }, 200),
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/api/admin/testbeds/{name}",
      operationId: "getTestbed",
      tags,
      summary: "One testbed",
      request: { params: TestbedParam },
      responses: { 200: json(Testbed, "The testbed"), ...problemResponses, ...notFoundResponse },
    }),
    async (c) => c.json(await svc.reservations.testbeds.get(c.req.valid("param").name), 200),
  );
  app.openapi(
    createRoute({
      method: "put",
      path: "/api/admin/testbeds/{name}",
      operationId: "putTestbed",
      tags,
      summary: "Create or replace a testbed",
      description:
        "A named set of devices: every device matching any listed id, hostname, tag or role. An id " +
        "or hostname naming no device is a 422; a testbed a lab file declares is a 409 (change the lab file).",
      request: { params: TestbedParam, ...body(TestbedPut) },
      responses: {
        200: json(Testbed, "The testbed"),
        ...problemResponses,
        ...conflictResponse,
        ...unprocessableResponse,
      },
    }),
    async (c) => {
      const { name } = c.req.valid("param");
      const b = c.req.valid("json");
      return c.json(await svc.reservations.testbeds.put(name, b.selector, b.description ?? null), 200);
    },
  );
  app.openapi(
    createRoute({
      method: "delete",
      path: "/api/admin/testbeds/{name}",
      operationId: "deleteTestbed",
      tags,
      summary: "Delete a testbed (its reservations keep its name)",
      request: { params: TestbedParam },
      responses: { 200: json(Ok, "Deleted"), ...problemResponses, ...notFoundResponse },
    }),
    async (c) => {
      await svc.reservations.testbeds.delete(c.req.valid("param").name);
      return c.json({ ok: true }, 200);
    },
  );
}

function reserveRoutes(app: OpenAPIHono, svc: Services) {
  const tags = ["Reservations"];
  app.openapi(
    createRoute({
      method: "get",
      path: "/api/admin/reservations",
      operationId: "listReservations",
      tags,
      summary: "Current and queued reservations (the calendar)",
      description: "Held reservations by the end of their lease, then the queue in the order it is served " +
        "(priority, then first come). `ended=true` adds the ended ones (released, expired, timed out) and why.",
      request: { query: ReservationListQuery },
      responses: { 200: json(ReservationList, "Reservations"), ...problemResponses },
    }),
    async (c) => {
      const includeEnded = c.req.valid("query").ended === "true";
      return c.json({ reservations: await svc.reservations.list({ includeEnded }) }, 200);
    },
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/api/admin/reservations",
      operationId: "createReservation",
      tags,
      summary: "Reserve a testbed or devices",
      description:
        "Takes every device or none, for `leaseSeconds` (renew before it ends). 201 `held`. A device " +
        "held by another reservation: 409 naming the holder and until when, or with `waitSeconds` 202 " +
        "`queued` (poll the reservation; it becomes `held` when the devices are released, `timed_out` when " +
        "the wait ends). With `readiness`, the devices are snapshotted now and the plan's pre-flight " +
        "evaluated first: any failing check grants nothing (422 naming each check and device).",
      request: body(ReservationCreate),
      responses: {
        201: json(Reservation, "Granted (held)"),
        202: json(Reservation, "Queued"),
        ...problemResponses,
        ...notFoundResponse,
        ...conflictResponse,
        422: problemResponse(
          "Not ready: a check failed on a device (nothing reserved); or both or neither of testbed and " +
            "deviceIds, or nothing selected",
        ),
      },
    }),
    async (c) => {
      const b = c.req.valid("json");
      const principal = principalOf(c);
      const holder = b.holder ?? principal?.name ?? "unknown";
      if (b.readiness) {
        const devices = await svc.reservations.devicesOf(b);
        await checkReadiness(svc, devices.map((d) => d.id), {
          ...b.readiness,
          holder,
          testbed: b.testbed ?? null,
        });
      }
      const v = await svc.reservations.reserve({ ...b, holder, createdBy: principal?.name ?? null });
      return c.json(v, v.state === "held" ? 201 : 202);
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/api/admin/reservations/{id}",
      operationId: "getReservation",
      tags,
      summary: "One reservation (a queued client polls it)",
      request: { params: ReservationParam },
      responses: { 200: json(Reservation, "The reservation"), ...problemResponses, ...notFoundResponse },
    }),
    async (c) => {
      await svc.reservations.sweep();
      return c.json(await svc.reservations.get(c.req.valid("param").id), 200);
    },
  );
}

function leaseRoutes(app: OpenAPIHono, svc: Services) {
  const tags = ["Reservations"];
  app.openapi(
    createRoute({
      method: "post",
      path: "/api/admin/reservations/{id}/renew",
      operationId: "renewReservation",
      tags,
      summary: "Renew the lease",
      description: "The lease ends `leaseSeconds` (default: the reservation's) from now. 409 once it ended.",
      request: { params: ReservationParam, ...body(ReservationRenew) },
      responses: {
        200: json(Reservation, "Renewed"),
        ...problemResponses,
        ...notFoundResponse,
        ...conflictResponse,
      },
    }),
    async (c) =>
      c.json(await svc.reservations.renew(c.req.valid("param").id, c.req.valid("json").leaseSeconds), 200),
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/api/admin/reservations/{id}/release",
      operationId: "releaseReservation",
      tags,
      summary: "Release (or withdraw a queued request)",
      description: "The devices are free at once; the next queued request that wants them is granted.",
      request: { params: ReservationParam, ...body(ReservationRelease) },
      responses: { 200: json(Reservation, "Released"), ...problemResponses, ...notFoundResponse },
    }),
    async (c) => {
      const who = principalOf(c)?.name ?? "unknown";
      const reason = c.req.valid("json").reason;
      return c.json(
        await svc.reservations.release(
          c.req.valid("param").id,
          `released by ${who}${reason ? `: ${reason}` : ""}`,
        ),
        200,
      );
    },
  );
}
