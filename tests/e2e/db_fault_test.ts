/**
 * Database faults while `serve` is under API load and its worker polls (issue 15): the service's backends
 * are terminated mid-query (on the shared test server, only the backends this test's service opened,
 * tagged with a unique application_name), and a private PostgreSQL cluster is restarted. The process stays
 * up, a killed query fails its request with 503 `urn:dutlab:problem:unavailable` and `Retry-After`, no
 * request hangs past its limit, /readyz tells the truth, and every due device is polled exactly once.
 */
import assert from "node:assert/strict";
// @ts-types="@types/pg"
import pg from "pg";
import { sql } from "kysely";
import { dbTest } from "../../core/harness/db.ts";
import { testServices } from "../../core/harness/app.ts";
import { type Db, migrate, openDatabase } from "../../core/harness/core.ts";
import { type TokenSim as VendorSim, tokenSimAdapter } from "../../core/harness/lab.ts";
import { modules } from "../../modules.gen.ts";
import { until } from "../../core/harness/poller_lab.ts";
import { freePort, ServeProcess } from "../../core/harness/serve.ts";
import { type Outcome, sampleReadyz, startLoad } from "../../core/harness/service_process.ts";

const SCAN_SECONDS = 2;
const DEVICE_TIMEOUT_SECONDS = 10;
/** A request's time limit: longer than a connect timeout (5 s) plus a query, far shorter than a hang. */
const REQUEST_LIMIT_MS = 20_000;
/** Polls resume within one scan after the database is back (plus one device's poll and some slack). */
const RESUME_MS = SCAN_SECONDS * 1000 + DEVICE_TIMEOUT_SECONDS * 1000 + 3_000;

const tag = (what: string) => `dutlab-fault-${what}-${crypto.randomUUID().slice(0, 8)}`;

function serviceUrl(url: string, schema: string | undefined, app: string): string {
  const u = new URL(url);
  if (schema) u.searchParams.set("search_path", schema);
  u.searchParams.set("application_name", app);
  return u.toString();
}

/** Six devices on three token-mode simulators (tokenSimAdapter), registered through the services of `db`. */
async function registerDevices(db: Db): Promise<{ ids: string[]; sims: VendorSim[] }> {
  const { svc } = await testServices(db, modules);
  const token = await tokenSimAdapter(modules);
  const sims = await Promise.all([0, 1, 2].map(() => token.start()));
  const ids: string[] = [];
  for (const [i, sim] of sims.entries()) {
    for (const n of [1, 2]) {
      ids.push(
        await svc.devices.create({
          hostname: `fault-${i}-${n}`,
          vendor: token.vendor,
          baseUrl: sim.url,
          username: sim.tokenCredentials.username,
          password: sim.tokenCredentials.password,
          tlsVerifyMode: "insecure",
          pollIntervalSeconds: 300, // one due window spans each phase of the test
          enabled: true,
        }),
      );
    }
  }
  return { ids, sims };
}

/** Successful polls per device since `after` (a poll writes its snapshots with one collected_at). */
async function pollsSince(db: Db, after: Date): Promise<Record<string, number>> {
  const r = await sql<{ id: string; n: number }>`select d.id, count(distinct s.collected_at)::int as n
    from devices d left join snapshots s on s.device_id = d.id and s.collected_at > ${after}::timestamptz
    group by d.id`.execute(db.kysely);
  return Object.fromEntries(r.rows.map((x) => [x.id, x.n]));
}

/** Make every device due now; returns the database's time of it. */
async function makeDue(q: (text: string) => Promise<unknown>, db: Db): Promise<Date> {
  await q(`update devices set last_poll_at = now() - interval '1 hour'`);
  return (await sql<{ t: Date }>`select now() as t`.execute(db.kysely)).rows[0]!.t;
}

/** Every device polled exactly once since `after` (none lost, none doubled), within `ms`. */
async function assertPolledOnce(db: Db, ids: string[], after: Date, ms: number, svc: ServeProcess) {
  await until("every due device polled", async () => {
    const n = await pollsSince(db, after);
    return ids.every((id) => (n[id] ?? 0) >= 1);
  }, ms).catch((e) => {
    throw new Error(`${e.message}\n${svc.log()}`);
  });
  // One more scan: a doubled poll would show now.
  await new Promise((r) => setTimeout(r, SCAN_SECONDS * 1000 + 500));
  const n = await pollsSince(db, after);
  assert.deepEqual(ids.map((id) => n[id]), ids.map(() => 1), "one poll per due device");
  const st = await db.kysely.selectFrom("devices").select("last_poll_status").execute();
  assert.ok(st.every((s) => s.last_poll_status === "ok"), JSON.stringify(st));
}

/** Every request ended within its limit with 200, or 503 unavailable with Retry-After. */
function assertOutcomes(outcomes: Outcome[], svc: ServeProcess) {
  const summary: Record<string, number> = {};
  for (const o of outcomes) {
    const k = `${o.status} ${o.type ?? ""}${o.retryAfter ? " retry-after" : ""}`;
    summary[k] = (summary[k] ?? 0) + 1;
  }
  const hung = outcomes.filter((o) => o.status === "timeout");
  assert.equal(hung.length, 0, `requests past their limit: ${JSON.stringify(summary)}`);
  const bad = outcomes.filter((o) =>
    !(o.status === 200 || (o.status === 503 && o.type === "urn:dutlab:problem:unavailable" && o.retryAfter))
  );
  assert.ok(
    bad.length === 0,
    `unexpected answers ${JSON.stringify(summary)}: ${JSON.stringify(bad.slice(0, 5))}\n${svc.log()}`,
  );
}

function assertAlive(svc: ServeProcess) {
  assert.equal(svc.exited, null, `the service exited: ${JSON.stringify(svc.exited)}\n${svc.log()}`);
}

dbTest(
  "terminating the service's backends mid-query under load: 503 for the killed requests, then recovery",
  async (db) => {
    const { url, schema } = db as Db & { url: string; schema: string };
    const app = tag("kill");
    const admin = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
    admin.on("error", () => {});
    await admin.connect();
    const { ids, sims } = await registerDevices(db);
    const svc = new ServeProcess(serviceUrl(url, schema, app), {
      DUT_POLL_SCAN_SECONDS: String(SCAN_SECONDS),
      DUT_POLL_DEVICE_TIMEOUT_SECONDS: String(DEVICE_TIMEOUT_SECONDS),
    });
    const ready = sampleReadyz(() => svc.base);
    let load = { outcomes: [] as Outcome[], stop: () => Promise.resolve() };
    const terminate = async () => {
      const r = await admin.query<{ n: number }>(
        `select count(*)::int as n from (select pg_terminate_backend(pid) from pg_stat_activity
          where application_name = $1 and pid <> pg_backend_pid()) t`,
        [app],
      );
      return r.rows[0]!.n;
    };
    try {
      await svc.ready(); // starts again on another port should a parallel test have taken this one
      await until("the service is ready", () => ready.samples.some((s) => s.status === 200), 60_000);
      load = startLoad(svc.base, ids, { workers: 6, limitMs: REQUEST_LIMIT_MS });
      await assertPolledOnce(db, ids, new Date(0), 60_000, svc);

      // Round 1: the API's queries and the worker's scan wait on a lock; their backends are terminated.
      await admin.query("begin");
      await admin.query("lock table devices in access exclusive mode");
      await admin.query(`update devices set last_poll_at = now() - interval '1 hour'`);
      const due1 = (await admin.query<{ t: Date }>("select now() as t")).rows[0]!.t;
      await new Promise((r) => setTimeout(r, 1_500)); // requests pile up behind the lock
      const killed1 = await terminate();
      await admin.query("commit");
      assert.ok(killed1 > 0, "the service's backends were terminated");
      await until("a request after the kill", () => load.outcomes.some((o) => o.start > Date.now() - 200));
      assertAlive(svc);
      await assertPolledOnce(db, ids, due1, RESUME_MS, svc);
      const killedAnswers = load.outcomes.filter((o) => o.status === 503);
      assert.ok(killedAnswers.length > 0, "the killed requests answered 503");

      // Round 2: every backend of the service terminated while polls write and the API is busy.
      const due2 = await makeDue((q) => admin.query(q), db);
      await until("a poll under way", () => svc.count(/^Polled /, due2.getTime()) > 0, 30_000);
      const killedAt = Date.now();
      assert.ok(await terminate() > 0);
      assertAlive(svc);
      await assertPolledOnce(db, ids, due2, RESUME_MS, svc);
      assertAlive(svc);

      // The database was up throughout: /readyz answered 200 apart from probes cut by a kill.
      const after = ready.samples.filter((s) => s.start > killedAt + 1_000);
      assert.ok(
        after.length > 0 && after.every((s) => s.status === 200),
        "/readyz answers 200 after the kill",
      );
      const later = load.outcomes.filter((o) => o.start > killedAt + 1_000);
      assert.ok(later.length > 0 && later.every((o) => o.status === 200), "requests after the kill succeed");
    } finally {
      await load.stop();
      await ready.stop();
      const status = await svc.stop();
      await admin.end().catch(() => {});
      for (const s of sims) await s.close();
      if (Deno.env.get("SHOW_LOGS")) console.log(svc.log());
      assertOutcomes(load.outcomes, svc);
      assert.equal(status.code, 0, `clean exit on SIGTERM\n${svc.log()}`);
    }
  },
  { only: ["postgres"] },
);

/** The PostgreSQL server binaries of the newest installed major version, or null. */
function serverBinaries(): string | null {
  try {
    const dirs = [...Deno.readDirSync("/usr/lib/postgresql")].map((d) => d.name)
      .sort((a, b) => Number(b) - Number(a));
    for (const v of dirs) {
      const bin = `/usr/lib/postgresql/${v}/bin`;
      try {
        Deno.statSync(`${bin}/initdb`);
        Deno.statSync(`${bin}/pg_ctl`);
        return bin;
      } catch { /* next */ }
    }
  } catch { /* none */ }
  return null;
}

/**
 * `runuser` by its path, the first that exists: it lives in an sbin directory, which a `/usr/bin:/bin` PATH
 * does not hold, so its bare name is not found there. Null when neither exists.
 */
function runuserPath(): string | null {
  for (const p of ["/usr/sbin/runuser", "/sbin/runuser"]) {
    try {
      if (Deno.statSync(p).isFile) return p;
    } catch { /* next */ }
  }
  return null;
}

/** A private PostgreSQL cluster in a temp dir on a free port, run as the `postgres` OS user (we are root). */
class PrivateCluster {
  constructor(readonly bin: string, readonly dir: string, readonly port: number) {}

  get url() {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  static async create(bin: string): Promise<PrivateCluster> {
    const dir = await Deno.makeTempDir({ prefix: "dutlab-pgfault-" });
    const c = new PrivateCluster(bin, dir, freePort());
    if (Deno.uid() === 0) await c.#sh("chown", ["-R", "postgres:postgres", dir], false);
    await c.#sh(`${bin}/initdb`, ["-D", `${dir}/data`, "-U", "postgres", "-A", "trust", "--no-sync"]);
    await c.start();
    return c;
  }

  async #sh(cmd: string, args: string[], asPostgres = true) {
    const [exe, argv] = asPostgres && Deno.uid() === 0
      ? [RUNUSER!, ["-u", "postgres", "--", cmd, ...args]]
      : [cmd, args];
    const out = await new Deno.Command(exe, { args: argv, stdout: "piped", stderr: "piped" }).output();
    if (!out.success) {
      const log = await Deno.readTextFile(`${this.dir}/log`).catch(() => "");
      throw new Error(`${cmd} failed: ${new TextDecoder().decode(out.stderr)}\n${log}`);
    }
  }

  start() {
    return this.#sh(`${this.bin}/pg_ctl`, [
      "-D",
      `${this.dir}/data`,
      "-l",
      `${this.dir}/log`,
      "-w",
      "-o",
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      "start",
    ]);
  }

  stop() {
    return this.#sh(`${this.bin}/pg_ctl`, ["-D", `${this.dir}/data`, "-m", "fast", "-w", "stop"]);
  }

  async destroy() {
    await this.stop().catch(() => {});
    await Deno.remove(this.dir, { recursive: true }).catch(() => {});
  }
}

const BIN = serverBinaries();
const RUNUSER = runuserPath();
/** Why the cluster cannot be run here, or null: as root it runs as `postgres` through runuser. */
const CANNOT = !BIN
  ? "no initdb/pg_ctl under /usr/lib/postgresql/*/bin"
  : Deno.uid() === 0 && !RUNUSER
  ? "running as root and no runuser at /usr/sbin/runuser or /sbin/runuser to start PostgreSQL as postgres"
  : null;

Deno.test({
  name: "restarting the PostgreSQL server under load: 503 while it is down, then polls resume" +
    (CANNOT ? ` (ignored: ${CANNOT})` : ""),
  ignore: CANNOT !== null,
  async fn() {
    const cluster = await PrivateCluster.create(BIN!);
    let db: Db | null = null;
    let svc: ServeProcess | null = null;
    let sims: VendorSim[] = [];
    try {
      db = await openDatabase({ url: serviceUrl(cluster.url, undefined, "dutlab-fault-test"), poolSize: 2 });
      await migrate(db.kysely);
      const reg = await registerDevices(db);
      sims = reg.sims;
      const ids = reg.ids;
      svc = new ServeProcess(serviceUrl(cluster.url, undefined, tag("restart")), {
        DUT_POLL_SCAN_SECONDS: String(SCAN_SECONDS),
        DUT_POLL_DEVICE_TIMEOUT_SECONDS: String(DEVICE_TIMEOUT_SECONDS),
      });
      const ready = sampleReadyz(() => svc!.base);
      let load = { outcomes: [] as Outcome[], stop: () => Promise.resolve() };
      try {
        await svc.ready(); // starts again on another port should a parallel test have taken this one
        await until("the service is ready", () => ready.samples.some((s) => s.status === 200), 60_000);
        load = startLoad(svc.base, ids, { workers: 6, limitMs: REQUEST_LIMIT_MS });
        await assertPolledOnce(db, ids, new Date(0), 60_000, svc);

        // Devices due, polls start, then the server goes down for a while and comes back.
        const due = await makeDue((q) => sql.raw(q).execute(db!.kysely), db);
        await until("a poll under way", () => svc!.count(/^Polled /, due.getTime()) > 0, 30_000);
        await cluster.stop();
        const downAt = Date.now();
        await new Promise((r) => setTimeout(r, 4_000));
        assertAlive(svc);
        const upFrom = Date.now();
        await cluster.start();
        const upAt = Date.now();
        // Polls that were cut off are made again, once, within one scan of the server being back.
        await assertPolledOnce(db, ids, due, RESUME_MS, svc);
        assertAlive(svc);

        const down = ready.samples.filter((s) => s.start > downAt && s.end < upFrom);
        assert.ok(down.length > 0, "/readyz was probed while the server was down");
        assert.ok(
          down.every((s) => s.status === 503),
          `/readyz while down: ${JSON.stringify(down.slice(0, 5))}`,
        );
        const up = ready.samples.filter((s) => s.start > upAt + 1_000);
        assert.ok(
          up.length > 0 && up.every((s) => s.status === 200),
          `/readyz when back: ${JSON.stringify(up)}`,
        );
        const downRequests = load.outcomes.filter((o) => o.start > downAt && o.end < upFrom);
        assert.ok(
          downRequests.length > 0 && downRequests.every((o) => o.status === 503),
          "requests while the server is down answer 503",
        );
        const later = load.outcomes.filter((o) => o.start > upAt + 1_000);
        assert.ok(later.length > 0 && later.every((o) => o.status === 200), "requests when back succeed");
      } finally {
        await load.stop();
        await ready.stop();
        assertOutcomes(load.outcomes, svc);
      }
      const status = await svc.stop();
      assert.equal(status.code, 0, `clean exit on SIGTERM\n${svc.log()}`);
    } finally {
      await svc?.stop();
      if (svc && Deno.env.get("SHOW_LOGS")) console.log(svc.log());
      await db?.close().catch(() => {});
      for (const s of sims) await s.close();
      await cluster.destroy();
    }
  },
});
