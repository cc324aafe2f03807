import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { sha256Hex } from "../util/hash.ts";
import type { Db } from "../db/open.ts";

interface Entry {
  version: string;
  body: Uint8Array<ArrayBuffer>;
  etag: string;
}

/**
 * Answers of a listing (per query), kept between changes of what it reads. Before answering from one, a
 * primary-key read gets a version in `table_versions`: a counter that a deferred trigger raises in every
 * transaction that changes the data, whichever instance or tool commits it. The 'devices' version counts every
 * insert, update (a poll, a pin, a PATCH) and delete of a device (migration `2026_11_24_0010_devices_version`)
 * and every insert and delete of a snapshot (a poll, a prune, a device's cascade, the compaction; migration
 * `2026_11_26_0019_snapshots_version`): the device list and the snapshot listings use it. The version is read
 * before the rows, so an answer is never kept under a version older than its content; a change committed later
 * gives a new version and the next request rebuilds. Without the version row nothing is kept. Least recently
 * used answers are dropped past `maxBytes`.
 *
 * On the embedded database (`versions`, db/versions.ts) the version is not read before each answer: PGlite
 * announces every committed change of a counter, heard before the commit's caller resumes, so the version
 * known in memory is the committed one. A request during a scan is then answered without waiting for the
 * write transaction that holds PGlite's single session.
 */
export class ListCache {
  #entries = new Map<string, Entry>();
  #bytes = 0;
  #pending = new Map<string, { version: string; entry: Promise<Entry | null> }>();
  readonly #db: Kysely<Database>;
  /** The counters as the embedded database announces them (`Db.versions`); absent on PostgreSQL. */
  readonly #versions: Db["versions"];

  /**
   * @param db the database (on PGlite, with its announced versions)
   * @param name the `table_versions` row
   * @param maxBytes at most this many bytes of answers are kept (the whole list of 1,000 devices is about
   * 0.5 MB; the latest 100 snapshots about 170 kB)
   */
  constructor(
    db: Pick<Db, "kysely" | "versions">,
    private name: string,
    private maxBytes = 32 * 1024 * 1024,
  ) {
    this.#db = db.kysely;
    this.#versions = db.versions;
  }

  /** The version, or null when `table_versions` has no such row. */
  version(): Promise<string | null> {
    return this.#versions ? this.#versions.get(this.name, () => this.#read()) : this.#read();
  }

  async #read(): Promise<string | null> {
    const r = await sql<
      { v: string }
    >`select version::text as v from table_versions where name = ${this.name}`
      .execute(this.#db);
    return r.rows[0]?.v ?? null;
  }

  /**
   * The cached body (UTF-8, encoded once) for `key` at the current version, or a fresh one from `build` (then
   * kept). `build` returns null when the query has no answer (a cursor that matches nothing): not kept.
   */
  async get(
    key: string,
    build: () => Promise<string | null>,
  ): Promise<{ body: Uint8Array<ArrayBuffer>; etag: string } | null> {
    const version = await this.version();
    const hit = this.#entries.get(key);
    if (hit && hit.version === version) {
      // Most recently used last: Map keeps insertion order.
      this.#entries.delete(key);
      this.#entries.set(key, hit);
      return hit;
    }
    if (version === null) return await this.#build(build, "");
    // Requests that find no answer while one is being built for the same query at the same version share that
    // build (50 clients after a poll would otherwise build the page 50 times). Sound: every change committed
    // when such a request read the version is counted in it, so it was committed before the build's own read
    // of the version too, and the build reads rows after that.
    const pending = this.#pending.get(key);
    if (pending?.version === version) return await pending.entry;
    const entry = this.#build(build, version);
    this.#pending.set(key, { version, entry });
    try {
      const e = await entry;
      if (e) this.#keep(key, e);
      return e;
    } finally {
      if (this.#pending.get(key)?.entry === entry) this.#pending.delete(key);
    }
  }

  async #build(build: () => Promise<string | null>, version: string): Promise<Entry | null> {
    const text = await build();
    if (text === null) return null;
    const body = new TextEncoder().encode(text);
    return { version, body, etag: `"${await sha256Hex(body)}"` };
  }

  #keep(key: string, entry: Entry) {
    const body = entry.body;
    this.#drop(key);
    if (body.byteLength > this.maxBytes) return;
    this.#entries.set(key, entry);
    this.#bytes += body.byteLength;
    for (const [k] of this.#entries) {
      if (this.#bytes <= this.maxBytes || k === key) break;
      this.#drop(k);
    }
  }

  #drop(key: string) {
    const old = this.#entries.get(key);
    if (!old) return;
    this.#bytes -= old.body.byteLength;
    this.#entries.delete(key);
  }
}
