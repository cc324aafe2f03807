/**
 * Issue 48, scale-out: 1, 2 and 3 `deno task poll` processes (the product's poller.ts, leases in PostgreSQL)
 * on one PostgreSQL schema, polling the device farm's devices (3,000; `--quick` 300) at a 60 s interval.
 * Due times are spread over the interval before each run, as in a deployment that has run a while. After a
 * warm-up, a measurement window (120 s; quick 60 s) gives, per N:
 *
 * - polls per minute (distinct (device, collectedAt) written in the window, from the database);
 * - lateness of each poll's write against its due time (previous poll + 60 s): p50, p99, max;
 * - CPU per poll of each instance (its process's user + system CPU over the claims it made in the window,
 *   `poll_instances.claims`), of all instances together, and of PostgreSQL.
 *
 * Target (issue 48): 3 instances ≥ 0.9 × one instance's polls per minute.
 *
 * @module
 */
import { sql } from "kysely";
import { cpuSeconds, type Figure, machine, pct, postgresCpuSeconds, round } from "../_util.ts";
import type { Ctx } from "../main.ts";
import { benchServices, freshDb } from "../_db.ts";
import { startFarm } from "../_farm_proc.ts";
import { modules } from "../../modules.gen.ts";
import { POLL_TASK, PollProcess } from "../../core/harness/poll_process.ts";
import { CRED_KEY, PG_URL } from "../_util.ts";

const INTERVAL_S = 60;

export async function run(ctx: Ctx): Promise<Figure[]> {
  const n = ctx.quick ? 300 : Number(Deno.env.get("BENCH_SCALEOUT_DEVICES") ?? 3000);
  const warmS = ctx.quick ? 15 : 30;
  const windowS = Number(Deno.env.get("BENCH_SCALEOUT_WINDOW") ?? (ctx.quick ? 60 : 120));
  const counts = (Deno.env.get("BENCH_SCALEOUT_N") ?? "1,2,3").split(",").map(Number);
  ctx.log(`farm of ${n} devices`);
  const farm = await startFarm(ctx, n);
  await using db = await freshDb("postgres", { poolSize: 4 });
  const { svc } = await benchServices(db, modules);
  const devices = farm.devices.map((l) => JSON.parse(l));
  for (let k = 0; k < devices.length; k += 32) {
    await Promise.all(
      devices.slice(k, k + 32).map((d) =>
        svc.devices.create({
          hostname: `bench-${d.vendor}-${String(d.i).padStart(5, "0")}`,
          vendor: d.vendor,
          baseUrl: d.url,
          username: d.username,
          password: d.password,
          tlsVerifyMode: "self-signed",
          pollIntervalSeconds: INTERVAL_S,
          enabled: true,
        })
      ),
    );
  }
  ctx.log(`registered ${devices.length} devices (farm setup ${farm.setupMs} ms)`);
  const dbUrl = (app: string) => {
    const u = new URL(PG_URL);
    u.searchParams.set("search_path", db.where);
    u.searchParams.set("application_name", app);
    return u.toString();
  };
  const q = async <T>(query: ReturnType<typeof sql<T>>) => (await query.execute(db.kysely)).rows;
  const figures: Figure[] = [];
  const perN = new Map<number, number>();
  const command = `${ctx.command} (poll processes: ${POLL_TASK})`;
  try {
    for (const count of counts) {
      // Steady state: each device's last poll spread over the past interval, no lease held.
      await sql`delete from device_leases`.execute(db.kysely);
      await sql`delete from poll_instances`.execute(db.kysely);
      await sql`update devices set last_poll_at = now() - random() * ${INTERVAL_S} * interval '1 second',
        last_poll_status = 'ok'`.execute(db.kysely);
      // The spread last polls, as the previous poll of each device's first poll in this run.
      await sql`drop table if exists bench_start`.execute(db.kysely);
      await sql`create table bench_start as select id as device_id, last_poll_at as collected_at from devices`
        .execute(db.kysely);
      const startedAt = (await q(sql<{ now: Date }>`select now()`))[0]!.now;
      ctx.log(`${count} instance(s): starting`);
      const procs = Array.from(
        { length: count },
        (_, i) =>
          new PollProcess(`poll-${count}-${i}`, dbUrl(`bench-poll-${count}-${i}`), {
            DUT_CRED_ENC_KEY: CRED_KEY,
            DUT_LOG_LEVEL: "warning",
          }),
      );
      try {
        await new Promise((r) => setTimeout(r, warmS * 1000));
        const read = async () => {
          const rows = await q(sql<{ pid: number; claims: string }>`select pid, claims from poll_instances`);
          const at = (await q(sql<{ now: Date }>`select now()`))[0]!.now;
          return {
            at: new Date(at),
            claims: new Map(rows.map((r) => [r.pid, Number(r.claims)])),
            cpu: procs.map((p) => cpuSeconds(p.pid)),
            pg: postgresCpuSeconds(),
            load: machine().loadAvg,
          };
        };
        const a = await read();
        await new Promise((r) => setTimeout(r, windowS * 1000));
        // Claims are reported every third of a lease (20 s): wait for the report after the window.
        await new Promise((r) => setTimeout(r, 21_000));
        const b = await read();
        const rows = await q(sql<{ polls: number; lateness: number[]; failed: number }>`
          with p as (select distinct device_id, collected_at from snapshots where collected_at >= ${startedAt}
            union all select device_id, collected_at from bench_start),
          l as (select collected_at, extract(epoch from collected_at - (lag(collected_at) over
              (partition by device_id order by collected_at) + ${INTERVAL_S} * interval '1 second'))::float8 as late
            from p)
          select count(*)::int as polls, array_agg(late) filter (where late is not null) as lateness,
            (select count(*)::int from devices where last_poll_status <> 'ok') as failed
          from l where collected_at > ${a.at} and collected_at <= ${new Date(
          a.at.getTime() + windowS * 1000,
        )}`);
        const r = rows[0]!;
        const late = (r.lateness ?? []).map(Number);
        const perMinute = r.polls / (windowS / 60);
        perN.set(count, perMinute);
        const params = { n, instances: count, intervalS: INTERVAL_S, windowS, loadAvg: a.load.join(" ") };
        figures.push(
          {
            scenario: "scaleout",
            name: "polls per minute",
            value: round(perMinute, 0),
            unit: "polls/min",
            params,
            command,
          },
          {
            scenario: "scaleout",
            name: "lateness p50",
            value: round(pct(late, 50), 2),
            unit: "s",
            params,
            command,
          },
          {
            scenario: "scaleout",
            name: "lateness p99",
            value: round(pct(late, 99), 2),
            unit: "s",
            params,
            command,
          },
          {
            scenario: "scaleout",
            name: "lateness max",
            value: round(Math.max(...late), 2),
            unit: "s",
            params,
            command,
          },
          {
            scenario: "scaleout",
            name: "devices not ok at the end",
            value: r.failed,
            unit: "devices",
            params,
            command,
          },
        );
        let cpuAll = 0;
        let claimsAll = 0;
        procs.forEach((p, i) => {
          const cpu = b.cpu[i]! - a.cpu[i]!;
          const claims = (b.claims.get(p.pid) ?? 0) - (a.claims.get(p.pid) ?? 0);
          cpuAll += cpu;
          claimsAll += claims;
          figures.push({
            scenario: "scaleout",
            name: "instance CPU per poll",
            value: claims > 0 ? round((cpu * 1000) / claims, 2) : null,
            unit: "ms",
            params: { ...params, instance: i + 1, claims, cpuS: round(cpu, 1) },
            command,
          });
        });
        figures.push(
          {
            scenario: "scaleout",
            name: "all instances CPU per poll",
            value: claimsAll > 0 ? round((cpuAll * 1000) / claimsAll, 2) : null,
            unit: "ms",
            params: { ...params, claims: claimsAll },
            command,
          },
          {
            scenario: "scaleout",
            name: "PostgreSQL CPU per poll",
            value: claimsAll > 0 ? round(((b.pg - a.pg) * 1000) / claimsAll, 2) : null,
            unit: "ms",
            params: { ...params, claims: claimsAll },
            command,
            note: "every PostgreSQL process of the machine (other engineers' included)",
          },
        );
        ctx.log(
          `${count} instance(s): ${round(perMinute, 0)} polls/min, lateness p99 ${
            round(pct(late, 99), 2)
          } s, ` +
            `CPU ${claimsAll ? round((cpuAll * 1000) / claimsAll, 2) : "-"} ms/poll, load ${
              a.load.join(" ")
            }`,
        );
      } finally {
        for (const p of procs) await p.stop("SIGTERM");
      }
    }
  } finally {
    await farm.stop();
  }
  const one = perN.get(1);
  const three = perN.get(3);
  if (one !== undefined && three !== undefined) {
    figures.push({
      scenario: "scaleout",
      name: "3 instances / 1 instance polls per minute",
      value: round(three / one, 3),
      unit: "ratio",
      params: { n, intervalS: INTERVAL_S, windowS },
      target: "≥ 0.9 (issue 48: no loss of throughput from adding instances)",
      pass: three / one >= 0.9,
      command,
    });
  }
  return figures;
}
