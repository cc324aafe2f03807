/**
 * Issue 48 "Done when", the multi-process fault test on PostgreSQL: three `deno task poll` processes share
 * 300 devices polled every 30 s (token-mode simulators on loopback, real adapters); every 20 s one of two
 * of them is killed with SIGKILL and started again, and the third is paused (SIGSTOP) while it holds leases,
 * for longer than its lease, then resumed. Everything is asserted from the database, and each assertion first
 * asserts that what it ranges over exists:
 *
 * - no two snapshots of one device and label closer together than half the interval;
 * - no write after a lost lease: every snapshot row was written (a test trigger records it in the writing
 *   transaction) by the process that held the device's lease at that moment, under an unexpired lease; the
 *   paused instance's writes after it woke were fenced (counted in `poll_instances.fenced`), not stored;
 * - from the first kill on, each device polled again within one interval plus two lease periods (plus a
 *   scheduling slack) of its previous poll: a device of a killed or paused instance is taken over when its
 *   lease expires, and each takeover costs at most one lease period; two, when the instance that took the
 *   device over is itself killed before polling it (with a kill every 20 s and a 10 s lease, this happens:
 *   the paused instance's devices are taken over about when the next kill comes);
 * - every process (each of the three places, and each one's last incarnation) claimed devices.
 *
 * The scan period is the spec's 30 s (not shortened); the lease is 10 s so that the test lasts about three
 * minutes. Tagged `[long]` in its name: `deno test --filter` can leave it out; `deno task test` runs it.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest } from "../../core/harness/db.ts";
import { testServices } from "../../core/harness/app.ts";
import type { Db } from "../../core/harness/core.ts";
import { POLL_TASK, PollProcess } from "../../core/harness/poll_process.ts";
import { until } from "../../core/harness/poller_lab.ts";
import { tokenSimAdapter } from "../../core/harness/lab.ts";
import { modules } from "../../modules.gen.ts";

const ROOT = new URL("../..", import.meta.url);
const DEVICES = 300;
const SIMS = 6;
const INTERVAL_S = 30;
const LEASE_S = 10;
/** Per request: a poll takes a few hundred milliseconds to seconds, so leases are held when a process is paused. */
const LATENCY_MS = 150;
const KILL_EVERY_MS = 20_000;
const KILLS = 4;
/** Paused this long: past its lease (renewed at most LEASE_S / 3 before the pause). */
const PAUSE_MS = (LEASE_S + 6) * 1000;
/** Allowed beyond interval + leases between two polls of a device: claim rounds, the poll itself, a loaded machine. */
const SLACK_S = 10;
/** The longest wait between two polls of a device: its lease lost twice in a row (see the module comment). */
const MAX_GAP_S = INTERVAL_S + 2 * LEASE_S + SLACK_S;

dbTest(
  "[long] three poll processes, one killed every 20 s and one paused past its lease: no duplicate, no stale write, no device left behind",
  async (db) => {
    const task = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT))).tasks.poll;
    assert.equal(task, POLL_TASK, "the test runs exactly what `deno task poll` runs");
    const { url, schema } = db as Db & { url: string; schema: string };
    const { svc } = await testServices(db, modules);
    const token = await tokenSimAdapter(modules);
    const sims = await Promise.all(
      Array.from({ length: SIMS }, () => token.start()),
    );
    for (const s of sims) s.sim.faults.latencyMs = LATENCY_MS;
    for (let i = 0; i < DEVICES; i++) {
      const sim = sims[i % SIMS]!;
      await svc.devices.create({
        hostname: `fw-${String(i).padStart(3, "0")}`,
        vendor: token.vendor,
        baseUrl: sim.url,
        username: sim.tokenCredentials.username,
        password: sim.tokenCredentials.password,
        tlsVerifyMode: "insecure",
        pollIntervalSeconds: INTERVAL_S,
        enabled: true,
      });
    }
    // Every snapshot row, as the writing transaction sees it: the writer (its application_name) and the
    // device's lease row (locked by the writer's fence).
    await sql`create table poll_audit (row_id bigint, device_id uuid, collected_at timestamptz, app text,
      owner text, epoch bigint, expires_at timestamptz, written_at timestamptz default clock_timestamp())`
      .execute(db.kysely);
    await sql.raw(`create function poll_audit_row() returns trigger language plpgsql as $$ begin
        insert into poll_audit (row_id, device_id, collected_at, app, owner, epoch, expires_at)
        select new.id, s.device_id, new.collected_at, current_setting('application_name'), l.owner, l.epoch,
          l.expires_at
        from snapshot_series s left join device_leases l on l.device_id = s.device_id
        where s.id = new.series_id;
        return new;
      end $$`).execute(db.kysely);
    await sql`create trigger poll_audit after insert on snapshot_rows for each row
      execute function poll_audit_row()`.execute(db.kysely);

    /** Every incarnation: its place (p1..p3), application_name and pid. */
    const incarnations: Array<{ place: string; app: string; proc: PollProcess }> = [];
    const current = new Map<string, PollProcess>();
    const start = (place: string) => {
      const app = `dutlab-${place}-${incarnations.filter((x) => x.place === place).length}`;
      const u = new URL(url);
      u.searchParams.set("search_path", schema);
      u.searchParams.set("application_name", app);
      const proc = new PollProcess(app, u.toString(), {
        DUT_POLL_LEASE_SECONDS: String(LEASE_S),
        DUT_POLL_DEVICE_TIMEOUT_SECONDS: "8",
        DUT_LOG_LEVEL: "info",
      });
      incarnations.push({ place, app, proc });
      current.set(place, proc);
      return proc;
    };
    const q = async <T>(query: ReturnType<typeof sql<T>>) => (await query.execute(db.kysely)).rows;
    const leasesOf = async (pid: number) =>
      (await q(sql<{ n: number }>`select count(*)::int as n from device_leases
        where split_part(owner, ':', 2) = ${String(pid)} and expires_at > now()`))[0]!.n;
    let paused: { proc: PollProcess; leases: number; at: number } | null = null;
    try {
      for (const place of ["p1", "p2", "p3"]) start(place);
      await until("every device polled once", async () => {
        const [r] = await q(
          sql<{ n: number }>`select count(*)::int as n from devices where last_poll_at is null`,
        );
        return r!.n === 0;
      }, 120_000);

      // The faults: a SIGKILL every 20 s (p1, p3 in turn), each restarted at once; p2 paused meanwhile.
      const firstKill = new Date();
      const pauser = (async () => {
        await new Promise((r) => setTimeout(r, KILL_EVERY_MS / 2));
        const p2 = current.get("p2")!;
        // Pause it while it holds leases (devices fall due every 30 s; its polls take a while).
        await until("p2 holds leases", async () => (await leasesOf(p2.pid)) >= 3, 60_000);
        const leases = await leasesOf(p2.pid);
        assert.ok(p2.signal("SIGSTOP"));
        paused = { proc: p2, leases, at: Date.now() };
        await new Promise((r) => setTimeout(r, PAUSE_MS));
        assert.ok(p2.signal("SIGCONT"));
      })();
      for (let k = 0; k < KILLS; k++) {
        if (k > 0) await new Promise((r) => setTimeout(r, KILL_EVERY_MS));
        const place = k % 2 === 0 ? "p1" : "p3";
        await current.get(place)!.stop("SIGKILL");
        start(place);
      }
      await pauser;
      // A calm tail: every place's last incarnation claims devices, and the paused one reports its fenced writes.
      const pausedProc = (paused as { proc: PollProcess } | null)?.proc;
      assert.ok(pausedProc, "p2 was paused");
      await until("every current incarnation claimed devices and p2 reported fenced writes", async () => {
        const rows = await q(sql<{ pid: number; claims: string; fenced: string }>`select pid, claims, fenced
          from poll_instances`);
        const by = new Map(rows.map((r) => [r.pid, r]));
        return [...current.values()].every((p) => Number(by.get(p.pid)?.claims ?? 0) > 0) &&
          Number(by.get(pausedProc.pid)?.fenced ?? 0) > 0;
      }, 90_000);
      // One more interval so that every device is polled after the last fault.
      await new Promise((r) => setTimeout(r, (INTERVAL_S + 5) * 1000));
      for (const p of current.values()) await p.stop("SIGKILL");
      const end = new Date();

      // 1. No two snapshots of one device and label closer than half the interval.
      const gaps = (await q(sql<{ pairs: number; labels: number; min_gap: number | null }>`
        with r as (select device_id, endpoint_label, collected_at,
            extract(epoch from collected_at - lag(collected_at) over w) as gap
          from snapshots window w as (partition by device_id, endpoint_label order by collected_at))
        select count(gap)::int as pairs, count(distinct (device_id, endpoint_label))::int as labels,
          min(gap)::float8 as min_gap from r`))[0]!;
      assert.ok(gaps.labels >= DEVICES, `every device stored labels: ${JSON.stringify(gaps)}`);
      assert.ok(gaps.pairs >= gaps.labels * 2, `several polls per label: ${JSON.stringify(gaps)}`);
      assert.ok(gaps.min_gap !== null && gaps.min_gap >= INTERVAL_S / 2, JSON.stringify(gaps));

      // 2. No write after a lost lease: each snapshot row written by the lease's holder, under its lease.
      const pidOf = new Map(incarnations.map((x) => [x.app, x.proc.pid]));
      const audit = await q(
        sql<{ app: string; owner: string | null; expires_at: Date | null; written_at: Date }>`
        select app, owner, expires_at, written_at from poll_audit`,
      );
      const [{ n: rowsStored }] = await q(
        sql<{ n: number }>`select count(*)::int as n from snapshot_rows`,
      ) as [
        { n: number },
      ];
      assert.ok(rowsStored > DEVICES * 3, `snapshots stored: ${rowsStored}`);
      assert.equal(audit.length, rowsStored, "the trigger saw every snapshot row");
      const stale = audit.filter((a) =>
        a.owner === null || a.owner.split(":")[1] !== String(pidOf.get(a.app)) || a.expires_at === null ||
        new Date(a.expires_at) <= new Date(a.written_at)
      );
      assert.equal(stale.length, 0, `written without the lease: ${JSON.stringify(stale.slice(0, 5))}`);
      const writers = new Set(audit.map((a) => a.app));
      const p = paused as { proc: PollProcess; leases: number } | null;
      assert.ok(p && p.leases >= 3, "p2 held leases when paused");
      const [fence] = await q(
        sql<{ fenced: string; claims: string }>`select fenced, claims from poll_instances
        where pid = ${p.proc.pid}`,
      );
      assert.ok(Number(fence?.fenced) > 0, `p2's writes after it woke were fenced: ${JSON.stringify(fence)}`);

      // 3. Every device polled again within interval + 2 leases (+ slack) of its previous poll, from the first kill.
      const late = (await q(sql<{ devices: number; polls_min: number; max_gap: number }>`
        with p as (select distinct device_id, collected_at from snapshots where collected_at >= ${firstKill}),
        b as (select d.id as device_id, t from devices d,
          lateral (values (${firstKill}::timestamptz), (${end}::timestamptz)) v(t)),
        g as (select device_id, t,
            extract(epoch from t - lag(t) over (partition by device_id order by t)) as gap
          from (select device_id, collected_at as t from p union all select device_id, t from b) x)
        select count(distinct device_id)::int as devices, min(n)::int as polls_min, max(gap)::float8 as max_gap
        from g join (select device_id, count(*)::int as n from p group by device_id) c using (device_id)`))[
        0
      ]!;
      const spanS = (end.getTime() - firstKill.getTime()) / 1000;
      assert.equal(
        late.devices,
        DEVICES,
        `every device polled after the first kill: ${JSON.stringify(late)}`,
      );
      assert.ok(late.polls_min >= Math.floor(spanS / MAX_GAP_S), JSON.stringify(late));
      assert.ok(late.max_gap <= MAX_GAP_S, `longest wait: ${JSON.stringify(late)}`);

      // 4. Every process claimed devices: each place, and each place's last incarnation (checked above).
      const claims = await q(sql<{ pid: number; claims: string; takeovers: string }>`select pid, claims,
        takeovers from poll_instances`);
      for (const place of ["p1", "p2", "p3"]) {
        const pids = new Set(incarnations.filter((x) => x.place === place).map((x) => x.proc.pid));
        const n = claims.filter((c) => pids.has(c.pid)).reduce((s, c) => s + Number(c.claims), 0);
        assert.ok(n > 0, `${place} claimed devices`);
      }
      assert.ok(claims.reduce((s, c) => s + Number(c.takeovers), 0) > 0, "leases were taken over");
      assert.ok(writers.size >= 3, `snapshots written by ${[...writers].join(", ")}`);
      console.log(
        `fault test: ${incarnations.length} processes, ${rowsStored} snapshot rows, min gap ${gaps.min_gap} s, ` +
          `max wait ${late.max_gap} s, fewest polls per device ${late.polls_min}, p2 fenced ${fence?.fenced} ` +
          `(held ${p.leases} leases when paused), takeovers ${
            claims.reduce((s, c) => s + Number(c.takeovers), 0)
          }`,
      );
    } finally {
      if (paused) (paused as { proc: PollProcess }).proc.signal("SIGCONT");
      for (const x of incarnations) await x.proc.stop("SIGKILL");
      for (const s of sims) await s.close();
      if (Deno.env.get("SHOW_LOGS")) console.log(incarnations.map((x) => x.proc.log()).join("\n"));
    }
  },
  { only: ["postgres"] },
);
