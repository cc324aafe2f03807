import type { Runtime } from "./handle.ts";
import { compactSnapshots } from "../snapshots/compact.ts";
import { logger } from "../util/log.ts";

const log = logger("snapshots", "compact");

/** How long a `serve` whose compaction found another runner (or failed) waits before it tries again. */
const RETRY_MS = 60_000;

/** Resolve after `ms`, or at once when `signal` is aborted. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * Move the snapshots stored before migration 2026_11_25_0017 into the narrow layout in the background of
 * `serve` (core/src/snapshots/compact.ts), unless DUT_SNAPSHOT_COMPACTION=off. It starts after the server
 * listens and never delays it; one runner at a time across instances (an advisory lock per batch: an
 * instance that finds it taken tries again a minute later, so a second instance takes over if the first
 * stops); a failed batch (the database away) is retried a minute later. The runtime's `close()` stops it
 * between two batches (the one in flight commits, at most a few hundred milliseconds). Returns the job's
 * promise (tests), which never rejects.
 */
export function startCompaction(rt: Runtime): Promise<void> {
  if (rt.config.DUT_SNAPSHOT_COMPACTION === "off") {
    log.info(
      "Snapshot compaction disabled by DUT_SNAPSHOT_COMPACTION=off (deno task compact moves old rows)",
    );
    return Promise.resolve();
  }
  const ac = new AbortController();
  const job = (async () => {
    while (!ac.signal.aborted) {
      try {
        const r = await compactSnapshots(rt.db.kysely, {
          batchSize: rt.config.DUT_SNAPSHOT_COMPACTION_BATCH,
          signal: ac.signal,
        });
        if (r.end !== "busy") return;
        log.debug("Another instance is compacting snapshots; trying again in a minute");
      } catch (e) {
        log.warn("Snapshot compaction failed ({error}); trying again in a minute", { error: String(e) });
      }
      await pause(RETRY_MS, ac.signal);
    }
  })();
  rt.defer(async () => {
    ac.abort();
    await job;
  });
  return job;
}
