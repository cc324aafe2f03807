/**
 * The poll store's payload write (`store.ts`): each distinct payload of a batch stored once, held against a
 * prune, and its id found for the snapshot rows.
 *
 * @module
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { PREPARED } from "../db/prepared.ts";
import { payloadIds } from "../snapshots/write.ts";
import { concatBytes } from "../util/bytes.ts";
import type { HashedSnapshot } from "./hash.ts";

const ENCODER = new TextEncoder();

/** Inserts the batch's payloads that are not stored yet; per job index, how many it added. */
export async function writePayloads(
  tx: Kysely<Database>,
  withSnapshots: ReadonlyArray<{ snapshots: readonly HashedSnapshot[]; i: number }>,
  binary: boolean,
): Promise<{ added: Map<number, number>; ids: Map<string, string> }> {
  // In hash order, so concurrent writers sharing payloads take their row locks in one order.
  const owner = new Map<string, { h: HashedSnapshot; i: number }>();
  for (const { snapshots, i } of withSnapshots) {
    for (const h of snapshots) if (!owner.has(h.sha256)) owner.set(h.sha256, { h, i });
  }
  const unique = [...owner.values()].sort((a, b) => a.h.sha256 < b.h.sha256 ? -1 : 1);
  // Arrays, not a VALUES list: one statement text whatever the batch's size, prepared on PostgreSQL. With
  // `binary`, the payloads' UTF-8 bytes go as one bytea, each cut out by its offset and length: one binary
  // parameter that neither node-postgres nor the server escapes or parses as an array of large texts.
  const insert = async (list: typeof unique) => {
    if (!binary) {
      return (await sql<{ sha256: string; id: string }>`${sql.raw(PREPARED)}
      insert into snapshot_payloads (sha256, payload, size_bytes)
      select v.sha, v.t, v.n from unnest(${list.map(({ h }) => h.sha256)}::text[],
        ${list.map(({ h }) => h.text)}::text[], ${
        list.map(({ h }) => h.size)
      }::int[]) with ordinality v(sha, t, n, o)
      order by v.o
      on conflict (sha256) do nothing returning sha256, id::text as id`.execute(tx)).rows;
    }
    const parts = list.map(({ h }) => h.bytes ?? ENCODER.encode(h.text));
    const offsets: number[] = [];
    let at = 0;
    for (const p of parts) {
      offsets.push(at);
      at += p.length;
    }
    return (await sql<{ sha256: string; id: string }>`${sql.raw(PREPARED)}
      insert into snapshot_payloads (sha256, payload, size_bytes)
      select v.sha, convert_from(substring(${concatBytes(parts)}::bytea from v.at + 1 for v.n), 'UTF8'), v.n
      from unnest(${list.map(({ h }) => h.sha256)}::text[], ${offsets}::int[], ${
      parts.map((p) => p.length)
    }::int[]) with ordinality v(sha, at, n, o)
      order by v.o
      on conflict (sha256) do nothing returning sha256, id::text as id`.execute(tx)).rows;
  };
  // Hold every payload already stored (FOR KEY SHARE, what the snapshots' foreign-key check takes): a prune
  // (core/src/snapshots/prune.ts) can no longer free one of them before this transaction's snapshots reference
  // it. Only the payloads not stored yet are sent, with their text: a poll whose payloads did not change sends
  // none (BENCHMARKS.md section 2c).
  const hold = (hashes: string[]) =>
    tx.selectFrom("snapshot_payloads").modifyFront(sql.raw(PREPARED))
      .select(["sha256", sql<string | null>`id::text`.as("id")])
      .where("sha256", "=", sql<string>`any(${hashes}::text[])`).orderBy("sha256").forKeyShare().execute();
  const ids = new Map<string, string>();
  const added = new Map<number, number>();
  let want = unique;
  for (let round = 0; want.length; round++) {
    // A payload another writer stored meanwhile (the insert did nothing for it) is held in the next round; one
    // a prune freed meanwhile is inserted again. A batch still missing payloads after three rounds fails (and
    // its polls are then written one by one).
    if (round === 3) throw new Error(`${want.length} payload(s) kept changing while this batch stored them`);
    const held = await hold(want.map(({ h }) => h.sha256));
    // Payloads stored before migration 0017 get their id when first written again (rare: the compaction gives
    // the others theirs).
    const noId = held.filter((r) => r.id === null).map((r) => r.sha256);
    if (noId.length) {
      await payloadIds(tx, noId);
      held.push(...await hold(noId));
    }
    for (const r of held) if (r.id !== null) ids.set(r.sha256, r.id);
    const missing = want.filter(({ h }) => !ids.has(h.sha256));
    if (!missing.length) break;
    for (const { sha256, id } of await insert(missing)) {
      ids.set(sha256, id);
      const i = owner.get(sha256)!.i;
      added.set(i, (added.get(i) ?? 0) + 1);
    }
    want = missing.filter(({ h }) => !ids.has(h.sha256));
  }
  return { added, ids };
}
