/**
 * A prune's policy and counts, shared by the prune, its records and its tally.
 *
 * @module
 */
/** What to keep: everything younger than `olderThanDays`; of older snapshots, one per `keepOnePer`. */
export interface PrunePolicy {
  olderThanDays: number;
  keepOnePer: "hour" | "day";
}

/** What a prune deleted (or a dry run would delete) of one device and label. */
export interface PruneCount {
  deviceId: string;
  endpointLabel: string;
  snapshots: number;
  /** Sum of the deleted rows' sizes (`pg_column_size`, heap tuple data; index entries not counted). */
  snapshotBytes: number;
}
