/**
 * Two `deno task poll` processes on one PostgreSQL schema (issue 8 "Done when", leases since issue 48):
 * both poll, every due device is polled once per due window, and after SIGKILL of one the other polls
 * every device at its next scan. Each poller has only DATABASE_URL and DUT_CRED_ENC_KEY. Real adapters (modules.gen.ts) against token-mode simulators (tokenSimAdapter).
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { childEnv } from "../../core/harness/process.ts";
import { dbTest } from "../../core/harness/db.ts";
import { type LogLine, readLogLines } from "../../core/harness/serve.ts";
import { TEST_CRED_KEY, testServices } from "../../core/harness/app.ts";
import type { Db } from "../../core/harness/core.ts";
import { POLL_LOCK_CLASS, pollLockKey } from "../../core/harness/core.ts";
import { tokenSimAdapter } from "../../core/harness/lab.ts";
import { modules } from "../../modules.gen.ts";
import { until } from "../../core/harness/poller_lab.ts";

const ROOT = new URL("../..", import.meta.url);
const SCAN_SECONDS = 1;

/** One `deno task poll` process: the task's command, run directly so that a signal reaches deno itself. */
class Poller {
  readonly lines: LogLine[] = [];
  readonly child: Deno.ChildProcess;
  readonly done: Promise<Deno.CommandStatus>;
  #reading: Promise<void>;

  constructor(readonly name: string, databaseUrl: string) {
    const env = childEnv({
      // Only what a poller uses (issue 31 point 5): no admin token, no report or PDF signing key.
      DATABASE_URL: databaseUrl,
      DUT_CRED_ENC_KEY: TEST_CRED_KEY,
      DUT_POLL_SCAN_SECONDS: String(SCAN_SECONDS),
      DUT_SHUTDOWN_GRACE_SECONDS: "5",
      DUT_LOG_FORMAT: "json",
      DUT_LOG_LEVEL: "debug",
    });
    const child = this.child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "poller.ts"],
      cwd: ROOT,
      clearEnv: true,
      env,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    this.done = this.child.status;
    this.#reading = readLogLines(child.stderr, this.lines);
  }

  /** Hostnames this process polled, with the time each poll was logged. */
  polls(after = 0): string[] {
    return this.lines.filter((l) => l.message.startsWith("Polled ") && Date.parse(l["@timestamp"]) > after)
      .map((l) => String(l.properties.hostname));
  }

  count(pattern: RegExp, after = 0): number {
    return this.lines.filter((l) => pattern.test(l.message) && Date.parse(l["@timestamp"]) > after).length;
  }

  log(): string {
    return this.lines.map((l) => `${this.name} ${l["@timestamp"]} ${l.level} ${l.message}`).join("\n");
  }

  async stop(signal: Deno.Signal = "SIGKILL") {
    try {
      this.child.kill(signal);
    } catch { /* already gone */ }
    await this.done;
    await this.#reading;
  }
}

dbTest(
  "two poll processes: each due device is polled once by one of them, and the survivor polls all after a SIGKILL",
  async (db) => {
    const task = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT))).tasks.poll;
    assert.equal(task, "deno run -A poller.ts", "the test runs exactly what `deno task poll` runs");
    const { url, schema } = db as Db & { url: string; schema: string };
    const { svc } = await testServices(db, modules);
    const token = await tokenSimAdapter(modules);
    const sims = await Promise.all([0, 1, 2].map(() => token.start()));
    const hostnames: string[] = [];
    for (const [i, sim] of sims.entries()) {
      for (const n of [1, 2]) {
        const hostname = `fw-${i}-${n}`;
        hostnames.push(hostname);
        await svc.devices.create({
          hostname,
          vendor: token.vendor,
          baseUrl: sim.url,
          username: sim.tokenCredentials.username,
          password: sim.tokenCredentials.password,
          tlsVerifyMode: "insecure",
          pollIntervalSeconds: 300, // one due window spans the whole test
          enabled: true,
        });
      }
    }
    const dbUrl = (app: string) => {
      const u = new URL(url);
      u.searchParams.set("search_path", schema);
      u.searchParams.set("application_name", app);
      return u.toString();
    };
    const pollers = [new Poller("p1", dbUrl("dutlab-p1")), new Poller("p2", dbUrl("dutlab-p2"))];
    const pollsPerDevice = async (after: Date | null = null) => {
      const r = await sql<{ hostname: string; n: number }>`select d.hostname,
          count(distinct s.collected_at)::int as n
        from devices d left join snapshots s on s.device_id = d.id
          and (${after}::timestamptz is null or s.collected_at > ${after}::timestamptz)
        group by d.hostname order by d.hostname`.execute(db.kysely);
      return Object.fromEntries(r.rows.map((x) => [x.hostname, x.n]));
    };
    const once = Object.fromEntries([...hostnames].sort().map((h) => [h, 1]));
    try {
      // Both start; every device is due (never polled).
      await until("every device polled", async () => {
        const r = await sql<{ n: number }>`select count(*)::int as n from devices where last_poll_at is null`
          .execute(db.kysely);
        return r.rows[0]!.n === 0;
      }, 60_000);
      // Both poll (leases, issue 48): every device polled once in its due window, by one of them.
      await until(
        "the logs name every poll",
        () => pollers[0]!.polls().length + pollers[1]!.polls().length >= hostnames.length,
        10_000,
      ).catch(() => {});
      const all = [...pollers[0]!.polls(), ...pollers[1]!.polls()].sort();
      assert.deepEqual(all, [...hostnames].sort(), "each device polled once, by one instance");
      assert.deepEqual(await pollsPerDevice(), once, "one poll per device inside its due window");
      const [holder, other] = pollers as [Poller, Poller];
      const statuses = await db.kysely.selectFrom("devices").select("last_poll_status").execute();
      assert.ok(statuses.every((s) => s.last_poll_status === "ok"), JSON.stringify(statuses));

      // The first scan is over once each poll's lease is given back (a statement after its "Polled" line): a
      // lease still held at the SIGKILL would keep its device from the survivor for the lease's 60 s (the
      // takeover of held leases is the fault test's, tests/e2e/poller_faults_test.ts).
      await until("every lease given back", async () => {
        const r = await sql<{ n: number }>`select count(*)::int as n from device_leases
          where owner is not null and expires_at > now()`.execute(db.kysely);
        return r.rows[0]!.n === 0;
      }, 10_000);
      // SIGKILL the holder, then make every device due again.
      await holder.stop("SIGKILL");
      const killedAt = new Date();
      await db.kysely.updateTable("devices").set({ last_poll_at: sql`now() - interval '1 hour'` } as never)
        .execute();
      await until(
        "every device polled again",
        async () => Object.values(await pollsPerDevice(killedAt)).every((n) => n >= 1),
        30_000,
      );
      assert.deepEqual(await pollsPerDevice(killedAt), once, "one poll per device after the takeover");
      // A poll is logged after its write commits: give the last log lines a moment to arrive.
      await until(
        "the survivor's log names every poll",
        () => other.polls(killedAt.getTime()).length >= hostnames.length,
        10_000,
      ).catch(() => {});
      assert.deepEqual([...other.polls(killedAt.getTime())].sort(), [...hostnames].sort(), other.log());
      if (Deno.env.get("SHOW_LOGS")) {
        console.log(`killed at ${killedAt.toISOString()}\n${holder.log()}\n${other.log()}`);
      }
      // SIGTERM: the survivor stops, releases the singular lock (it took it over) and exits cleanly.
      await other.stop("SIGTERM");
      assert.equal((await other.done).code, 0, other.log());
      const locks = await sql<
        { n: number }
      >`select count(*)::int as n from pg_locks where locktype = 'advisory'
        and classid = ${POLL_LOCK_CLASS} and objid = ${pollLockKey(schema)} and objsubid = 2`.execute(
        db.kysely,
      );
      assert.equal(locks.rows[0]!.n, 0);
    } finally {
      for (const p of pollers) await p.stop("SIGKILL");
      for (const s of sims) await s.close();
    }
  },
  { only: ["postgres"] },
);
