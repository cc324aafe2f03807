import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import type { Services } from "../runtime/services.ts";
import {
  PruneRecord,
  PruneRequest,
  PruneResult,
  Snapshot,
  SnapshotIdParam,
  SnapshotPage,
  SnapshotQuery,
} from "../api/schemas.ts";
import {
  conflictResponse,
  json,
  notFoundResponse,
  problemResponse,
  problemResponses,
} from "./openapi_util.ts";
import { listPrunes, pruneSnapshots } from "../snapshots/prune.ts";
import { principalOf } from "./auth.ts";
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getSnapshotRow, listSnapshotRows } from "../snapshots/store.ts";
import { snapshotJson, snapshotPageJson } from "../snapshots/view_json.ts";
import { sha256Hex } from "../util/hash.ts";
import { problems } from "./problem.ts";
import { ListCache } from "./list_cache.ts";

/** A one-line, independent recomputation of `payloadSha256` (docs/polling.md "Snapshots"). */
export const RECOMPUTE = String.raw`deno eval 'import c from "npm:canonicalize@5.1.0"; ` +
  String.raw`const s = JSON.parse(await new Response(Deno.stdin.readable).text()).snapshots[0]; ` +
  String.raw`const d = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(` +
  String.raw`c(s.payloadJson)))); console.log([...d].map((b) => b.toString(16).padStart(2, "0")).join("") ` +
  String.raw`=== s.payloadSha256)' < page.json`;

/** At most this many bytes of snapshot listings are kept in memory (the latest 100: about 170 kB). */
const LISTING_CACHE_BYTES = 8 * 1024 * 1024;

export function snapshotRoutes(app: OpenAPIHono, svc: Services) {
  // Kept under the 'devices' version, which every insert and delete of a snapshot raises too (migration 0019).
  snapshotReadRoutes(app, svc, new ListCache(svc.db, "devices", LISTING_CACHE_BYTES));
  snapshotPruneRoutes(app, svc);
}

/** Listing snapshots and reading one. */
function snapshotReadRoutes(app: OpenAPIHono, svc: Services, listings: ListCache) {
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
        "active at collection (null when none). `payload=omit` leaves `payloadJson` out of every snapshot " +
        "(the page keeps everything else); the default is `include`. Recompute the first hash of a page saved as page.json " +
        `(prints true): \`${RECOMPUTE}\``,
      request: { query: SnapshotQuery },
      responses: { 200: json(SnapshotPage, "A page of snapshots"), ...problemResponses },
    }),
    async (c) => {
      const q = c.req.valid("query");
      const { payload, ...filter } = q;
      // Answered from the page's JSON kept per query between changes of the snapshots (list_cache.ts).
      const hit = await listings.get(JSON.stringify(q), async () => {
        const r = await listSnapshotRows(svc.db.kysely, filter, payload !== "omit");
        return "badCursor" in r ? null : snapshotPageJson(r.rows, r.nextCursor, payload !== "omit");
      });
      if (!hit) throw problems.badRequest("query.cursor", "must be a cursor returned by a previous page");
      return c.body(hit.body, 200, { "content-type": "application/json", etag: hit.etag }) as never;
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
      request: { params: SnapshotIdParam },
      responses: { 200: json(Snapshot, "The snapshot"), ...problemResponses, ...notFoundResponse },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const s = await getSnapshotRow(svc.db.kysely, id);
      if (!s) throw problems.notFound(`No snapshot with id "${id}"`);
      return await jsonText(c, snapshotJson(s));
    },
  );
}

/**
 * A 200 JSON answer from its text (view_json.ts writes the stored payloads in as they are), with its strong
 * ETag: the SHA-256 of the body, hashed here synchronously, which spares the ETag
 * middleware (app.ts) a copy of the response and an asynchronous digest; the middleware still answers
 * `If-None-Match` with a 304.
 */
async function jsonText(c: Context, text: string): Promise<never> {
  // The text itself, not its UTF-8 bytes: Deno's server encodes a string body natively, and node:crypto
  // hashes the UTF-8 of a string, so no copy of the page is made on the JavaScript heap.
  return c.body(text, 200, {
    "content-type": "application/json",
    etag: `"${await sha256Hex(text)}"`,
  }) as never;
}

/** Pruning snapshots and the prune records. */
function snapshotPruneRoutes(app: OpenAPIHono, svc: Services) {
  app.openapi(
    createRoute({
      method: "post",
      path: "/api/admin/dut/snapshots/prune",
      operationId: "pruneSnapshots",
      tags: ["Snapshots"],
      summary: "Prune old snapshots (admin), or dry-run a prune",
      description:
        'Never automatic (docs/data.md "Pruning snapshots"). Keeps every snapshot younger than `olderThanDays` ' +
        "(cut-off rounded down to the hour or UTC day); of older ones keeps every snapshot a run cites (linked " +
        "snapshots, alerts, start state, pre-flight evidence, report annexes and drift diffs) or its evidence " +
        "bundle reads by time (of each device of its lab and label, the last snapshot at or before its " +
        "pre-flight, start and end, so that every finished run's bundle still replays), every real change (`payload_changed` and `stable_changed` not " +
        "false) and the snapshot before it, the newest per device and label, and the first per device, label " +
        "and `keepOnePer`; deletes the rest in batches of short transactions, then the payloads no snapshot " +
        "refers to any more. Snapshots not yet moved by the compaction (`snapshots_legacy`, migration 0017) are " +
        "never deleted, nor a snapshot whose next or previous one of its device and label is such a row: a later " +
        "prune, once they are compacted, decides them. " +
        "`dryRun: true` answers the same counts and changes nothing. Each prune is recorded " +
        "(who, policy, counts) and resumable: after an interrupted prune, the next request finishes it first " +
        "(with its own policy) and answers `resumed: true`; a prune running elsewhere is a 409. Admin role only.",
      request: { body: { content: { "application/json": { schema: PruneRequest } }, required: true } },
      responses: {
        200: json(PruneResult, "What was deleted (or, dry run, would be)"),
        ...problemResponses,
        403: problemResponse("The token's role is not admin"),
        ...conflictResponse,
      },
    }),
    async (c) => {
      const body = c.req.valid("json");
      const who = principalOf(c);
      const r = await pruneSnapshots(svc.db.kysely, { ...body, actor: who ? `token:${who.name}` : "token" });
      return c.json(r, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/api/admin/dut/snapshot-prunes",
      operationId: "listSnapshotPrunes",
      tags: ["Snapshots"],
      summary: "The prune records, newest first (admin)",
      description:
        "The audit trail of `POST /api/admin/dut/snapshots/prune` and `deno task prune` (dry runs are not " +
        "recorded): who, the policy, the cut-off, the state (`running` until it ends; an interrupted prune " +
        "stays `running` until the next prune finishes it) and what it deleted. The latest 100. Admin role only.",
      responses: {
        200: json(z.object({ prunes: z.array(PruneRecord) }), "The records"),
        ...problemResponses,
        403: problemResponse("The token's role is not admin"),
      },
    }),
    async (c) => c.json({ prunes: await listPrunes(svc.db.kysely) }, 200),
  );
}
