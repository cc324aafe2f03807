/**
 * Scenario 4, pre-flight at scale: latency of `POST /api/test-runs/preflight` (the real route, in
 * process) for 1,000 devices while the snapshots table grows through 10^4 ... 10^7 rows. History rows
 * are bulk-generated with INSERT ... SELECT generate_series (FK triggers off for the load: the rows
 * point at existing devices and payloads by construction); after each step every device gets one more
 * poll's snapshots (through the production store), so the latest snapshots are the newest rows.
 *
 * @module
 */
import {
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  sql,
  type UnknownRow,
} from "kysely";
import { runPreflight } from "../../core/harness/core.ts";
import { payloadCache } from "../../core/harness/core.ts";
import { type Figure, mean, pct, round as rnd } from "../_util.ts";
import type { Ctx } from "../main.ts";
import { captureVendors } from "../_capture.ts";
import { benchServices, freshDb } from "../_db.ts";
import { countRows, registerDevices, replayModules } from "../_replay.ts";
import { makePolls, storeRound } from "../_store_sql.ts";
import { VENDORS } from "../_capture.ts";
import { createApp } from "../../core/harness/core.ts";
import { TOKEN } from "../_util.ts";

const PLAN = "ngfw-throughput-decrypt-on";

export async function run(ctx: Ctx): Promise<Figure[]> {
  const captures = await captureVendors();
  const figures: Figure[] = [];
  const plan = ctx.quick
    ? { postgres: [1e4, 1e5], pglite: [] as number[] }
    : { postgres: [1e4, 1e5, 1e6, 1e7], pglite: [1e4, 1e5] };
  const devices = 1000;
  // 20 in the full run: the p50 of 10 moved by 10 ms between neighbouring sizes (session 12).
  const samples = ctx.quick ? 5 : 20;
  for (const backend of ["postgres", "pglite"] as const) {
    if (!plan[backend].length) continue;
    await using db = await freshDb(backend);
    const replay = replayModules(captures, { changeRate: 0.05 });
    const { svc } = await benchServices(db, replay.modules);
    const ids = await registerDevices(svc, devices);
    const app = createApp(svc);
    const steps = plan[backend].length + 1;
    const polls = makePolls(
      captures,
      ids.map((id, i) => ({ id, vendor: VENDORS[i % VENDORS.length]! })),
      steps,
      0.05,
    );
    const round = async (k: number) => {
      await storeRound(db.kysely, svc.registry, polls[k]!);
    };
    await round(0);
    const exec = (q: string) => sql.raw(q).execute(db.kysely);
    await exec(
      `create table bench_slots as select (row_number() over (order by l.device_id, l.endpoint_label) - 1)::int as k,
      r.series_id, r.payload_id, r.release_id
      from snapshot_latest l join snapshot_rows r on r.id = l.snapshot_id`,
    );
    const slots = Number(
      (await sql<{ n: string }>`select count(*)::text as n from bench_slots`.execute(db.kysely)).rows[0]!.n,
    );
    const first: number[] = [];
    for (const [step, size] of plan[backend].entries()) {
      const have = await countRows(db, "snapshots");
      const add = size - have - slots;
      if (add > 0) {
        const t0 = performance.now();
        const chunk = 1_000_000;
        for (let from = 0; from < add; from += chunk) {
          const n = Math.min(chunk, add - from);
          await db.kysely.transaction().execute(async (tx) => {
            await sql.raw(`set local session_replication_role = replica`).execute(tx);
            // Straight into the narrow rows (migration 0017): with triggers off an insert into the
            // `snapshots` view would write nothing. Older history, unchanged payloads.
            await sql.raw(`insert into snapshot_rows (collected_at, payload_id, series_id, release_id,
                payload_changed, stable_changed)
              select now() - interval '2 hours' - make_interval(secs => ${have + from} + g), sl.payload_id,
                sl.series_id, sl.release_id, false, false
              from generate_series(1, ${n}) g join bench_slots sl on sl.k = g % ${slots}`).execute(tx);
          });
        }
        ctx.log(`${backend}: generated ${add} rows in ${rnd((performance.now() - t0) / 1000)} s`);
      }
      await round(step + 1); // the newest snapshot of every device and label
      await exec(`analyze`); // as autovacuum would after a bulk load
      // And the bulk load's pages written out before timing (a checkpoint would otherwise flush up to a GB
      // while the pre-flights at 10^7 rows are timed; a lab's database is not in the minute after such a load).
      await exec(`checkpoint`).catch(() => {});
      const rows = await countRows(db, "snapshots");
      const req = () =>
        app.request("/api/test-runs/preflight", {
          method: "POST",
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ planIdentifier: PLAN }),
        });
      let checks = 0, status = 0;
      for (let k = 0; k < 2; k++) {
        const r = await req();
        status = r.status;
        checks = (await r.json()).checksRun;
      }
      const ms: number[] = [];
      for (let k = 0; k < samples; k++) {
        const t = performance.now();
        const r = await req();
        await r.arrayBuffer();
        ms.push(performance.now() - t);
      }
      // The first pre-flight after a start (or after new payloads): nothing in the payload cache.
      const cold: number[] = [];
      for (let k = 0; k < samples; k++) {
        payloadCache.clear();
        const t = performance.now();
        const r = await req();
        await r.arrayBuffer();
        cold.push(performance.now() - t);
      }
      // The database's share: the statements runPreflight issues (the same engine the route calls), each
      // timed from send to decoded rows by a Kysely plugin; and the engine alone, without HTTP.
      const timer = new StatementTimer();
      const engine: number[] = [];
      const sqlMsRuns: number[] = [];
      const planDef = svc.registry.plan(PLAN)!;
      for (let k = 0; k < samples; k++) {
        timer.total = 0;
        const t = performance.now();
        await runPreflight(db.kysely.withPlugin(timer), svc.registry, planDef);
        engine.push(performance.now() - t);
        sqlMsRuns.push(timer.total);
      }
      // As of a past moment (issue 29): the engine with `asOf` just before the newest round (each pair's index
      // is read back past one snapshot), and halfway back through the generated history (past half of each
      // pair's snapshots: the cost grows with what was stored since asOf, docs/preflight.md).
      const newest = new Date(
        (await sql<{ at: Date | string }>`select max(collected_at) as at from snapshots`.execute(db.kysely))
          .rows[0]!.at,
      );
      // The lab as of a moment includes only devices registered by then: date the bench's devices back.
      await exec(`update devices set created_at = now() - interval '10 years'`);
      const asOfs = {
        recent: new Date(newest.getTime() - 1),
        halfway: new Date(Date.now() - 2 * 3_600_000 - Math.round(rows / 2) * 1000),
      };
      const asOfMs: Record<keyof typeof asOfs, number[]> = { recent: [], halfway: [] };
      for (const which of ["recent", "halfway"] as const) {
        for (let k = 0; k < samples; k++) {
          const t = performance.now();
          await runPreflight(db.kysely, svc.registry, planDef, new Date(), { asOf: asOfs[which] });
          asOfMs[which].push(performance.now() - t);
        }
      }
      const sqlMs = pct(sqlMsRuns, 50);
      const p50 = pct(ms, 50);
      if (!first.length) first.push(p50);
      ctx.log(
        `${backend} ${rows} rows: p50 ${rnd(p50)} ms, p95 ${
          rnd(pct(ms, 95))
        } ms (${checks} checks, HTTP ${status})`,
      );
      const p = { backend, devices, snapshotRows: rows, checks, httpStatus: status, samples, plan: PLAN };
      figures.push(
        {
          scenario: "preflight",
          name: `pre-flight latency p50 at 10^${Math.round(Math.log10(size))} rows`,
          value: rnd(p50),
          unit: "ms",
          params: p,
          target: backend === "postgres" && size === 1e7 ? "≤ 100 ms at 10^7 rows, flat" : undefined,
          pass: backend === "postgres" && size === 1e7 ? p50 <= 100 : undefined,
          command: ctx.command,
        },
        {
          scenario: "preflight",
          name: `pre-flight statements, send to decoded rows (p50) at 10^${
            Math.round(Math.log10(size))
          } rows`,
          value: rnd(sqlMs, 2),
          unit: "ms",
          params: p,
          command: ctx.command,
        },
        {
          scenario: "preflight",
          name: `pre-flight engine without HTTP (runPreflight, p50) at 10^${
            Math.round(Math.log10(size))
          } rows`,
          value: rnd(pct(engine, 50), 2),
          unit: "ms",
          params: p,
          command: ctx.command,
        },
        {
          scenario: "preflight",
          name: `pre-flight latency p50, payload cache empty, at 10^${Math.round(Math.log10(size))} rows`,
          value: rnd(pct(cold, 50)),
          unit: "ms",
          params: { ...p, p95: rnd(pct(cold, 95)) },
          command: ctx.command,
        },
        {
          scenario: "preflight",
          name: `pre-flight engine asOf just before the newest poll (p50) at 10^${
            Math.round(Math.log10(size))
          } rows`,
          value: rnd(pct(asOfMs.recent, 50), 2),
          unit: "ms",
          params: { ...p, asOf: asOfs.recent.toISOString() },
          command: ctx.command,
        },
        {
          scenario: "preflight",
          name: `pre-flight engine asOf halfway back through the history (p50) at 10^${
            Math.round(Math.log10(size))
          } rows`,
          value: rnd(pct(asOfMs.halfway, 50), 2),
          unit: "ms",
          params: { ...p, asOf: asOfs.halfway.toISOString(), historyRowsPerPair: Math.round(rows / slots) },
          command: ctx.command,
        },
        {
          scenario: "preflight",
          name: `pre-flight latency p95 at 10^${Math.round(Math.log10(size))} rows`,
          value: rnd(pct(ms, 95)),
          unit: "ms",
          params: { ...p, mean: rnd(mean(ms)) },
          command: ctx.command,
        },
      );
    }
    const last = figures.filter((f) =>
      f.params?.backend === backend && f.name.startsWith("pre-flight latency p50 at")
    ).at(-1)!;
    figures.push({
      scenario: "preflight",
      name: "flatness: p50 at the largest size ÷ p50 at 10^4 rows",
      value: rnd((last.value as number) / first[0]!, 2),
      unit: "×",
      params: { backend, from: 1e4, to: last.params!.snapshotRows },
      command: ctx.command,
    });
  }
  return figures;
}

/** Sums the time of each statement from send to decoded rows (Kysely calls these around execution). */
class StatementTimer implements KyselyPlugin {
  total = 0;
  #started = new WeakMap<object, number>();
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    this.#started.set(args.queryId, performance.now());
    return args.node;
  }
  transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    const t = this.#started.get(args.queryId);
    if (t !== undefined) this.total += performance.now() - t;
    return Promise.resolve(args.result);
  }
}
