import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import type { Services } from "../services.ts";
import { SnapshotPage, SnapshotQuery } from "./schemas.ts";
import { json, problemResponses } from "./openapi_util.ts";
import { listSnapshots } from "../snapshots.ts";
import { problems } from "./problem.ts";

export function snapshotRoutes(app: OpenAPIHono, svc: Services) {
  app.openapi(
    createRoute({
      method: "get",
      path: "/api/admin/dut/snapshots",
      tags: ["Snapshots"],
      summary: "List snapshots, newest first",
      description:
        "Filters: deviceId, endpointLabel, testRunExecutionId (UUID). Without parameters: the latest 100 " +
        "across all devices. `limit` (1-1000, default 100) and the opaque `cursor` from `nextCursor` page " +
        "through older snapshots. Newest first means storage order (ids increase with every stored snapshot). " +
        "`payloadSha256` = SHA-256 of the RFC 8785 canonical JSON of `payloadJson`.",
      request: { query: SnapshotQuery },
      responses: { 200: json(SnapshotPage, "A page of snapshots"), ...problemResponses },
    }),
    async (c) => {
      const q = c.req.valid("query");
      const r = await listSnapshots(svc.db.kysely, q);
      if ("badCursor" in r) {
        throw problems.badRequest("query.cursor", "must be a cursor returned by a previous page");
      }
      return c.json(r, 200);
    },
  );
}
