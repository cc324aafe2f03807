/** Schemas of snapshot pruning (routes_snapshots.ts); re-exported by `schemas.ts`. */
import { z } from "@hono/zod-openapi";

/** Body of `POST /api/admin/dut/snapshots/prune` (docs/data.md "Pruning snapshots"). */
export const PruneRequest = z.object({
  olderThanDays: z.number().int().min(1).max(36500).openapi({
    description:
      "Keep every snapshot younger than this many days (the cut-off is rounded down to the hour or " +
      "day of `keepOnePer`, in UTC)",
    example: 30,
  }),
  keepOnePer: z.enum(["hour", "day"]).default("hour").openapi({
    description: "Of older snapshots, keep (at least) the first one per device, label and hour or UTC day",
  }),
  dryRun: z.boolean().default(false).openapi({
    description: "true: answer what a prune would delete (counts and bytes) and change nothing",
  }),
}).strict().openapi("PruneRequest");

export const PruneCount = z.object({
  deviceId: z.uuid(),
  endpointLabel: z.string(),
  snapshots: z.number().int(),
  snapshotBytes: z.number().int(),
}).openapi("PruneCount");

export const PruneResult = z.object({
  pruneId: z.string().nullable().openapi({ description: "The audit record's id; null for a dry run" }),
  dryRun: z.boolean(),
  resumed: z.boolean().openapi({
    description:
      "true: this request finished an interrupted prune (with that prune's own policy and cut-off)",
  }),
  actor: z.string(),
  policy: z.object({ olderThanDays: z.number().int(), keepOnePer: z.enum(["hour", "day"]) }),
  cutoff: z.iso.datetime(),
  snapshots: z.number().int().openapi({ description: "Snapshots deleted (dry run: that would be)" }),
  snapshotBytes: z.number().int().openapi({
    description:
      "Their row sizes (`pg_column_size` of the `snapshot_rows` row: heap tuple data; indexes not counted)",
  }),
  payloads: z.number().int().openapi({ description: "Payloads no snapshot refers to any more, freed" }),
  payloadBytes: z.number().int().openapi({ description: "Their canonical JSON sizes" }),
  bytes: z.number().int().openapi({ description: "snapshotBytes + payloadBytes" }),
  counts: z.array(PruneCount).openapi({ description: "Per device and label with something deleted" }),
  batches: z.number().int(),
  longestBatchMs: z.number().int().openapi({ description: "The longest batch transaction, milliseconds" }),
}).openapi("PruneResult");

export const PruneRecord = z.object({
  pruneId: z.string(),
  actor: z.string().openapi({ description: "`token:<name>` (API) or `cli:<user>` (deno task prune)" }),
  policy: z.object({ olderThanDays: z.number().int(), keepOnePer: z.enum(["hour", "day"]) }),
  cutoff: z.iso.datetime(),
  status: z.enum(["running", "finished"]),
  startedAt: z.iso.datetime(),
  finishedAt: z.iso.datetime().nullable(),
  cursorId: z.string().openapi({ description: "Every snapshot id up to this one has been decided" }),
  batches: z.number().int(),
  snapshots: z.number().int(),
  snapshotBytes: z.number().int(),
  payloads: z.number().int(),
  payloadBytes: z.number().int(),
  counts: z.array(PruneCount),
}).openapi("PruneRecord");
