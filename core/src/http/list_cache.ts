import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { sha256Hex } from "../hash.ts";

/**
 * The unpaged device list's JSON, kept between changes. Before answering from it, one query reads the
 * version of the whole table: the transaction ids (`xmin`) of every row version, so any insert, update
 * (a poll, a pin, a PATCH, by any instance) or delete gives a new version. Reading the version costs one
 * row; rebuilding costs 1,000 decoded rows and ~0.5 MB of JSON (BENCHMARKS.md, scenario 5).
 */
export class DeviceListCache {
  #entries = new Map<string, { version: string; body: Uint8Array<ArrayBuffer>; etag: string }>();
  constructor(private db: Kysely<Database>) {}

  async version(): Promise<string> {
    const r = await sql<{ v: string }>`select count(*)::text || ':' ||
      coalesce(md5(string_agg(xmin::text, ',' order by id)), '') as v from devices`.execute(this.db);
    return r.rows[0].v;
  }

  /** The cached body (UTF-8, encoded once) for `key` at the current version, or a fresh one from `build` (then kept). */
  async get(
    key: string,
    build: () => Promise<string>,
  ): Promise<{ body: Uint8Array<ArrayBuffer>; etag: string }> {
    const version = await this.version();
    const hit = this.#entries.get(key);
    if (hit && hit.version === version) return hit;
    const body = new TextEncoder().encode(await build());
    const entry = { version, body, etag: `"${await sha256Hex(body)}"` };
    if (this.#entries.size >= 32) this.#entries.clear();
    this.#entries.set(key, entry);
    return entry;
  }
}
