/**
 * The running totals of a prune (core/src/snapshots/prune.ts), per device and label.
 *
 * @module
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import type { PruneCount } from "./prune_types.ts";

/** A deleted (or, dry run, deletable) row of `snapshot_rows`: its series, payload and size. */
export type RowOf = { series_id: string; payload_id: string; bytes: number | string };

/** A deleted row with its device and label. */
export type Row = { device_id: string; endpoint_label: string; payload_id: string; bytes: number | string };

/** Snapshots and payloads deleted, in total and per device and label. */
export class Tally {
  snapshots = 0;
  snapshotBytes = 0;
  payloads = 0;
  payloadBytes = 0;
  #counts = new Map<string, PruneCount>();
  constructor(counts: PruneCount[] = []) {
    for (const c of counts) this.#counts.set(`${c.deviceId}\u0000${c.endpointLabel}`, { ...c });
  }
  add(rows: Row[]) {
    for (const r of rows) {
      const key = `${r.device_id}\u0000${r.endpoint_label}`;
      let c = this.#counts.get(key);
      if (!c) {
        this.#counts.set(
          key,
          c = { deviceId: r.device_id, endpointLabel: r.endpoint_label, snapshots: 0, snapshotBytes: 0 },
        );
      }
      c.snapshots++;
      c.snapshotBytes += Number(r.bytes);
      this.snapshots++;
      this.snapshotBytes += Number(r.bytes);
    }
  }
  counts(): PruneCount[] {
    return [...this.#counts.values()].sort((a, b) =>
      a.deviceId < b.deviceId ? -1 : a.deviceId > b.deviceId ? 1 : a.endpointLabel < b.endpointLabel ? -1 : 1
    );
  }
}

/**
 * The device and label of each series id, read once per series (a series never changes them): all of them by
 * {@link SeriesNames.load} at a prune's start (one query instead of one per batch), a series added since then
 * when first met.
 */
export class SeriesNames {
  #names = new Map<string, { device_id: string; endpoint_label: string }>();
  /** Read every series' device and label. */
  async load(db: Kysely<Database>): Promise<void> {
    const all = await sql<{ id: string; device_id: string; endpoint_label: string }>`
      select id::text as id, device_id, endpoint_label from snapshot_series`.execute(db);
    for (const f of all.rows) {
      this.#names.set(f.id, { device_id: f.device_id, endpoint_label: f.endpoint_label });
    }
  }
  /** `rows` with their device and label. */
  async of(db: Kysely<Database>, rows: RowOf[]): Promise<Row[]> {
    const missing = [...new Set(rows.map((r) => r.series_id))].filter((id) => !this.#names.has(id));
    if (missing.length) {
      const found = await sql<{ id: string; device_id: string; endpoint_label: string }>`
        select id::text as id, device_id, endpoint_label from snapshot_series where id = any(${missing}::int[])`
        .execute(db);
      for (const f of found.rows) {
        this.#names.set(f.id, { device_id: f.device_id, endpoint_label: f.endpoint_label });
      }
    }
    return rows.map((r) => ({ ...this.#names.get(r.series_id)!, payload_id: r.payload_id, bytes: r.bytes }));
  }
}
