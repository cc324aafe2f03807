/**
 * The audit records of snapshot prunes (`GET /api/admin/dut/snapshot-prunes`).
 *
 * @module
 */
import type { Kysely } from "kysely";
import type { Database } from "../db/schema.ts";
import { jsonValue } from "../db/json.ts";
import type { PruneCount, PrunePolicy } from "./prune_types.ts";

/** One prune's audit record, as `GET /api/admin/dut/snapshot-prunes` lists it. */
export interface PruneRecord {
  pruneId: string;
  actor: string;
  policy: PrunePolicy;
  cutoff: string;
  status: "running" | "finished";
  startedAt: string;
  finishedAt: string | null;
  /** Every snapshot id up to this one has been decided. */
  cursorId: string;
  batches: number;
  snapshots: number;
  snapshotBytes: number;
  payloads: number;
  payloadBytes: number;
  counts: PruneCount[];
}

/** The newest prune records first (at most `limit`). */
export async function listPrunes(db: Kysely<Database>, limit = 100): Promise<PruneRecord[]> {
  const rows = await db.selectFrom("snapshot_prunes").selectAll().orderBy("id", "desc").limit(limit)
    .execute();
  const iso = (d: Date | string | null) => d === null ? null : new Date(d).toISOString();
  return rows.map((r) => ({
    pruneId: String(r.id),
    actor: r.actor,
    policy: jsonValue<PrunePolicy>(r.policy),
    cutoff: iso(r.cutoff)!,
    status: r.status as "running" | "finished",
    startedAt: iso(r.started_at)!,
    finishedAt: iso(r.finished_at),
    cursorId: String(r.cursor_id),
    batches: r.batches,
    snapshots: Number(r.deleted_snapshots),
    snapshotBytes: Number(r.snapshot_bytes),
    payloads: Number(r.freed_payloads),
    payloadBytes: Number(r.freed_payload_bytes),
    counts: jsonValue<PruneCount[]>(r.counts),
  }));
}
