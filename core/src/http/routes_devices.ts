import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import type { Services } from "../runtime/services.ts";
import {
  Device,
  DeviceCreate,
  DeviceList,
  DevicePatch,
  IdParam,
  Ok,
  Registered,
  SnapshotResult,
  TestConnection,
} from "../api/schemas.ts";
import {
  conflictResponse,
  json,
  notFoundResponse,
  problemResponses,
  unprocessableResponse,
} from "./openapi_util.ts";
import { toView } from "../devices/store.ts";
import { testConnection } from "../devices/probe.ts";
import { DeviceListQuery } from "../api/schemas_query.ts";
import { ListCache } from "./list_cache.ts";
import { problems } from "./problem.ts";
import { ForceQuery } from "../api/schemas_reservations.ts";
import { forcedNote, guardReserved, type Hold } from "../reservations/holds.ts";
import { noteForAudit } from "./audit.ts";
import type { DeviceView } from "../devices/view.ts";

/** The fields of a PATCH that would disturb a run on the device (refused while it is reserved). */
const DISTURBING = [
  "hostname",
  "baseUrl",
  "username",
  "password",
  "tlsVerifyMode",
  "pinnedCertSha256",
] as const;

/** A device view with its reservation (holder, until), null when none. */
function withHold(v: DeviceView, holds: Hold[]) {
  const h = holds.find((x) => x.deviceId === v.id);
  return {
    ...v,
    reservation: h
      ? { reservationId: h.reservationId, holder: h.holder, testbed: h.testbed, until: h.until }
      : null,
  };
}

const tags = ["Devices"];
const body = <T>(schema: T) => ({ body: { content: { "application/json": { schema } }, required: true } });

export function deviceRoutes(app: OpenAPIHono, svc: Services) {
  const listCache = new ListCache(svc.db, "devices");
  deviceReadRoutes(app, svc, listCache);
  deviceWriteRoutes(app, svc);
  deviceActionRoutes(app, svc);
}

/** Listing devices and reading one. */
function deviceReadRoutes(app: OpenAPIHono, svc: Services, listCache: ListCache) {
  app.openapi(
    createRoute({
      method: "get",
      path: "/api/admin/dut/devices",
      operationId: "listDevices",
      tags,
      summary: "List devices and vendors",
      description:
        "Devices in hostname order and the vendor list. Filters: vendor, role, enabled, lastPollStatus " +
        "(`never` = never polled), q (substring of hostname or notes). Without `limit` and `cursor` the answer " +
        "is every matching device in the spec 4.1 shape `{devices, vendors}`; with either it is one page " +
        "(`limit` default 100) and adds `nextCursor` (null on the last page; pass it as `cursor`).",
      request: { query: DeviceListQuery },
      responses: {
        200: json(DeviceList, "Devices (hostname order) and the vendor list"),
        ...problemResponses,
      },
    }),
    async (c) => {
      const q = c.req.valid("query");
      const paged = q.limit !== undefined || q.cursor !== undefined;
      // Answered from the JSON kept per query between changes of the devices table (list_cache.ts).
      const hit = await listCache.get(JSON.stringify(q), async () => {
        const r = await svc.devices.query(paged ? { ...q, limit: q.limit ?? 100 } : q);
        if (!r) return null;
        const holds = await svc.reservations.holds(r.rows.map((d) => d.id));
        const body = {
          devices: r.rows.map((d) => withHold(toView(d), holds)),
          vendors: svc.registry.vendors,
        };
        return JSON.stringify(paged ? { ...body, nextCursor: r.nextCursor } : body);
      });
      if (!hit) throw problems.badRequest("query.cursor", "must be a cursor returned by a previous page");
      return c.body(hit.body, 200, { "content-type": "application/json", etag: hit.etag }) as never;
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/api/admin/dut/devices/{id}",
      operationId: "getDevice",
      tags,
      summary: "One device",
      request: { params: IdParam },
      responses: { 200: json(Device, "The device"), ...problemResponses, ...notFoundResponse },
    }),
    async (c) => {
      const row = await svc.devices.get(c.req.valid("param").id);
      return c.json(withHold(toView(row), await svc.reservations.holds([row.id])), 200);
    },
  );
}

/** Registering, updating and deleting devices. */
function deviceWriteRoutes(app: OpenAPIHono, svc: Services) {
  app.openapi(
    createRoute({
      method: "post",
      path: "/api/admin/dut/devices",
      operationId: "createDevice",
      tags,
      summary: "Register a device",
      description:
        "Required: hostname, vendor (a key whose `available` is true), baseUrl (https://), username, password. " +
        "tlsVerifyMode defaults to strict, pollIntervalSeconds to 300 (minimum 30), deviceRole to the vendor's " +
        "first role. A refused request stores nothing.",
      request: body(DeviceCreate),
      responses: {
        201: json(Registered, "Registered"),
        ...problemResponses,
        ...conflictResponse,
        ...unprocessableResponse,
      },
    }),
    async (c) => {
      const input = c.req.valid("json");
      const id = await svc.devices.create(input);
      await svc.events.publish("device.changed", {
        deviceId: id,
        hostname: input.hostname,
        change: "created",
      });
      return c.json({ ok: true, deviceId: id }, 201);
    },
  );

  app.openapi(
    createRoute({
      method: "patch",
      path: "/api/admin/dut/devices/{id}",
      operationId: "updateDevice",
      tags,
      summary: "Update a device",
      description:
        "Partial update. `password` rotates the stored credential; `pinnedCertSha256: null` clears the pinned " +
        "certificate; changing baseUrl or tlsVerifyMode clears it too. Returns the updated device. While the " +
        "device is reserved, a change of hostname, baseUrl, username, password, tlsVerifyMode or the pin, or " +
        "`enabled: false`, is a 409 naming the reservation, unless an admin sends `force=true` (audited).",
      request: { params: IdParam, query: ForceQuery, ...body(DevicePatch) },
      responses: {
        200: json(Device, "The updated device"),
        ...problemResponses,
        ...notFoundResponse,
        ...conflictResponse,
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const patch = c.req.valid("json");
      const disturbing: string[] = DISTURBING.filter((f) => patch[f] !== undefined);
      if (patch.enabled === false) disturbing.push("enabled");
      if (disturbing.length) {
        const action = `PATCH ${disturbing.join(", ")} of device ${id}`;
        const held = await guardReserved(svc.db.kysely, [id], action, c.req.valid("query").force === "true");
        if (held.length) noteForAudit(c, forcedNote(action, held));
      }
      // The store logs out a session parked under the old credential or URL.
      const row = await svc.devices.update(id, patch);
      await svc.events.publish("device.changed", { deviceId: id, hostname: row.hostname, change: "updated" });
      return c.json(toView(row), 200);
    },
  );

  app.openapi(
    createRoute({
      method: "delete",
      path: "/api/admin/dut/devices/{id}",
      operationId: "deleteDevice",
      tags,
      summary: "Delete a device and all its snapshots",
      description: "While the device is reserved: 409 naming the reservation, unless an admin sends " +
        "`force=true` (audited; the reservation loses the device).",
      request: { params: IdParam, query: ForceQuery },
      responses: { 200: json(Ok, "Deleted"), ...problemResponses, ...notFoundResponse, ...conflictResponse },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const row = await svc.devices.get(id);
      const action = `DELETE device ${row.hostname}`;
      const held = await guardReserved(svc.db.kysely, [id], action, c.req.valid("query").force === "true");
      if (held.length) noteForAudit(c, forcedNote(action, held));
      await svc.devices.delete(id); // logs out its parked session, if any
      await svc.events.publish("device.changed", { deviceId: id, hostname: row.hostname, change: "deleted" });
      return c.json({ ok: true }, 200);
    },
  );
}

/** Testing a device connection and taking a snapshot now. */
function deviceActionRoutes(app: OpenAPIHono, svc: Services) {
  app.openapi(
    createRoute({
      method: "post",
      path: "/api/admin/dut/devices/{id}/test",
      operationId: "testDeviceConnection",
      tags,
      summary: "Test the connection",
      description:
        "Authenticates and reads the vendor's CPU monitor. Device faults are reported as `ok: false` with a " +
        "detail naming the stage that failed (TLS, authentication, timeout, HTTP error), never as a 5xx. " +
        "With tlsVerifyMode self-signed, a first successful connection pins the certificate. While the device " +
        "is reserved, a test that would pin a first certificate (self-signed, none pinned yet) is a 409 naming " +
        "the reservation, unless an admin sends `force=true` (audited); any other test goes on.",
      request: { params: IdParam, query: ForceQuery },
      responses: {
        200: json(TestConnection, "Result"),
        ...problemResponses,
        ...notFoundResponse,
        ...conflictResponse,
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const row = await svc.devices.get(id);
      if (row.tls_verify_mode === "self-signed" && !row.pinned_cert_sha256) {
        const action = `a first-contact certificate pin of device ${row.hostname} (connection test)`;
        const held = await guardReserved(svc.db.kysely, [id], action, c.req.valid("query").force === "true");
        if (held.length) noteForAudit(c, forcedNote(action, held));
      }
      return c.json(await testConnection(svc, row), 200);
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/api/admin/dut/devices/{id}/snapshot",
      operationId: "snapshotDevice",
      tags,
      summary: "Poll the device now",
      description:
        "Runs one poll cycle synchronously (also when the worker is disabled or the device is suspended). " +
        "If a poll of the device is already running (in this instance or, on a shared PostgreSQL, another " +
        "one), the request waits for it and returns its result instead of polling twice. 503 with Retry-After " +
        "when the device stays leased by another instance past a poll's time limit, or when another instance " +
        "took this poll's lease over before it was stored (nothing is stored then).",
      request: { params: IdParam },
      responses: { 200: json(SnapshotResult, "Poll result"), ...problemResponses, ...notFoundResponse },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      await svc.devices.get(id);
      const r = await svc.poller.poll(id);
      return c.json({
        ok: r.ok,
        lastPollStatus: r.lastPollStatus,
        lastPollError: r.lastPollError,
        lastPollAt: r.lastPollAt,
      }, 200);
    },
  );
}
