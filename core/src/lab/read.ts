import { type Kysely, type RawBuilder, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import type { CheckDevice } from "../check.ts";

/** A deep freeze for what `JSON.parse` returns (plain objects and arrays only), without the allocations. */
function freezeParsed(v: unknown): unknown {
  if (typeof v === "object" && v !== null) {
    Object.freeze(v);
    if (Array.isArray(v)) { for (let i = 0; i < v.length; i++) freezeParsed(v[i]); }
    else for (const k in v) freezeParsed((v as Record<string, unknown>)[k]);
  }
  return v;
}

/** One payload: its text until a check first reads it, then its parsed, frozen value. */
export class PayloadEntry {
  #text: string | null;
  #value: unknown = undefined;

  constructor(text: string, readonly size: number) {
    this.#text = text;
  }

  /** The parsed, frozen payload (parsed on first use; throws when the text is not JSON). */
  get value(): unknown {
    if (this.#text !== null) {
      this.#value = freezeParsed(JSON.parse(this.#text));
      this.#text = null;
    }
    return this.#value;
  }
}

/**
 * Payloads by SHA-256, kept across pre-flights up to a budget of payload text (least recently used first
 * out), parsed when a check first reads them. A payload's hash names its content, and stored payloads are
 * immutable, so an entry is valid for any database and never goes stale; the budget only bounds memory.
 */
export class PayloadCache {
  #entries = new Map<string, PayloadEntry>();
  #bytes = 0;

  constructor(readonly budgetBytes: number) {}

  has(sha: string): boolean {
    return this.#entries.has(sha);
  }

  /** The entry (and marks it recently used), or undefined. */
  get(sha: string): PayloadEntry | undefined {
    const e = this.#entries.get(sha);
    if (!e) return undefined;
    this.#entries.delete(sha);
    this.#entries.set(sha, e);
    return e;
  }

  /** The entry for a payload text read from the database (kept if it fits the budget). */
  put(sha: string, text: string): PayloadEntry {
    const known = this.#entries.get(sha);
    if (known) return known;
    const e = new PayloadEntry(text, text.length);
    if (e.size > this.budgetBytes) return e;
    this.#entries.set(sha, e);
    this.#bytes += e.size;
    for (const [k, old] of this.#entries) {
      if (this.#bytes <= this.budgetBytes) break;
      this.#entries.delete(k);
      this.#bytes -= old.size;
    }
    return e;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#entries.size;
  }

  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
  }
}

/** The process's payload cache: 32 MiB of payload text (~10,000 payloads of a few kB). */
export const payloadCache = new PayloadCache(32 * 1024 * 1024);

/** The latest snapshot of one (device, label), as the lab read returns it. */
export interface Latest {
  id: string;
  /** SHA-256 of its payload. */
  sha: string;
  at: Date;
}

/**
 * One read of the lab (see {@link readLab}): the enabled devices, the latest snapshot of the (label, device)
 * pairs its readers asked for, and their payloads.
 */
export interface LabRead {
  /** Enabled devices, by hostname then id. */
  devices: CheckDevice[];
  /** Label → device id → its latest snapshot of that label (asked-for pairs that have one). */
  latest: Map<string, Map<string, Latest>>;
  /**
   * The payload of every latest snapshot read, by SHA-256 (from {@link payloadCache} or read now), parsed
   * and frozen on first use, once for all readers.
   */
  payloads: Map<string, PayloadEntry>;
}

/** What a reader of the lab needs, given the enabled devices: label → the ids of the devices to read. */
export type LabWants = (devices: CheckDevice[]) => Map<string, Set<string>>;

/** How {@link readLab} reads: now or as of a moment, with or without the payloads. */
export interface LabReadOptions {
  /**
   * Read the lab as it stood at this moment: devices registered at or before it, and per wanted (label,
   * device) the newest snapshot collected at or before it, instead of `snapshot_latest`.
   */
  asOf?: Date;
  /** False: do not read payloads (a dry run names the snapshots it would read, nothing more). */
  payloads?: boolean;
}

/**
 * Read the lab once for one or more readers (the pre-flight of a plan, a run's lab state): at most three
 * SELECTs whatever the number of readers, checks and devices, in one read-only REPEATABLE READ transaction
 * (one view of the database; `db` already in a transaction is read as is): the enabled devices; then,
 * once every reader has said what it wants of them, the latest snapshot of only those (label, device)
 * pairs; then each distinct payload text once, except those in {@link payloadCache}.
 *
 * With `asOf`, "latest" means the newest snapshot collected at or before `asOf`, found per pair by a
 * backward scan of the pair's series that stops at the first row collected at or before `asOf`
 * ({@link latestAsOfSql}; docs/preflight.md, "As of a past moment").
 */
export async function readLab(
  db: Kysely<Database>,
  wants: LabWants[],
  opts: LabReadOptions = {},
): Promise<LabRead> {
  const read = (tx: Kysely<Database>) => readLabIn(tx, wants, opts);
  return db.isTransaction
    ? await read(db)
    : await db.transaction().setIsolationLevel("repeatable read").setAccessMode("read only").execute(read);
}

/** One row of the lab read's snapshot statement. */
export type LatestRow = {
  /** The device's id (UUID, as text). */
  device_id: string;
  /** The snapshot's endpoint label. */
  endpoint_label: string;
  /** The snapshot's id (bigint, as text). */
  snapshot_id: string;
  /** SHA-256 (hex) of the snapshot's payload. */
  sha256: string;
  /**
   * When the snapshot was collected: milliseconds since 1970 (bigint, as text), the instant a driver's Date
   * would hold (truncated to the millisecond), without the driver parsing 3,000 timestamps.
   */
  collected_ms: string;
};

/**
 * `collected_at` as {@link LatestRow.collected_ms}. `date_part` answers float8, where `extract` answers numeric
 * (whose arithmetic costs PostgreSQL about 0.2 ms more per 3,000 rows); exact all the same: the instant truncated
 * to the millisecond, in seconds, times 1000 is far less than half a millisecond from the integer `round` finds.
 */
const collectedMs = (alias: string) =>
  sql`round(date_part('epoch', date_trunc('milliseconds', ${
    sql.ref(`${alias}.collected_at`)
  })) * 1000)::int8::text`;

/**
 * The wanted (label, device) pairs, `n(device_id, li)` with the label `(labels)[n.li]` ({@link labelOf}): from
 * two flat lists, all device ids (UUIDs) comma-separated and each one's label number, which the planner reads
 * as constants, so it knows how many pairs there are (thousands for a pre-flight: hash joins on the pairs, not
 * one index look-up per pair; a few: the look-ups).
 */
function pairsOf(labels: string[], ids: string[]) {
  const li: number[] = [];
  ids.forEach((list, i) => {
    if (!list) return;
    li.push(i + 1); // one per id: the first, then one per comma
    for (let at = list.indexOf(","); at >= 0; at = list.indexOf(",", at + 1)) li.push(i + 1);
  });
  return {
    from: sql`unnest(string_to_array(${ids.filter((list) => list).join(",")}::text, ',')::uuid[],
      string_to_array(${li.join(",")}::text, ',')::int[]) as n(device_id, li)`,
    label: sql`(${labels}::text[])[n.li]`,
  };
}

/**
 * The snapshot statement of a lab read (now): per wanted pair, the snapshot `snapshot_latest` names, with its
 * payload hash and time, which the poll store keeps in that same row (migration 0021): the pairs are answered
 * from `snapshot_latest` alone. Only a row without them (written before 0021, or moved by hand) reads its
 * snapshot, in scalar subqueries that `coalesce` evaluates only then: once the compaction is done (`legacyLeft`
 * false: `snapshots_legacy` is empty in this read's snapshot of the database) by plain look-ups on primary keys,
 * `snapshot_rows` then `snapshot_payloads`; before, in `snapshot_rows` and else in `snapshots_legacy`.
 */
export function latestSql(labels: string[], ids: string[], legacyLeft = true): RawBuilder<LatestRow> {
  const pairs = pairsOf(labels, ids);
  // A pair's value from its snapshot row (`rowExpr` over `r`, and `p` with `payload`), else its legacy row.
  const look = (rowExpr: string, legacyExpr: string, payload: boolean) => {
    const own = sql`select ${sql.raw(rowExpr)} as v from snapshot_rows r
      ${payload ? sql`join snapshot_payloads p on p.id = r.payload_id` : sql``} where r.id = l.snapshot_id`;
    return legacyLeft
      ? sql`(select s.v from ((${own}) union all
          (select ${sql.raw(legacyExpr)} from snapshots_legacy x where x.id = l.snapshot_id) limit 1) s)`
      : sql`(${own})`;
  };
  const sha = look("p.sha256", "x.payload_sha256", true);
  const at = look("r.collected_at", "x.collected_at", false);
  // The `coalesce`s stay in the select list of a fenced subquery (OFFSET 0): a condition on them next to the
  // join would be pushed down into the scan of snapshot_latest and change the plan (measured: 2x slower). Above
  // the fence, a pair whose snapshot neither table has any more has none (as with plain joins).
  return sql<LatestRow>`select * from (select l.device_id::text, l.endpoint_label, l.snapshot_id::text,
        coalesce(l.payload_sha256, ${sha}) as sha256,
        ${collectedMs("c")} as collected_ms
      from ${pairs.from}
      join snapshot_latest l on l.device_id = n.device_id and l.endpoint_label = ${pairs.label},
        lateral (select coalesce(l.collected_at, ${at}) as collected_at) c
      offset 0) a
    where a.sha256 is not null and a.collected_ms is not null`;
}

/**
 * The snapshot statement of a lab read as of a moment (exported for its plan test in
 * tests/e2e/preflight_filters_test.ts): per wanted pair (per label, its device ids comma-separated), the last
 * snapshot stored (highest id, the order `snapshot_latest` keeps) among those collected at or before `asOf`.
 * On the narrow layout (migration 2026_11_25_0017) it reads the pair's series in `snapshot_rows` by
 * `snapshot_rows_series_id (series_id, id)` backwards from the newest entry, stopping at the first row
 * collected at or before `asOf`: the rows read are the pair's snapshots stored since `asOf`. (Not through the
 * `snapshots` view, which would join and sort every row.) Its payload hash by `snapshot_payloads_id`, joined
 * to the row found (one look-up per pair, not one per row read).
 *
 * While rows not yet compacted are left (`legacyLeft`, the default), it also walks the pair's range of
 * `snapshots_legacy` by `snapshots_device_label_id (device_id, endpoint_label, id desc)` the same way, and
 * takes the newer of the two; once the compaction is done, the statement without that walk (per pair, the
 * union, its sort and the legacy branch cost about as much as the series walk itself).
 *
 * Each pair is matched with row comparisons, not equalities, on purpose: with `device_id = … and
 * endpoint_label = …` (or `series_id = …`) PostgreSQL drops them from the ORDER BY (they equal outer values),
 * leaving `id desc`, which the primary key also serves; for a small lab with a long history the planner then
 * prefers a backward scan of the primary key filtered on the pair, which walks every device's snapshots since
 * `asOf` once per pair (seen on PGlite with 40,000 rows). A range of one value is no equivalence: the ORDER BY
 * keeps its leading columns, which only the series (or device and label) index provides, and both bounds are
 * its index condition.
 */
export function latestAsOfSql(
  labels: string[],
  ids: string[],
  asOf: Date,
  legacyLeft = true,
): RawBuilder<LatestRow> {
  const pairs = pairsOf(labels, ids);
  // The pair's newest row collected at or before asOf (`se`: the pair's series).
  const rowAsOf = sql`(select r.id, r.payload_id, r.collected_at from snapshot_rows r
      where r.series_id >= se.id and r.series_id <= se.id and r.collected_at <= ${asOf}
      order by r.series_id desc, r.id desc limit 1) r`;
  if (!legacyLeft) {
    return sql<LatestRow>`select se.device_id::text, se.endpoint_label, r.id::text as snapshot_id,
        p.sha256, ${collectedMs("r")} as collected_ms
      from ${pairs.from}
      join snapshot_series se on se.device_id = n.device_id and se.endpoint_label = ${pairs.label}
      cross join lateral ${rowAsOf}
      join snapshot_payloads p on p.id = r.payload_id`;
  }
  return sql<LatestRow>`select n.device_id::text, ${pairs.label} as endpoint_label, s.id::text as snapshot_id,
      s.payload_sha256 as sha256, ${collectedMs("s")} as collected_ms
    from ${pairs.from}
    cross join lateral (select z.id, z.payload_sha256, z.collected_at from (
      (select r.id, (select p.sha256 from snapshot_payloads p where p.id = r.payload_id) as payload_sha256,
          r.collected_at
        from snapshot_series se cross join lateral ${rowAsOf}
        where se.device_id = n.device_id and se.endpoint_label = ${pairs.label})
      union all
      (select x.id, x.payload_sha256, x.collected_at from snapshots_legacy x
        where (x.device_id, x.endpoint_label) >= (n.device_id, ${pairs.label})
          and (x.device_id, x.endpoint_label) <= (n.device_id, ${pairs.label}) and x.collected_at <= ${asOf}
        order by x.device_id, x.endpoint_label, x.id desc limit 1)
    ) z order by z.id desc limit 1) s`;
}

async function readLabIn(tx: Kysely<Database>, readers: LabWants[], opts: LabReadOptions): Promise<LabRead> {
  // With the devices, whether rows not yet compacted are left (migration 0017; one InitPlan, not per row):
  // the snapshot statement skips `snapshots_legacy` once the compaction is done. No row is added to it after
  // 0017, so once empty it stays empty, whatever the isolation of a transaction `db` already is in.
  let dq = tx.selectFrom("devices").select(["id", "hostname", "vendor", "device_role"])
    .select(sql<boolean>`(select exists (select 1 from snapshots_legacy))`.as("legacy_left"))
    .where("enabled", "=", true);
  // As of a moment: a device registered after it was not part of the lab then.
  if (opts.asOf) dq = dq.where(sql<boolean>`created_at <= ${opts.asOf}`);
  const deviceRows = await dq.orderBy("hostname").orderBy("id").execute();
  const legacyLeft = deviceRows[0]?.legacy_left ?? true;
  const devices: CheckDevice[] = deviceRows
    .map((d) => ({ id: d.id, hostname: d.hostname, vendor: d.vendor, deviceRole: d.device_role }));
  // One reader (a pre-flight): its wants as they are; more: merged.
  const wanted = readers.length === 1 ? readers[0]!(devices) : new Map<string, Set<string>>();
  if (readers.length > 1) {
    for (const reader of readers) {
      for (const [label, ids] of reader(devices)) {
        let all = wanted.get(label);
        if (!all) wanted.set(label, all = new Set());
        for (const id of ids) all.add(id);
      }
    }
  }
  const latest = new Map<string, Map<string, Latest>>();
  const payloads = new Map<string, PayloadEntry>();
  const labels = [...wanted.keys()].filter((l) => wanted.get(l)!.size > 0);
  if (labels.length === 0) return { devices, latest, payloads };
  // The latest snapshot of each wanted pair (small rows). Per label, its device ids comma-separated (UUIDs).
  const ids = labels.map((l) => [...wanted.get(l)!].join(","));
  const { rows } =
    await (opts.asOf ? latestAsOfSql(labels, ids, opts.asOf, legacyLeft) : latestSql(labels, ids, legacyLeft))
      .execute(tx);
  const shas = new Set<string>();
  for (const r of rows) {
    let byDevice = latest.get(r.endpoint_label);
    if (!byDevice) latest.set(r.endpoint_label, byDevice = new Map());
    byDevice.set(r.device_id, { id: r.snapshot_id, sha: r.sha256, at: new Date(Number(r.collected_ms)) });
    shas.add(r.sha256);
  }
  if (opts.payloads === false) return { devices, latest, payloads };
  // Then each distinct payload text once, only those not parsed already (payloads never change).
  // Cache hits are taken now, so a concurrent read's evictions cannot take them away later.
  const missing: string[] = [];
  for (const sha of shas) {
    const e = payloadCache.get(sha);
    if (e) payloads.set(sha, e);
    else missing.push(sha);
  }
  if (missing.length) {
    const read = await sql<{ sha256: string; payload: string }>`select sha256, payload
      from snapshot_payloads where sha256 = any(${missing}::text[])`.execute(tx);
    for (const p of read.rows) payloads.set(p.sha256, payloadCache.put(p.sha256, p.payload));
  }
  return { devices, latest, payloads };
}
