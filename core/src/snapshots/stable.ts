/**
 * The volatile-path pattern sets that stored `snapshots.stable_changed` flags were computed with (migration
 * 2026_11_24_0011). A `false` flag says "only volatile paths moved" under the patterns of the adapter that
 * wrote it; the change history skips such rows. When an adapter version changes a label's patterns (a member
 * is no longer volatile), a stored `false` may hide what is now a change, so at start-up every changed set
 * records that the rows of its vendor and label below the newest id are not re-marked (`remark_below`,
 * migration 2026_11_25_0018): the change history compares those in full (as an unknown flag) while a
 * background job (remark.ts) re-marks them in bounded batches. Start-up reads no snapshot for it. A set that
 * only gained patterns keeps them: what was equal without the old patterns is equal without more. Sets are kept per vendor and label in `volatile_path_sets`. A vendor and
 * label with no row yet has no flag to forget: every process that writes snapshots records its sets here at
 * start-up, before it polls (`bootstrap`), so the first record (after the upgrade to migration 0011, or for a
 * new adapter) reads no snapshot at all, however large the table.
 *
 * @module
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import type { Registry } from "../registry.ts";
import { patternSetKey, volatileFor } from "./volatile.ts";

/** True when the set `after` holds every pattern of the recorded set `before` (both canonical JSON), or none was recorded. */
function onlyGained(before: string, after: string): boolean {
  if (before === "") return true; // first record: no flag was written under any other set (see above)
  const had = JSON.parse(before) as string[];
  const has = new Set(JSON.parse(after) as string[]);
  return had.every((p) => has.has(p));
}

/** A vendor and label whose pattern set changed, and from which id its rows wait for a re-mark. */
export interface PatternSetChange {
  vendor: string;
  label: string;
  before: string | null;
  after: string;
  /** Rows of this vendor and label below this id are re-marked in the background (null: nothing to re-mark). */
  remarkBelow: string | null;
}

/**
 * Record the registry's volatile pattern sets; for each one that lost patterns since the recorded set, record
 * that the rows of that vendor and label up to the newest are to be re-marked (remark.ts), in one transaction
 * per set (concurrent start-ups wait for each other on the set's row and do the work once).
 */
export async function reconcilePatternSets(
  db: Kysely<Database>,
  registry: Registry,
): Promise<PatternSetChange[]> {
  const want = new Map<string, { vendor: string; label: string; key: string }>();
  const id = (vendor: string, label: string) => `${vendor}\n${label}`;
  for (const [vendor, reg] of registry.adapters) {
    for (const label of reg.adapter.labels) {
      want.set(id(vendor, label), {
        vendor,
        label,
        key: patternSetKey(volatileFor(registry, vendor, label)),
      });
    }
  }
  const stored = await db.selectFrom("volatile_path_sets").selectAll().execute();
  const have = new Map(stored.map((r) => [id(r.vendor, r.endpoint_label), r.patterns]));
  // A vendor or label that is gone has no patterns now: a stored set that was not empty has changed.
  for (const r of stored) {
    if (!want.has(id(r.vendor, r.endpoint_label))) {
      want.set(id(r.vendor, r.endpoint_label), {
        vendor: r.vendor,
        label: r.endpoint_label,
        key: patternSetKey([]),
      });
    }
  }
  const out: PatternSetChange[] = [];
  // First records (no flag to forget) in one statement: a fresh database starts with one round trip here.
  const fresh = [...want.entries()].filter(([k]) => !have.has(k)).map(([, w]) => w);
  if (fresh.length) {
    const inserted = await db.insertInto("volatile_path_sets")
      .values(fresh.map((w) => ({ vendor: w.vendor, endpoint_label: w.label, patterns: w.key })))
      .onConflict((oc) => oc.columns(["vendor", "endpoint_label"]).doNothing())
      .returning(["vendor", "endpoint_label"]).execute();
    for (const r of inserted) {
      const k = id(r.vendor, r.endpoint_label);
      out.push({
        vendor: r.vendor,
        label: r.endpoint_label,
        before: null,
        after: want.get(k)!.key,
        remarkBelow: null,
      });
      have.set(k, want.get(k)!.key);
    }
  }
  for (const [k, w] of want) {
    if (have.get(k) === w.key) continue;
    const change = await db.transaction().execute(async (tx) => {
      await tx.insertInto("volatile_path_sets")
        .values({ vendor: w.vendor, endpoint_label: w.label, patterns: "" })
        .onConflict((oc) => oc.columns(["vendor", "endpoint_label"]).doNothing()).execute();
      const row = await tx.selectFrom("volatile_path_sets").select("patterns")
        .where("vendor", "=", w.vendor).where("endpoint_label", "=", w.label).forUpdate()
        .executeTakeFirstOrThrow();
      if (row.patterns === w.key) return null; // another instance did it meanwhile
      // Dropped patterns: rows up to the newest one now may carry a stale `false`. Recorded, not re-marked here
      // (remark.ts does it in the background); a re-mark still pending from an earlier change restarts from the
      // top, since its done rows were re-marked under a set that is now also stale. Gained patterns only: a
      // pending re-mark continues (its rows were marked under a subset of the patterns in force).
      let remarkBelow: string | null = null;
      if (!onlyGained(row.patterns, w.key)) {
        const top = await sql<{ id: string }>`select (greatest(
            (select max(id) from snapshot_rows), (select max(id) from snapshots_legacy), 0) + 1)::text as id`
          .execute(tx);
        remarkBelow = top.rows[0]!.id; // one row
      }
      await tx.updateTable("volatile_path_sets")
        .set({
          patterns: w.key,
          ...(remarkBelow === null ? {} : { remark_below: remarkBelow, remark_remaining: null }),
        })
        .where("vendor", "=", w.vendor).where("endpoint_label", "=", w.label).execute();
      return {
        vendor: w.vendor,
        label: w.label,
        before: row.patterns === "" ? null : row.patterns,
        after: w.key,
        remarkBelow,
      };
    });
    if (change) out.push(change);
  }
  return out;
}
