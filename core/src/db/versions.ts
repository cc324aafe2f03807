/**
 * The `table_versions` counters (migration 0010) as the embedded database announces them: PGlite is started with
 * `dutlab.notify_versions=on`, so every committed write of a counter sends a NOTIFY on
 * {@link VERSIONS_CHANNEL} (migration 0030), and the service, the only process that can write to its data
 * directory (the lock file), hears each of them before the commit's own caller resumes: PGlite calls its
 * listeners in microtasks queued while it parses the COMMIT's answer, and the worker (`DUT_PGLITE_WORKER=on`)
 * posts them before that answer. A listing (http/list_cache.ts) then answers from what it kept without reading
 * the version first, so a request during a scan no longer waits for the write transaction that holds PGlite's
 * one session.
 *
 * PostgreSQL has no such object (`Db.versions` is absent): several instances and tools write there, and the
 * listing reads the version before every answer.
 *
 * @module
 */

/** The channel migration 0030's trigger notifies on. */
export const VERSIONS_CHANNEL = "dutlab_table_versions";

/** The start parameters that make PGlite's session send the notifications (`-c` pairs). */
export const NOTIFY_VERSIONS_PARAMS = ["-c", "dutlab.notify_versions=on"] as const;

/** What the process knows of the counters, from the notifications it has heard. */
export class LocalVersions {
  readonly #known = new Map<string, string>();
  /** Notifications heard, of any counter: a read that saw one arrive meanwhile is not kept. */
  #heard = 0;

  /** One notification's payload (`{"name", "version"}`, version null when the row was deleted). */
  notify(payload: string): void {
    this.#heard++;
    let name: unknown, version: unknown;
    try {
      ({ name, version } = JSON.parse(payload) as { name?: unknown; version?: unknown });
    } catch {
      // Not ours: forget everything rather than keep a counter that may have moved.
      this.#known.clear();
      return;
    }
    if (typeof name !== "string") this.#known.clear();
    else if (typeof version === "string") this.#known.set(name, version);
    else this.#known.delete(name);
  }

  /**
   * The counter `name`: as last announced, or else from `read` (then kept, unless a notification arrived while it
   * ran). Null when there is no such row (then nothing is kept).
   */
  async get(name: string, read: () => Promise<string | null>): Promise<string | null> {
    const known = this.#known.get(name);
    if (known !== undefined) return known;
    const heard = this.#heard;
    const version = await read();
    if (version !== null && heard === this.#heard) this.#known.set(name, version);
    return this.#known.get(name) ?? version;
  }
}

/**
 * The counters of a PGlite session that `listen` subscribes to ({@link VERSIONS_CHANNEL}); when subscribing
 * fails, `close` runs (the database is not handed out) and the error is thrown.
 */
export async function localVersions(
  listen: (channel: string, onNotify: (payload: string) => void) => Promise<unknown>,
  close: () => Promise<unknown>,
): Promise<LocalVersions> {
  const versions = new LocalVersions();
  try {
    await listen(VERSIONS_CHANNEL, (payload) => versions.notify(payload));
  } catch (e) {
    await close().catch(() => {});
    throw e;
  }
  return versions;
}
