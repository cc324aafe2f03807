import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import type { Services } from "../runtime/services.ts";
import { Snapshot, SnapshotPage, SnapshotQuery } from "../api/schemas.ts";
import { json, notFoundResponse, problemResponses } from "./openapi_util.ts";
import { z } from "@hono/zod-openapi";
import { getSnapshot, listSnapshots } from "../snapshots/store.ts";
import { problems } from "./problem.ts";

/** A one-line, independent recomputation of `payloadSha256` (README "Snapshot hashes"). */
export const RECOMPUTE = String.raw`deno eval 'import c from "npm:canonicalize@5.1.0"; ` +
  String.raw`const s = JSON.parse(await new Response(Deno.stdin.readable).text()).snapshots[0]; ` +
  String.raw`const d = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(` +
  String.raw`c(s.payloadJson)))); console.log([...d].map((b) => b.toString(16).padStart(2, "0")).join("") ` +
  String.raw`=== s.payloadSha256)' < page.json`;

export function snapshotRoutes(app: OpenAPIHono, svc: Services) {
  app.openapi(
    createRoute({
      method: "get",
      path: "/api/admin/dut/snapshots",
      operationId: "listSnapshots",
      tags: ["Snapshots"],
      summary: "List snapshots, newest first",
      description:
        "Filters: deviceId, endpointLabel, testRunExecutionId (UUID). Without parameters: the latest 100 " +
        "across all devices. `limit` (1-1000, default 100) and the opaque `cursor` from `nextCursor` page " +
        "through older snapshots; a cursor stays valid while new snapshots arrive. Newest first means storage " +
        "order (ids increase with every stored snapshot). Bad parameters are a 400 problem naming the field. " +
        "`payloadSha256` = lowercase hex SHA-256 of the RFC 8785 (JCS) canonical JSON of `payloadJson`; " +
        "`adapterModule`/`adapterVersion` name the adapter that collected it; `testRunExecutionId` is the run " +
        "active at collection (null when none). Recompute the first hash of a page saved as page.json " +
        `(prints true): \`${RECOMPUTE}\``,
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

  app.openapi(
    createRoute({
      method: "get",
      path: "/api/admin/dut/snapshots/{id}",
      operationId: "getSnapshot",
      tags: ["Snapshots"],
      summary: "One snapshot",
      description:
        "The snapshot with this id (the `id` of a listed snapshot, digits), in the listing's form.",
      request: {
        params: z.object({
          id: z.string().openapi({ param: { name: "id", in: "path" }, description: "Snapshot id (digits)" }),
        }),
      },
      responses: { 200: json(Snapshot, "The snapshot"), ...problemResponses, ...notFoundResponse },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const s = await getSnapshot(svc.db.kysely, id);
      if (!s) throw problems.notFound(`No snapshot with id "${id}"`);
      return c.json(s, 200);
    },
  );
}
