/**
 * What a prune never deletes: the snapshots and payloads that test runs cite (their frozen pre-flight, lab
 * states and reports), found by key name anywhere in the stored JSON.
 *
 * @module
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { jsonValue } from "../db/json.ts";

/** Snapshot ids and payload hashes that runs cite. */
export interface Citations {
  ids: Set<string>;
  hashes: Set<string>;
}

const ID_KEY = /snapshotid$/i;
const HASH_KEY = /payloadsha256$/i;

function collect(v: unknown, out: Citations, depth = 0): void {
  if (depth > 64 || v === null || typeof v !== "object") return;
  if (Array.isArray(v)) {
    for (const x of v) collect(x, out, depth + 1);
    return;
  }
  for (const [k, x] of Object.entries(v)) {
    if (ID_KEY.test(k) && (typeof x === "string" || typeof x === "number") && /^\d{1,19}$/.test(String(x))) {
      out.ids.add(String(x));
    } else if (HASH_KEY.test(k) && typeof x === "string" && /^[0-9a-f]{64}$/.test(x)) {
      out.hashes.add(x);
    } else if (k === "body" && typeof x === "string" && /^\s*[[{]/.test(x)) {
      // A report annex: its body is JSON text.
      try {
        collect(JSON.parse(x), out, depth + 1);
      } catch { /* not JSON: cites nothing */ }
    } else collect(x, out, depth + 1);
  }
}

/**
 * Every snapshot id and payload hash a run cites or its evidence bundle reads: its alerts, the snapshot ids and
 * payload hashes named in its start state, pre-flight result and report (annex bodies included), and the
 * snapshots its replay resolves by time (docs/reports.md "Replay"): for each device of the run's lab and each label, the
 * last snapshot collected at or before the pre-flight (a check's `alsoReads`, "inferred"), the run's start and,
 * once finished, its end (the drift's reads). Nothing newer than such a snapshot and collected before that
 * instant can appear, so after a prune the same lookups resolve to the same snapshots. For an active run every
 * device's last snapshot at its start is kept (where the drift of its report will start). Snapshots linked to a
 * run (`test_run_execution_id`) are kept by the prune's own condition and are not listed here.
 */
export async function citedSnapshots(db: Kysely<Database>): Promise<Citations> {
  const out: Citations = { ids: new Set(), hashes: new Set() };
  const runs = await db.selectFrom("test_runs").select([
    "status",
    "started_at",
    "ended_at",
    "start_state_json",
    "preflight_json",
    "report_json",
  ]).execute();
  for (const r of runs) {
    const startState = jsonValue<{ devices?: Array<{ id?: unknown }> } | null>(r.start_state_json);
    const preflight = jsonValue<{ ranAt?: unknown; checks?: Array<{ deviceId?: unknown }> } | null>(
      r.preflight_json,
    );
    collect(startState, out);
    collect(preflight, out);
    if (r.report_json) collect(JSON.parse(r.report_json), out);
    const active = r.status === "active";
    // The devices the replay reads: the lab at start (the drift) and the pre-flight's (inferred reads).
    const devices = [
      ...new Set(
        [...(startState?.devices ?? []).map((d) => d.id), ...(preflight?.checks ?? []).map((c) => c.deviceId)]
          .filter((x): x is string => typeof x === "string"),
      ),
    ];
    const instants = [new Date(r.started_at)];
    if (typeof preflight?.ranAt === "string") instants.push(new Date(preflight.ranAt));
    if (!active && r.ended_at) instants.push(new Date(r.ended_at));
    for (const at of instants) {
      if (Number.isNaN(at.getTime())) continue;
      // Per device and label: the series' rows by `snapshot_rows_series_id` and the rows not yet compacted by
      // `snapshots_device_label_id`, each walked back from the newest; the higher id of the two.
      const reads = await sql<{ id: string }>`
        select x.id::text as id from snapshot_latest l cross join lateral (
          select max(u.id) as id from (
            (select r.id from snapshot_rows r
              where r.series_id = (select se.id from snapshot_series se
                where se.device_id = l.device_id and se.endpoint_label = l.endpoint_label)
                and r.collected_at <= ${at}
              order by r.id desc limit 1)
            union all
            (select y.id from snapshots_legacy y
              where y.device_id = l.device_id and y.endpoint_label = l.endpoint_label and y.collected_at <= ${at}
              order by y.id desc limit 1)
          ) u
        ) x
        where x.id is not null and (${active}::boolean or l.device_id::text = any(${devices}::text[]))`
        .execute(db);
      for (const b of reads.rows) out.ids.add(b.id);
    }
  }
  const alerts = await db.selectFrom("run_alerts").select(sql<string>`snapshot_id::text`.as("id")).execute();
  for (const a of alerts) out.ids.add(a.id);
  return out;
}
