/**
 * The poll cycle's write of snapshot rows in the narrow layout (migration 2026_11_25_0017), set-based: a batch
 * of polls costs three statements whatever its size (the series; the payload ids, unless the caller knows
 * them; the rows with the series' state and the latest pointers; one more for an adapter release new to the
 * writer), where an insert through the `snapshots` view runs its
 * INSTEAD OF trigger (six look-ups and writes) once per row.
 *
 * The change flags are computed exactly as that trigger computes them (`snapshots_view_insert`): from the
 * series' newest payload hash and stable hash in `snapshot_series`, read under a row lock so that concurrent
 * writers of one series compare in the order they write (FOR NO KEY UPDATE: other inserts' foreign-key checks on
 * the series, KEY SHARE, do not wait for it). core/src/runs/poller_store_test.ts checks that both paths
 * give the same flags.
 *
 * @module
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { PREPARED } from "../db/prepared.ts";

/** One snapshot to write. Within a batch a (device, label) appears at most once (one poll per device). */
export interface SnapshotWrite {
  deviceId: string;
  label: string;
  /** The payload's SHA-256 (hex); the payload row exists and has its id (see {@link payloadIds}). */
  sha256: string;
  /** The hash without volatile paths; null when not computed. */
  stableSha256: string | null;
  module: string;
  version: string;
}

/** A written row: its id (digits), device and label, and its payload's hash. */
export interface WrittenRow {
  id: string;
  device_id: string;
  endpoint_label: string;
  sha256: string;
}

interface SeriesState {
  id: number;
  device_id: string;
  endpoint_label: string;
  last_payload_sha256: string | null;
  last_stable_sha256: string | null;
}

const key = (device: string, label: string) => `${device}\n${label}`;

/**
 * Ids for the payloads with these hashes, which must exist: payloads stored before migration 0017 get one now
 * (locked in hash order, so that concurrent writers cannot deadlock). Call it before taking FOR KEY SHARE locks
 * on the payloads: giving an id is an update of a key column.
 */
export async function payloadIds(tx: Kysely<Database>, hashes: string[]): Promise<void> {
  if (!hashes.length) return;
  await sql`update snapshot_payloads set id = nextval('snapshot_payloads_id_seq')
    where sha256 in (select sha256 from snapshot_payloads
      where sha256 = any(${hashes}::text[]) and id is null order by sha256 for update)
      and id is null`.execute(tx);
}

/** The series of these (device, label) pairs, added when missing, locked in id order. */
async function lockSeries(tx: Kysely<Database>, items: SnapshotWrite[]): Promise<Map<string, SeriesState>> {
  const devices = items.map((i) => i.deviceId);
  const labels = items.map((i) => i.label);
  const read = async () =>
    new Map(
      (await sql<SeriesState>`
        select ${
        sql.raw(PREPARED)
      } s.id, s.device_id, s.endpoint_label, s.last_payload_sha256, s.last_stable_sha256
        from snapshot_series s
        join unnest(${devices}::uuid[], ${labels}::text[]) v(d, l) on s.device_id = v.d and s.endpoint_label = v.l
        order by s.id for no key update of s`.execute(tx)).rows.map((
        s,
      ) => [key(s.device_id, s.endpoint_label), s]),
    );
  let series = await read();
  if (series.size < items.length) {
    const missing = items.filter((i) => !series.has(key(i.deviceId, i.label)));
    // Seeded from the newest row not yet compacted (`snapshot_series_of`, migration 0017).
    await sql`select snapshot_series_of(v.d, v.l) from unnest(${missing.map((i) => i.deviceId)}::uuid[],
      ${missing.map((i) => i.label)}::text[]) v(d, l)`.execute(tx);
    series = await read();
  }
  return series;
}

/**
 * The adapter release id of each module and version, added when missing. `known` holds releases seen
 * committed before (a release never changes nor goes while rows reference it); it gains the ones this read
 * found already stored, never one this transaction adds (it could still roll back).
 */
async function releaseIds(
  tx: Kysely<Database>,
  items: SnapshotWrite[],
  known: Map<string, number>,
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const pairs = [...new Map(items.map((i) => [key(i.module, i.version), i])).values()]
    .filter((p) => {
      const id = known.get(key(p.module, p.version));
      if (id !== undefined) out.set(key(p.module, p.version), id);
      return id === undefined;
    });
  if (!pairs.length) return out;
  const rows = (await sql<{ id: number; module: string; version: string; fresh: boolean }>`
    with v(m, ver) as (select * from unnest(${pairs.map((p) => p.module)}::text[],
        ${pairs.map((p) => p.version)}::text[])),
      ins as (insert into adapter_releases (module, version) select m, ver from v
        on conflict (module, version) do nothing returning id, module, version)
    select id, module, version, true as fresh from ins
    union all
    select r.id, r.module, r.version, false from adapter_releases r join v on r.module = v.m and r.version = v.ver`
    .execute(tx)).rows;
  for (const r of rows) {
    out.set(key(r.module, r.version), r.id);
    if (!r.fresh) known.set(key(r.module, r.version), r.id);
  }
  return out;
}

/**
 * What a writer may already know: payload ids by hash (held by the caller in this transaction), adapter release
 * ids seen committed (kept across batches).
 */
export interface KnownIds {
  payloadIds?: Map<string, string>;
  releases?: Map<string, number>;
}

/**
 * Write one row per snapshot into `snapshot_rows`, stamped `at` and linked to the active run, and move each
 * series' state on; returns the rows in the order given.
 */
export async function writeSnapshotRows(
  tx: Kysely<Database>,
  items: SnapshotWrite[],
  at: Date,
  executionId: string | null,
  known: KnownIds = {},
): Promise<WrittenRow[]> {
  if (!items.length) return [];
  const series = await lockSeries(tx, items);
  const releases = await releaseIds(tx, items, known.releases ?? new Map());
  const hashes = [...new Set(items.map((i) => i.sha256))];
  const ids = known.payloadIds && hashes.every((h) => known.payloadIds!.has(h)) ? known.payloadIds : new Map(
    (await sql<{ sha256: string; id: string }>`select ${
      sql.raw(PREPARED)
    } sha256, id::text as id from snapshot_payloads
        where sha256 = any(${hashes}::text[])`.execute(tx)).rows.map((r) => [r.sha256, r.id]),
  );
  const rows = items.map((i) => {
    const s = series.get(key(i.deviceId, i.label));
    const payloadId = ids.get(i.sha256);
    if (!s || !payloadId) throw new Error(`No series or payload id for ${i.deviceId} ${i.label} ${i.sha256}`);
    const changed = s.last_payload_sha256 !== null && s.last_payload_sha256 !== i.sha256;
    const stable = !changed
      ? false
      : s.last_stable_sha256 === null || i.stableSha256 === null
      ? null
      : s.last_stable_sha256 !== i.stableSha256;
    return { i, s, payloadId, release: releases.get(key(i.module, i.version))!, changed, stable };
  });
  // The rows, each series' state moved on to its new row and each (device, label)'s latest snapshot pointed at
  // it with its hash and time (`snapshot_latest`, migration 0021), in one statement: on PGlite a statement
  // costs about 0.6 ms of the service's CPU whatever it does.
  const written = (await sql<{ id: string; series_id: number }>`${sql.raw(PREPARED)}
    with v(p, s, r, c, sc, sha, st, d, l, o) as (
      select * from unnest(${rows.map((r) => r.payloadId)}::bigint[], ${rows.map((r) => r.s.id)}::int[],
        ${rows.map((r) => r.release)}::smallint[], ${rows.map((r) => r.changed)}::bool[],
        ${rows.map((r) => r.stable)}::bool[], ${rows.map((r) => r.i.sha256)}::text[],
        ${rows.map((r) => r.i.stableSha256)}::text[], ${rows.map((r) => r.i.deviceId)}::uuid[],
        ${rows.map((r) => r.i.label)}::text[]) with ordinality),
    ins as (
      insert into snapshot_rows (collected_at, payload_id, series_id, release_id, payload_changed,
        stable_changed, test_run_execution_id)
      select ${at}::timestamptz, v.p, v.s, v.r, v.c, v.sc, ${executionId}::uuid from v order by v.o
      returning id, series_id),
    upd as (
      update snapshot_series se set last_id = ins.id, last_payload_sha256 = v.sha, last_stable_sha256 = v.st
      from ins join v on v.s = ins.series_id where se.id = ins.series_id),
    lat as (
      insert into snapshot_latest (device_id, endpoint_label, snapshot_id, payload_sha256, collected_at)
      select v.d, v.l, ins.id, v.sha, ${at}::timestamptz from ins join v on v.s = ins.series_id order by v.o
      on conflict (device_id, endpoint_label) do update set snapshot_id = excluded.snapshot_id,
        payload_sha256 = excluded.payload_sha256, collected_at = excluded.collected_at)
    select id::text as id, series_id from ins`.execute(tx)).rows;
  const idOf = new Map(written.map((w) => [w.series_id, w.id]));
  return rows.map((r) => ({
    id: idOf.get(r.s.id)!,
    device_id: r.i.deviceId,
    endpoint_label: r.i.label,
    sha256: r.i.sha256,
  }));
}
