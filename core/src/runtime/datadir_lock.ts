/**
 * The data directory's lock file (embedded PGlite is single-process), apart from the secrets of datadir.ts so
 * that runtime/early_open.ts can take the directory before the rest of the service loads.
 *
 * @module
 */
import { StartupError } from "../errors.ts";
import { logger } from "../util/log.ts";

/** What a lock file records: the owner's PID and, where the OS tells it, the process's start time. */
interface LockOwner {
  pid: number;
  /** Start time of the process in clock ticks since boot (`/proc/<pid>/stat` field 22); null if unknown. */
  start: string | null;
}

/**
 * Take the data directory for this process. PGlite is single-process: a second process opening the
 * same directory would corrupt it, so a lock file is created atomically. It names the owner by its PID
 * and its start time: a lock whose PID is dead, or whose PID now belongs to another process (PIDs are
 * reused, e.g. after a reboot or in a container, where the owner was PID 1), is stale and taken over.
 * A lock file of the old form (a bare PID) is judged by the PID alone.
 */
export async function lockDataDir(dir: string): Promise<{ release(): void }> {
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const path = `${dir}/dutlab.pid`;
  for (let attempt = 0; attempt < 2; attempt++) {
    if (createLock(path)) return held(path);
    const owner = parseLock(await Deno.readTextFile(path).catch(() => ""));
    if (owner && owner.pid !== Deno.pid && isAlive(owner.pid)) {
      const now = owner.start === null ? null : await processStart(owner.pid);
      if (now === null || now === owner.start) {
        throw new StartupError(
          "DATA_DIR_IN_USE",
          `Data directory ${dir} is in use by process ${owner.pid}; embedded PGlite allows one process. ` +
            `Stop it, use another DUT_DATA_DIR, or set DATABASE_URL to share a PostgreSQL server`,
        );
      }
      logger("startup").warn(
        "Removing stale lock {path}: process {pid} that holds it started after the lock was written " +
          "(its PID was reused)",
        { path, pid: owner.pid },
      );
    } else {
      logger("startup").warn("Removing stale lock {path} left by process {pid}", { path, pid: owner?.pid });
    }
    await Deno.remove(path).catch(() => {});
  }
  throw new StartupError("DATA_DIR_IN_USE", `Could not lock data directory ${dir}`);
}

/**
 * {@link lockDataDir} at once and without waiting for the event loop, where no lock file exists; null where
 * one does (in use or stale: left to `lockDataDir`, which says which) or the directory is missing.
 */
export function tryLockDataDirSync(dir: string): { release(): void } | null {
  const path = `${dir}/dutlab.pid`;
  try {
    return createLock(path) ? held(path) : null;
  } catch {
    return null;
  }
}

/**
 * Creates the lock file at `path` naming this process (PID and start time), atomically; false where one
 * exists. Synchronous: also {@link tryLockDataDirSync}'s, before the event loop turns.
 */
function createLock(path: string): boolean {
  const me: LockOwner = {
    pid: Deno.pid,
    start: startField(() => Deno.readTextFileSync(`/proc/${Deno.pid}/stat`)),
  };
  let f: Deno.FsFile;
  try {
    f = Deno.openSync(path, { createNew: true, write: true, mode: 0o600 });
  } catch (e) {
    if (e instanceof Deno.errors.AlreadyExists) return false;
    throw e;
  }
  try {
    f.writeSync(new TextEncoder().encode(JSON.stringify(me) + "\n"));
  } finally {
    f.close();
  }
  return true;
}

/** The lock file at `path`, written by this process: `release()` removes it while it still names us. */
function held(path: string): { release(): void } {
  return {
    release() {
      try {
        if (parseLock(Deno.readTextFileSync(path))?.pid === Deno.pid) Deno.removeSync(path);
      } catch { /* already gone */ }
    },
  };
}

/** A lock file's owner: `{"pid":…,"start":…}`, or a bare PID (older lock files); null if unreadable. */
export function parseLock(text: string): LockOwner | null {
  const t = text.trim();
  if (/^\d+$/.test(t)) return { pid: Number(t), start: null };
  try {
    const o = JSON.parse(t);
    if (Number.isInteger(o?.pid) && o.pid > 0) {
      return { pid: o.pid, start: typeof o.start === "string" ? o.start : null };
    }
  } catch { /* not a lock */ }
  return null;
}

/** The start time of a process (Linux `/proc/<pid>/stat` field 22), or null where it cannot be read. */
export async function processStart(pid: number): Promise<string | null> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`).catch(() => null);
  return stat === null ? null : startField(() => stat);
}

/** Field 22 of a `/proc/<pid>/stat` text (read by `read`), or null where it cannot be read. */
function startField(read: () => string): string | null {
  try {
    const stat = read();
    // Field 2 (the command name) is in parentheses and may hold spaces: count fields after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const start = fields[22 - 3];
    return start && /^\d+$/.test(start) ? start : null;
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch (e) {
    return !(e instanceof Deno.errors.NotFound) && !String(e).includes("ESRCH");
  }
}
