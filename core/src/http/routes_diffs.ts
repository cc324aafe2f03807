import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Services } from "../runtime/services.ts";
import { json, notFoundResponse, problemResponses } from "./openapi_util.ts";
import { IdParam, SnapshotIdParam } from "../api/schemas.ts";
import { cursorParam, dateTimeParam, limitParam } from "../api/schemas_query.ts";
import { problems } from "./problem.ts";
import { snapshotDiff } from "../snapshots/diff.ts";
import { listChanges } from "../snapshots/changes.ts";

const snapshotIdParam = (what: string) =>
  z.string().regex(/^\d{1,19}$/, "must be a snapshot id (digits)").openapi({ description: what });

const volatileParam = z.enum(["exclude", "include"], { message: "must be exclude or include" }).optional()
  .openapi({
    description: "`exclude` (default) leaves the adapter's volatile paths out of both payloads " +
      '(docs/polling.md "Diffs and change history"); `include` compares the payloads as stored',
  });

const Operation = z.object({
  op: z.enum(["add", "remove", "replace", "move", "copy", "test"]),
  path: z.string(),
  from: z.string().optional(),
  value: z.unknown().optional(),
}).openapi("JsonPatchOperation", { description: "One RFC 6902 JSON Patch operation" });

const Change = z.object({
  op: z.enum(["add", "remove", "replace", "move", "copy"]),
  path: z.string().openapi({ description: "JSON Pointer (RFC 6901) of the member that changed" }),
  before: z.unknown().optional().openapi({ description: "The value before; absent when there was none" }),
  after: z.unknown().optional().openapi({ description: "The value after; absent when it was removed" }),
}).openapi("ChangeSummary");

const diffFields = {
  patch: z.array(Operation).openapi({
    description: "RFC 6902 operations that turn the older payload into the newer one, applied in order",
  }),
  changes: z.array(Change).openapi({
    description: "One entry per operation, same order; `before` is read from the document as the " +
      "preceding operations left it",
  }),
};

export const SnapshotDiff = z.object({
  snapshotId: z.string(),
  againstId: z.string(),
  deviceId: z.uuid(),
  endpointLabel: z.string(),
  payloadSha256: z.string(),
  againstPayloadSha256: z.string(),
  collectedAt: z.string().openapi({ format: "date-time" }),
  againstCollectedAt: z.string().openapi({ format: "date-time" }),
  volatile: z.enum(["exclude", "include"]),
  volatilePaths: z.array(z.string()).openapi({ description: "Patterns left out of both payloads" }),
  equal: z.boolean().openapi({ description: "Nothing differs (but volatile paths, when excluded)" }),
  ...diffFields,
}).openapi("SnapshotDiff");

export const DeviceChange = z.object({
  snapshotId: z.string(),
  previousId: z.string().openapi({
    description: "The poll of the same label just before; its payload without volatile paths is the " +
      "previous change's",
  }),
  endpointLabel: z.string(),
  collectedAt: z.string().openapi({ format: "date-time" }),
  payloadSha256: z.string(),
  previousPayloadSha256: z.string(),
  ...diffFields,
}).openapi("DeviceChange");

const Remarking = z.object({
  endpointLabel: z.string(),
  belowId: z.string().openapi({
    description: "Polls of this label with a smaller snapshot id are not re-marked yet",
  }),
  remaining: z.number().int().nullable().openapi({
    description: "Flags left to re-mark (null until counted)",
  }),
}).openapi("ChangeRemarking");

const ChangePage = z.object({
  changes: z.array(DeviceChange),
  nextCursor: z.string().nullable(),
  remarking: z.array(Remarking).optional().openapi({
    description: "Present while the adapter's volatile paths for these labels changed recently and the " +
      "stored change markers of older polls are re-marked in the background: those polls are compared in " +
      "full meanwhile: to stay quick a page then reads a bounded number of polls and may hold fewer than " +
      "`limit` changes (even none) with a `nextCursor` to go on; the changes over all pages are the same. " +
      "Absent when nothing is pending.",
  }),
}).openapi("DeviceChangePage");

export const ChangeQuery = z.object({
  label: z.string().min(1).max(100).regex(/^[a-z][a-z0-9_]*$/, "must be a snapshot label like ntp_config")
    .optional().openapi({ description: "Only this label (default: every label of the device)" }),
  since: dateTimeParam("Only polls collected at or after this time"),
  until: dateTimeParam("Only polls collected before this time"),
  cursor: cursorParam,
  limit: limitParam(100, "Page size (1-100, default 20)"),
  volatile: volatileParam,
}).strict();

export function diffRoutes(app: OpenAPIHono, svc: Services) {
  app.openapi(
    createRoute({
      method: "get",
      path: "/api/admin/dut/snapshots/{id}/diff",
      operationId: "diffSnapshot",
      tags: ["Snapshots"],
      summary: "What changed between two snapshots of a device label",
      description:
        "RFC 6902 JSON Patch that turns the `against` snapshot's payload into this one's, with one " +
        "`changes` entry per operation (path, before, after). `against` defaults to the previous snapshot " +
        "of the same device and label. The adapter's volatile paths (clocks, uptimes, counters) are left " +
        "out of both payloads unless `volatile=include`. Equal payload hashes answer an empty diff at once. " +
        "404 for an unknown id, or when the snapshot is the first of its label and no `against` is given; " +
        "400 when the two snapshots are of different labels. Viewer role suffices.",
      request: {
        params: SnapshotIdParam,
        query: z.object({
          against: snapshotIdParam("The snapshot to compare with (default: the previous one)").optional(),
          volatile: volatileParam,
        }).strict(),
      },
      responses: { 200: json(SnapshotDiff, "The diff"), ...problemResponses, ...notFoundResponse },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const q = c.req.valid("query");
      const r = await snapshotDiff(svc.db.kysely, svc.registry, id, q);
      if ("notFound" in r) throw problems.notFound(r.notFound);
      if ("noPrevious" in r) {
        throw problems.notFound(
          `Snapshot "${id}" is the first of its device and label: there is no earlier snapshot to compare ` +
            `with (pass query.against)`,
        );
      }
      if ("labelMismatch" in r) {
        throw problems.badRequest(
          "query.against",
          `is a snapshot of label "${r.labelMismatch.against}", not "${r.labelMismatch.snapshot}"`,
        );
      }
      return c.json(r.ok, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/api/admin/dut/devices/{id}/changes",
      operationId: "listDeviceChanges",
      tags: ["Devices", "Snapshots"],
      summary: "Change history: the polls whose payload changed, newest first",
      description:
        "Only the polls whose payload, without the adapter's volatile paths (unless `volatile=include`), " +
        "differs from the poll of the same label just before; each with its diff against that poll (whose " +
        "non-volatile payload is the previous change's). The first snapshot of a label has nothing before " +
        "it and is not listed. Polls with the same payload hash as the one before are skipped without a " +
        "diff. Filters: `label`, `since`/`until` (collection time); `limit` (1-100, default 20) and the " +
        "opaque `cursor` from `nextCursor` page through older changes. 404 for an unknown device.",
      request: {
        params: IdParam,
        query: ChangeQuery,
      },
      responses: { 200: json(ChangePage, "A page of changes"), ...problemResponses, ...notFoundResponse },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const q = c.req.valid("query");
      const r = await listChanges(svc.db.kysely, svc.registry, id, q);
      if ("noDevice" in r) throw problems.notFound(`No device with id "${id}"`);
      if ("badCursor" in r) {
        throw problems.badRequest("query.cursor", "must be a cursor returned by a previous page");
      }
      return c.json(r, 200);
    },
  );
}
