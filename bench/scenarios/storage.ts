/**
 * Scenario 3, storage growth on PostgreSQL: bytes on disk per stored snapshot when 95% of payloads are
 * unchanged from the previous poll (content-addressed payloads: a snapshot row points at a payload
 * stored once), against storing every payload in full (the same snapshot rows with the payload text
 * inline, same columns and indexes). Sizes are pg_total_relation_size (heap + TOAST + indexes) after
 * VACUUM; the marginal figures compare the second half of the polls only (steady state).
 *
 * @module
 */
import { type Figure, round } from "../_util.ts";
import type { Ctx } from "../main.ts";
import { captureVendors } from "../_capture.ts";
import { benchServices, freshDb } from "../_db.ts";
import { countRows, registerDevices, replayModules, replayWorker } from "../_replay.ts";

export async function run(ctx: Ctx): Promise<Figure[]> {
  const captures = await captureVendors();
  const devices = 100;
  const rounds = ctx.quick ? 10 : 100;
  await using db = await freshDb("postgres");
  const raw = db.raw!;
  const replay = replayModules(captures, { changeRate: 0.05 });
  const { svc } = await benchServices(db, replay.modules);
  await registerDevices(svc, devices);
  // The naive design: every snapshot with its payload in full, in the one-table layout snapshots had until
  // migration 0017 (`snapshots_legacy`: same columns, indexes and identity).
  await raw.unsafe(
    `create table naive_snapshots (like snapshots_legacy including defaults including identity including indexes)`,
  );
  await raw.unsafe(`alter table naive_snapshots add column payload text not null`);
  const sizes = async () => {
    await raw.unsafe(
      `vacuum snapshot_rows, snapshot_series, snapshots_legacy, snapshot_payloads, snapshot_latest, naive_snapshots`,
    );
    // The snapshots: the narrow rows and the rows not yet compacted (migration 0017). Their series, one row
    // per device and label (updated by every poll, so its size follows the updates since the last vacuum, not
    // the number of snapshots), count with the other per-series table, snapshot_latest.
    const [r] = await raw.unsafe<Array<Record<string, string>>>(`select
      (pg_total_relation_size('snapshot_rows') + pg_total_relation_size('snapshots_legacy'))::text as snapshots,
      pg_total_relation_size('snapshot_series')::text as series,
      pg_total_relation_size('snapshot_payloads')::text as payloads,
      pg_total_relation_size('snapshot_latest')::text as latest,
      pg_total_relation_size('naive_snapshots')::text as naive,
      (select count(*) from snapshots)::text as n,
      (select count(*) from snapshot_payloads)::text as p`);
    if (!r) throw new Error("the size query returned no row");
    return {
      dedup: Number(r.snapshots) + Number(r.series) + Number(r.payloads) + Number(r.latest),
      snapshotsTable: Number(r.snapshots),
      payloadsTable: Number(r.payloads),
      naive: Number(r.naive),
      n: Number(r.n),
      payloadRows: Number(r.p),
    };
  };
  const fillNaive = () =>
    raw.unsafe(`insert into naive_snapshots (device_id, endpoint_label, payload_sha256, collected_at,
        test_run_execution_id, adapter_module, adapter_version, adapter_release_id, payload)
      select s.device_id, s.endpoint_label, s.payload_sha256, s.collected_at, s.test_run_execution_id,
        s.adapter_module, s.adapter_version, s.adapter_release_id, p.payload
      from snapshots s join snapshot_payloads p on p.sha256 = s.payload_sha256
      where s.id > coalesce((select max(id) from naive_snapshots), 0) order by s.id`);
  const w = await replayWorker(db, svc);
  let mid: Awaited<ReturnType<typeof sizes>> | null = null;
  for (let r = 0; r < rounds; r++) {
    await w.round();
    if (r + 1 === rounds / 2) {
      await fillNaive();
      mid = await sizes();
    }
  }
  await w.stop();
  await fillNaive();
  const end = await sizes();
  ctx.log(
    `${end.n} snapshots, ${end.payloadRows} payload rows: ${end.dedup} B stored vs ${end.naive} B naive`,
  );
  const stored = await countRows(db, "snapshots");
  // Where the bytes of the content-addressed design go, per snapshot row.
  const parts = await raw.unsafe<Array<{ rel: string; bytes: string }>>(`
    select 'heap' as rel, pg_relation_size('snapshot_rows')::text as bytes
    union all select i.indexrelid::regclass::text, pg_relation_size(i.indexrelid)::text
      from pg_index i where i.indrelid = 'snapshot_rows'::regclass
    union all select 'snapshot_series (all)', pg_total_relation_size('snapshot_series')::text
    union all select 'snapshots_legacy (all)', pg_total_relation_size('snapshots_legacy')::text
    union all select 'snapshot_payloads (all)', pg_total_relation_size('snapshot_payloads')::text
    union all select 'snapshot_latest (all)', pg_total_relation_size('snapshot_latest')::text`);
  const breakdown = Object.fromEntries(parts.map((x) => [x.rel, round(Number(x.bytes) / stored)]));
  const perDedup = end.dedup / stored;
  const perNaive = end.naive / stored;
  const margDedup = (end.dedup - mid!.dedup) / (end.n - mid!.n);
  const margNaive = (end.naive - mid!.naive) / (end.n - mid!.n);
  // What one more unchanged snapshot costs: its row in `snapshot_rows` (heap, TOAST, every index), since an
  // unchanged payload adds no payload row.
  const margRow = (end.snapshotsTable - mid!.snapshotsTable) / (end.n - mid!.n);
  const p = {
    backend: "postgres",
    devices,
    polls: devices * rounds,
    snapshots: stored,
    payloadRows: end.payloadRows,
  };
  const base = { scenario: "storage", command: ctx.command };
  return [
    {
      ...base,
      name: "content-addressed bytes per snapshot, by relation",
      value: round(perDedup),
      unit: "B",
      params: { ...p, breakdown },
      note: Object.entries(breakdown).map(([k, v]) => `${k} ${v} B`).join(", "),
    },
    {
      ...base,
      name: "bytes per snapshot, content-addressed (95% unchanged), all polls",
      value: round(perDedup),
      unit: "B",
      params: { ...p, snapshotsTableB: end.snapshotsTable, payloadsTableB: end.payloadsTable },
    },
    {
      ...base,
      name: "bytes per snapshot, every payload in full (naive), all polls",
      value: round(perNaive),
      unit: "B",
      params: p,
    },
    {
      ...base,
      name: "ratio content-addressed ÷ naive, all polls",
      value: round((perDedup / perNaive) * 100, 1),
      unit: "%",
      params: p,
      target: "≤ 10% of the naive size",
      pass: perDedup / perNaive <= 0.1,
    },
    {
      ...base,
      name: "marginal bytes per snapshot, content-addressed (second half)",
      value: round(margDedup),
      unit: "B",
      params: { ...p, fromSnapshots: mid!.n },
    },
    {
      ...base,
      name: "marginal bytes per unchanged snapshot: the snapshots table alone (second half)",
      value: round(margRow),
      unit: "B",
      params: { ...p, fromSnapshots: mid!.n },
      target: "≤ 150 B (issue 31 point 2)",
      pass: margRow <= 150,
    },
    {
      ...base,
      name: "marginal bytes per snapshot, naive (second half)",
      value: round(margNaive),
      unit: "B",
      params: { ...p, fromSnapshots: mid!.n },
    },
    {
      ...base,
      name: "ratio content-addressed ÷ naive, marginal (steady state)",
      value: round((margDedup / margNaive) * 100, 1),
      unit: "%",
      params: p,
      target: "≤ 10% of the naive size",
      pass: margDedup / margNaive <= 0.1,
    },
  ];
}
