import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { sha256Hex } from "../util/hash.ts";

/** At most this many bytes of answers are kept (the whole list of 1,000 devices is about 0.5 MB). */
const MAX_BYTES = 32 * 1024 * 1024;

/**
 * The device list's answers (the whole list and its pages, per query), kept between changes of the devices
 * table. Before answering from one, a primary-key read gets the table's version: a counter that a deferred
 * trigger raises in every transaction that inserts, updates (a poll, a pin, a PATCH, by any instance) or
 * deletes a device (migration `2026_11_24_0010_devices_version`). The version is read before the rows, so an
 * answer is never kept under a version older than its content; a change committed later gives a new version
 * and the next request rebuilds. Least recently used answers are dropped past {@link MAX_BYTES}.
 */
export class DeviceListCache {
  #entries = new Map<string, { version: string; body: Uint8Array<ArrayBuffer>; etag: string }>();
  #bytes = 0;
  constructor(private db: Kysely<Database>) {}

  async version(): Promise<string> {
    const r = await sql<{ v: string }>`select version::text as v from table_versions where name = 'devices'`
      .execute(this.db);
    return r.rows[0]?.v ?? "";
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
    const text = await build();
    if (text === null) return null;
    const body = new TextEncoder().encode(text);
    const entry = { version, body, etag: `"${await sha256Hex(body)}"` };
    this.#drop(key);
    this.#entries.set(key, entry);
    this.#bytes += body.byteLength;
    for (const [k] of this.#entries) {
      if (this.#bytes <= MAX_BYTES || k === key) break;
      this.#drop(k);
    }
    return entry;
  }

  #drop(key: string) {
    const old = this.#entries.get(key);
    if (!old) return;
    this.#bytes -= old.body.byteLength;
    this.#entries.delete(key);
  }
}
