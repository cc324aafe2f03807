/**
 * The embedded database opened while the service loads (issue 53, restart): `server.ts` calls
 * {@link openEarly} before it imports anything else. With PGlite in a worker (`DUT_PGLITE_WORKER`, on by
 * default) and no lock file in the data directory, this takes the directory's lock and starts the worker's
 * open of its database (on a first start, after the worker has unpacked the shipped template: issue 53, cold
 * start), which then runs on another core while the main thread loads and evaluates the rest of the service
 * (about half a second each). `start()` (runtime/start.ts) takes it over through
 * {@link takeEarlyOpen} when the parsed environment names the same directory; the environment is still
 * validated there first, and a start that fails ends the process as before.
 *
 * Left to the usual path: PostgreSQL (`DATABASE_URL` set), PGlite in the main thread, a half-made database
 * directory (no `PG_VERSION`), a lock file present (in use, or stale: its warnings need the log) and a
 * configured `DUT_PGLITE_SHARED_BUFFERS` (validated first). A first start's early open that is not taken over
 * leaves nothing behind: its database, and the data directory if it made it, are removed.
 *
 * This module loads only the lock and the worker's stand-in (no zod, Kysely or the service).
 *
 * @module
 */
import { tryLockDataDirSync } from "./datadir_lock.ts";
import { openRemotePglite, PGLITE_SHARED_BUFFERS, type RemotePglite } from "../db/pglite_remote.ts";

/** `DUT_DATA_DIR` when unset (config.ts). */
export const DEFAULT_DATA_DIR = "./.data";
/** `DUT_PGLITE_WORKER` when unset (config.ts). */
export const DEFAULT_PGLITE_WORKER: "on" | "off" = "on";

/** An open begun by {@link openEarly}: the directory's lock, then PGlite opening in its worker. */
export interface EarlyOpen {
  /** The data directory (as `DUT_DATA_DIR` gives it, trimmed). */
  dir: string;
  lock: { release(): void };
  remote: Promise<RemotePglite>;
  /** A first start: the worker makes the database from the template (`remote` settles once it is open). */
  fresh: boolean;
  /** The data directory did not exist before (a first start's that is not taken over removes it). */
  madeDir: boolean;
}

let early: EarlyOpen | null = null;

/**
 * Begin opening the embedded database of `env` in its worker, if the usual start would open an existing
 * data directory there (see the module's comment); else do nothing. Whether it began. Never throws: its
 * failures surface in {@link takeEarlyOpen}, where the usual start would have met them.
 */
export function openEarly(env: Record<string, string | undefined>): boolean {
  if (early || env.DATABASE_URL !== undefined || env.DUT_PGLITE_SHARED_BUFFERS !== undefined) return false;
  if ((env.DUT_PGLITE_WORKER ?? DEFAULT_PGLITE_WORKER) !== "on") return false;
  const dir = env.DUT_DATA_DIR?.trim() || DEFAULT_DATA_DIR;
  const exists = (p: string) => {
    try {
      Deno.statSync(p);
      return true;
    } catch {
      return false;
    }
  };
  const fresh = !exists(`${dir}/pglite`);
  if (!fresh && !exists(`${dir}/pglite/PG_VERSION`)) return false;
  const madeDir = !exists(dir);
  // Synchronous: the main thread is about to evaluate the service's modules, a few long turns of the event
  // loop; the worker must be asked to open before them, not between them.
  try {
    if (madeDir) Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch {
    return false; // the usual start reports it
  }
  const lock = tryLockDataDirSync(dir);
  if (!lock) return false;
  const remote = openRemotePglite({
    dataDir: `${dir}/pglite`,
    sharedBuffers: PGLITE_SHARED_BUFFERS,
    ...(fresh ? { fromTemplate: true } : {}),
  });
  remote.catch(() => {}); // handled by whoever takes it; not an unhandled rejection meanwhile
  early = { dir, lock, remote, fresh, madeDir };
  return true;
}

/**
 * The early open for `dir` with PGlite's default buffers in a worker, taken once; null if none was begun.
 * One begun for anything else (the parsed environment differs from the raw one) is closed and its lock
 * released first, so the usual start can take the directory.
 */
export async function takeEarlyOpen(
  want: { dir: string; worker: boolean; sharedBuffers: string | undefined } | null,
): Promise<EarlyOpen | null> {
  const e = early;
  early = null;
  if (!e) return null;
  if (want && want.worker && want.sharedBuffers === undefined && want.dir === e.dir) return e;
  try {
    await (await e.remote.catch(() => null))?.close();
    // Loaded here only: this module keeps the template's unpacker (nanotar, node:zlib) off a start's first turn.
    if (e.fresh) await (await import("../db/template.ts")).removeUnpacked(`${e.dir}/pglite`);
  } finally {
    e.lock.release();
  }
  if (e.madeDir) await Deno.remove(e.dir).catch(() => {}); // only if nothing else was put there
  return null;
}
