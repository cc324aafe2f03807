/**
 * The `configuration-drift` annex of a finished run's report (docs/polling.md "Diffs and change history"): every
 * device and label of the lab at start whose payload, without the adapter's volatile paths, differs between
 * the last snapshot collected at or before the run's start and the last one collected at or before its end.
 */
import type { Kysely } from "kysely";
import type { Database } from "../../db/schema.ts";
import type { Registry } from "../../registry.ts";
import { canonicalJson } from "../../util/hash.ts";
import { stripVolatile, volatileFor } from "../../snapshots/volatile.ts";
import { diffPayloads, type PayloadDiff } from "../../snapshots/diff.ts";
import { lastSnapshotAt, lastSnapshotsAt } from "../../snapshots/series.ts";

export interface DriftEntry extends PayloadDiff {
  deviceId: string;
  deviceHostname: string;
  endpointLabel: string;
  startSnapshotId: string;
  endSnapshotId: string;
  startPayloadSha256: string;
  endPayloadSha256: string;
  /** The patterns left out of both payloads. */
  volatilePaths: string[];
}

export interface DriftAnnex {
  /** Device/label pairs with a snapshot at both ends (compared). */
  compared: number;
  drift: DriftEntry[];
  /** Device/label pairs that could not be compared, and why. */
  notCompared: Array<{
    deviceId: string;
    deviceHostname: string;
    endpointLabel: string;
    reason: "no snapshot at start" | "no snapshot at end";
  }>;
}

/** A snapshot the drift compares: its id and payload hash. */
export type Snap = { id: string; payload_sha256: string };

/**
 * Where the drift reads: the last snapshot of a device label collected at or before a moment, and a payload
 * by its SHA-256. The service reads the database ({@link dbDriftSource}); a replay reads an evidence bundle.
 */
export interface DriftSource {
  lastAt(deviceId: string, label: string, at: Date): Promise<Snap | undefined>;
  payload(sha256: string): Promise<unknown>;
  /** Optional: read what `lastAt` will be asked for these pairs at these moments, all at once. */
  prefetch?(pairs: ReadonlyArray<{ deviceId: string; label: string }>, moments: Date[]): Promise<void>;
}

/** The drift's reads from the database (the last snapshot by id collected at or before the moment). */
export function dbDriftSource(db: Kysely<Database>): DriftSource {
  // Prefetched answers by moment, then `device\nlabel`.
  const known = new Map<number, Map<string, Snap>>();
  return {
    // By the series' own indexes, not through the `snapshots` view ordered by id (which sorts every row).
    lastAt: async (deviceId, label, at) => {
      const byPair = known.get(at.getTime());
      if (byPair) return byPair.get(`${deviceId}\n${label}`);
      const s = await lastSnapshotAt(db, deviceId, label, at);
      return s && { id: s.id, payload_sha256: s.payload_sha256 };
    },
    prefetch: async (pairs, moments) => {
      for (const at of moments) {
        const found = await lastSnapshotsAt(db, pairs, at);
        known.set(
          at.getTime(),
          new Map([...found].map(([k, s]) => [k, { id: s.id, payload_sha256: s.payload_sha256 }])),
        );
      }
    },
    payload: async (sha) => {
      const r = await db.selectFrom("snapshot_payloads").select("payload").where("sha256", "=", sha)
        .executeTakeFirstOrThrow();
      return JSON.parse(r.payload);
    },
  };
}

/**
 * Drift of the devices of the lab at start (each label its vendor's adapter collects), between `startedAt`
 * and `endedAt`, read from the database. Equal payload hashes are not read.
 */
export function configurationDrift(
  db: Kysely<Database>,
  registry: Registry,
  devices: ReadonlyArray<{ id: string; hostname: string; vendor: string }>,
  startedAt: Date,
  endedAt: Date,
): Promise<DriftAnnex> {
  return driftOf(dbDriftSource(db), registry, devices, startedAt, endedAt);
}

/** {@link configurationDrift} over any {@link DriftSource}. */
export async function driftOf(
  source: DriftSource,
  registry: Registry,
  devices: ReadonlyArray<{ id: string; hostname: string; vendor: string }>,
  startedAt: Date,
  endedAt: Date,
): Promise<DriftAnnex> {
  const out: DriftAnnex = { compared: 0, drift: [], notCompared: [] };
  await source.prefetch?.(
    devices.flatMap((d) =>
      (registry.adapters.get(d.vendor)?.adapter.labels ?? []).map((label) => ({ deviceId: d.id, label }))
    ),
    [startedAt, endedAt],
  );
  for (const d of devices) {
    const labels = registry.adapters.get(d.vendor)?.adapter.labels ?? [];
    for (const label of labels) {
      const who = { deviceId: d.id, deviceHostname: d.hostname, endpointLabel: label };
      const start = await source.lastAt(d.id, label, startedAt);
      const end = await source.lastAt(d.id, label, endedAt);
      if (!start || !end) {
        out.notCompared.push({ ...who, reason: start ? "no snapshot at end" : "no snapshot at start" });
        continue;
      }
      out.compared++;
      if (start.payload_sha256 === end.payload_sha256) continue;
      const patterns = [...volatileFor(registry, d.vendor, label)];
      const a = stripVolatile(await source.payload(start.payload_sha256), patterns);
      const b = stripVolatile(await source.payload(end.payload_sha256), patterns);
      if (canonicalJson(a) === canonicalJson(b)) continue;
      out.drift.push({
        ...who,
        startSnapshotId: start.id,
        endSnapshotId: end.id,
        startPayloadSha256: start.payload_sha256,
        endPayloadSha256: end.payload_sha256,
        volatilePaths: patterns,
        ...diffPayloads(a, b),
      });
    }
  }
  return out;
}
