/**
 * The move from the embedded database to PostgreSQL (issue 31 point 4; docs/deploy-postgres.md "From embedded to PostgreSQL"),
 * end to end with the real entry points: an embedded `serve` with the lab registered, two finished runs with
 * reports; `deno task backup --url` while it serves and polls; `deno task restore` into `DATABASE_URL` (a wrong
 * key first: refused, nothing written); then `serve` and two `poll` processes on PostgreSQL.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { childEnv } from "../../core/harness/process.ts";
import { dbTest } from "../../core/harness/db.ts";
import { freePort, startLab } from "../../core/harness/serve.ts";
import type { Db } from "../../core/harness/core.ts";
import { sha256Hex } from "@dutlab/core";
import { verifyReportBytes } from "../../core/harness/core.ts";
import { k6SummaryExport } from "../../core/harness/runs_lab.ts";
import { TEST_CRED_KEY } from "../../core/harness/app.ts";
import { appliedMigrations, migrateUpTo, openDatabase } from "../../core/harness/core.ts";
import { migrationProvider } from "../../core/harness/core.ts";
import { encryptSecret, importCredentialKey } from "../../core/harness/core.ts";
import { hashSnapshot } from "../../core/harness/core.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** A child process; a long-running one (not `piped`) writes to nowhere, so a full pipe never stalls it. */
function spawn(script: string, env: Record<string, string>, args: string[] = [], piped = false) {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script, ...args],
    cwd: ROOT,
    clearEnv: true,
    env: childEnv(env),
    stdin: "null",
    stdout: piped ? "piped" : "null",
    stderr: piped ? "piped" : "null",
  }).spawn();
}

async function run(script: string, env: Record<string, string>, args: string[] = []) {
  const out = await spawn(script, env, args, true).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

async function stop(child: Deno.ChildProcess) {
  try {
    child.kill("SIGTERM");
  } catch { /* gone */ }
  await child.status;
}

async function until<T>(what: string, f: () => Promise<T | undefined>, seconds = 90): Promise<T> {
  const end = Date.now() + seconds * 1000;
  for (;;) {
    const v = await f().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const ready = (base: string) =>
  until(`${base}/readyz`, async () => {
    const r = await fetch(`${base}/readyz`);
    await r.body?.cancel();
    return r.status === 200 ? true : undefined;
  });

dbTest(
  "an embedded lab with runs and reports moves to PostgreSQL: backup while serving, restore, serve and two pollers",
  async (db) => {
    const { url, schema } = db as Db & { url: string; schema: string };
    const dir = await Deno.makeTempDir({ prefix: "dutlab-move-" });
    const children: Deno.ChildProcess[] = [];
    const stops: Array<() => Promise<void>> = [];
    try {
      const lab = await startLab(dir);
      stops.push(() => lab.stop());
      const embedded = {
        DUT_DATA_DIR: dir,
        PORT: String(freePort()),
        HOST: "127.0.0.1",
        DUT_POLL_SCAN_SECONDS: "1",
      };
      const serve = spawn("server.ts", embedded);
      children.push(serve);
      const base = `http://127.0.0.1:${embedded.PORT}`;
      await ready(base);
      const secrets = JSON.parse(await Deno.readTextFile(`${dir}/secrets.json`));
      const auth = { authorization: `Bearer ${secrets.adminToken}`, "content-type": "application/json" };
      const api = async (method: string, path: string, body?: unknown, at = base) => {
        const r = await fetch(at + path, {
          method,
          headers: auth,
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await r.text();
        return { status: r.status, text, json: () => JSON.parse(text) };
      };
      const shown = await lab.show();
      const ids: string[] = [];
      for (const d of shown) {
        const r = await api("POST", "/api/admin/dut/devices", {
          hostname: d.hostname,
          vendor: d.vendor,
          baseUrl: d.url,
          username: d.username,
          password: d.password,
          tlsVerifyMode: "self-signed",
          pollIntervalSeconds: 30,
        });
        assert.equal(r.status, 201, r.text);
        ids.push(r.json().deviceId);
      }
      const runs: string[] = [];
      for (let i = 0; i < 2; i++) {
        for (const id of ids) {
          assert.equal((await api("POST", `/api/admin/dut/devices/${id}/snapshot`)).json().ok, true);
        }
        const started = await api("POST", "/api/test-runs", { planIdentifier: "ngfw-throughput-decrypt-on" });
        assert.equal(started.status, 201, started.text);
        const id = started.json().executionId;
        for (const d of ids) await api("POST", `/api/admin/dut/devices/${d}/snapshot`);
        const fin = await api("POST", `/api/test-runs/${id}/finish`, {
          outcome: "passed",
          results: { k6Summary: k6SummaryExport() },
        });
        assert.equal(fin.status, 200, fin.text);
        runs.push(id);
      }
      const reports = new Map<string, string>();
      for (const id of runs) reports.set(id, (await api("GET", `/api/test-runs/${id}/report.json`)).text);

      // Backup through the running embedded service; `backup` without --url is refused while serve holds it.
      const file = `${dir}/lab.tar.gz`;
      const held = await run("tools/backup.ts", { DUT_DATA_DIR: dir }, ["--out", file]);
      assert.notEqual(held.code, 0);
      assert.match(held.stderr, /DATA_DIR_IN_USE|in use/i);
      const b = await run("tools/backup.ts", { DUT_DATA_DIR: dir }, ["--out", file, "--url", base]);
      assert.equal(b.code, 0, b.stderr);
      await stop(serve);
      children.splice(children.indexOf(serve), 1);

      const u = new URL(url);
      u.searchParams.set("search_path", schema);
      const pg = { DATABASE_URL: u.toString() };
      const wrong = await run("tools/restore.ts", { ...pg, DUT_CRED_ENC_KEY: "ab".repeat(32) }, [file]);
      assert.equal(wrong.code, 1, wrong.stderr);
      assert.match(wrong.stderr, /restore refused: .*key id/);
      const devicesAfterRefusal = await sql<{ n: number }>`select count(*)::int as n from devices`.execute(
        db.kysely,
      )
        .catch(() => ({ rows: [{ n: 0 }] }));
      assert.equal(devicesAfterRefusal.rows[0]!.n, 0, "nothing written");
      const restored = await run("tools/restore.ts", { ...pg, DUT_CRED_ENC_KEY: secrets.credEncKey }, [file]);
      assert.equal(restored.code, 0, restored.stderr);
      const summary = JSON.parse(restored.stdout);
      assert.equal(summary.reportsVerified, runs.length);

      // Independently: every payload re-hashes.
      for (
        const p of await db.kysely.selectFrom("snapshot_payloads").select(["sha256", "payload"]).execute()
      ) {
        assert.equal(await sha256Hex(p.payload), p.sha256);
      }
      // A poller host holds only DATABASE_URL and the credential key (docs/deploy-postgres.md "Which host holds which secret").
      const poller = { ...pg, DUT_CRED_ENC_KEY: secrets.credEncKey, DUT_POLL_SCAN_SECONDS: "1" };
      const port = String(freePort());
      const serve2 = spawn("server.ts", {
        ...poller,
        ADMIN_TOKEN: secrets.adminToken,
        DUT_REPORT_SIGNING_KEY: secrets.reportSigningKey,
        // The lab keeps signing PDFs with the certificate its embedded serve generated.
        DUT_PDF_SIGNING_CERT: secrets.pdfSigningCertificate,
        DUT_PDF_SIGNING_KEY: secrets.pdfSigningKey,
        PORT: port,
        HOST: "127.0.0.1",
        DUT_API_POLLER_DISABLE: "1",
      });
      children.push(serve2);
      const base2 = `http://127.0.0.1:${port}`;
      await ready(base2);
      const since = new Date();
      for (let i = 0; i < 2; i++) children.push(spawn("poller.ts", poller));
      for (const [id, text] of reports) {
        const r = await api("GET", `/api/test-runs/${id}/report.json`, undefined, base2);
        assert.equal(r.text, text);
        const v = await verifyReportBytes(new TextEncoder().encode(r.text));
        assert.equal(v.ok, true, JSON.stringify(v.findings));
      }
      // The same devices, polled by the pollers with the same (restored, encrypted) credentials.
      await until("a poll of every device on PostgreSQL", async () => {
        const r = await sql<{ n: number }>`select count(distinct device_id)::int as n from snapshots
        where collected_at > ${since}`.execute(db.kysely);
        return r.rows[0]!.n === ids.length ? true : undefined;
      }, 120);
      const list = (await api("GET", "/api/admin/dut/devices", undefined, base2)).json();
      for (const d of list.devices) assert.equal(d.lastPollStatus, "ok", JSON.stringify(d));
    } finally {
      for (const c of children) await stop(c);
      for (const s of stops) await s();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
  { only: ["postgres"] },
);

// The command-line tools of issue 31 as `deno task` runs them: `prune` on PostgreSQL (dry run, prune, bad
// arguments), `backup` from PostgreSQL and `restore` into a new embedded data directory (a wrong key refused
// before anything is created, then the right one; the data directory keeps the key for `serve`), and a backup
// made before a migration restored and upgraded.

async function task(name: string, env: Record<string, string>, ...args: string[]) {
  const tasks = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks;
  const script = tasks[name].replace(/^deno run -A /, "");
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script, ...args],
    cwd: ROOT,
    clearEnv: true,
    env: childEnv(env),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** One device (credential encrypted with the test key) polled every 10 minutes for two days, 50 days ago. */
async function seed(db: Db): Promise<void> {
  const id = crypto.randomUUID();
  const enc = await encryptSecret(await importCredentialKey(TEST_CRED_KEY), id, "s3cret-password");
  await sql`insert into devices (id, hostname, vendor, base_url, username, password_enc, tls_verify_mode,
      poll_interval_seconds) values (${id}, 'fw-tools', 'fixture-fw', 'https://192.0.2.7', 'admin', ${enc},
      'insecure', 60)`.execute(db.kysely);
  const from = Date.now() - 50 * 86_400_000;
  for (let k = 0; k < 288; k++) {
    const h = await hashSnapshot("system_info", { uptime: Math.floor(k / 3) });
    await db.kysely.insertInto("snapshot_payloads").values({
      sha256: h.sha256,
      payload: h.text,
      size_bytes: h.size,
    })
      .onConflict((oc) => oc.column("sha256").doNothing()).execute();
    await db.kysely.insertInto("snapshots").values({
      device_id: id,
      endpoint_label: "system_info",
      payload_sha256: h.sha256,
      stable_sha256: await sha256Hex("stable"),
      collected_at: new Date(from + k * 600_000),
      adapter_module: "seed",
      adapter_version: "0.0.0",
    }).execute();
  }
}

dbTest("deno task prune, backup and restore: PostgreSQL to a new embedded data directory", async (db) => {
  const { url, schema } = db as Db & { url: string; schema: string };
  const u = new URL(url);
  u.searchParams.set("search_path", schema);
  const pg = { DATABASE_URL: u.toString() };
  await seed(db);

  const bad = await task("prune", pg, "--older-than-days", "0");
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--older-than-days/);
  const dry = await task("prune", pg, "--older-than-days", "30", "--dry-run");
  assert.equal(dry.code, 0, dry.stderr);
  const planned = JSON.parse(dry.stdout);
  assert.equal(planned.dryRun, true);
  assert.ok(planned.snapshots > 0 && planned.payloads > 0, dry.stdout);
  const real = await task("prune", pg, "--older-than-days", "30", "--actor", "ops@lab");
  assert.equal(real.code, 0, real.stderr);
  const done = JSON.parse(real.stdout);
  for (const k of ["snapshots", "payloads", "bytes", "counts", "cutoff"]) {
    assert.deepEqual(done[k], planned[k], k);
  }
  assert.equal(done.actor, "cli:ops@lab");

  const dir = await Deno.makeTempDir({ prefix: "dutlab-restore-" });
  try {
    const file = `${dir}/pg.tar.gz`;
    const b = await task("backup", pg, "--out", file);
    assert.equal(b.code, 0, b.stderr);
    const target = { DUT_DATA_DIR: `${dir}/embedded` };
    const wrong = await task("restore", { ...target, DUT_CRED_ENC_KEY: "cd".repeat(32) }, file);
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /restore refused: .*key id\(s\) [0-9a-f]{8}/);
    await assert.rejects(Deno.stat(`${dir}/embedded`), Deno.errors.NotFound, "nothing created");
    const ok = await task("restore", { ...target, DUT_CRED_ENC_KEY: TEST_CRED_KEY }, file);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stderr, /credentials need key id\(s\) [0-9a-f]{8}/);
    const secrets = JSON.parse(await Deno.readTextFile(`${dir}/embedded/secrets.json`));
    assert.equal(secrets.credEncKey, TEST_CRED_KEY);
    assert.equal((await Deno.stat(`${dir}/embedded/secrets.json`)).mode! & 0o777, 0o600);
    const embedded = await openDatabase({ dataDir: `${dir}/embedded/pglite` });
    try {
      for (const t of ["devices", "snapshots", "snapshot_payloads", "snapshot_prunes"]) {
        const count = async (d: Db) =>
          (await sql<{ n: number }>`select count(*)::int as n from ${sql.table(t)}`.execute(d.kysely))
            .rows[0]!.n;
        assert.equal(await count(embedded), await count(db), t);
      }
    } finally {
      await embedded.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}, { only: ["postgres"] });

Deno.test({
  name:
    "a backup made before a migration restores at its own schema, then the newer migrations run on its rows",
  ignore: !Deno.env.get("TEST_DATABASE_URL"),
  async fn() {
    const url = Deno.env.get("TEST_DATABASE_URL")!;
    const old = "2026_11_24_0011_snapshot_stable_changed";
    const names = Object.keys(await migrationProvider.getMigrations()).sort();
    assert.ok(names.includes(old) && names.at(-1)! > old, "a migration newer than the backup exists");
    const schemas = [0, 1].map(() => `t_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`);
    const admin = await openDatabase({ url });
    const dbs: Db[] = [];
    const dir = await Deno.makeTempDir({ prefix: "dutlab-upgrade-" });
    try {
      for (const s of schemas) await sql`create schema ${sql.id(s)}`.execute(admin.kysely);
      const source = await openDatabase({ url, schema: schemas[0] });
      dbs.push(source);
      await migrateUpTo(source.kysely, old);
      await seed(source);
      const env = (schema: string) => {
        const u = new URL(url);
        u.searchParams.set("search_path", schema);
        return { DATABASE_URL: u.toString() };
      };
      const file = `${dir}/old.tar.gz`;
      const b = await task("backup", env(schemas[0]!), "--out", file);
      assert.equal(b.code, 0, b.stderr);
      const r = await task("restore", { ...env(schemas[1]!), DUT_CRED_ENC_KEY: TEST_CRED_KEY }, file);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /applied the newer migrations/);
      const target = await openDatabase({ url, schema: schemas[1] });
      dbs.push(target);
      assert.deepEqual(await appliedMigrations(target.kysely), names);
      const flags = async (d: Db) =>
        (await sql<{ f: string }>`select string_agg(id || ':' || payload_changed || ':' ||
          coalesce(stable_changed::text, '-'), ',' order by id) as f from snapshots`.execute(d.kysely))
          .rows[0]!.f;
      assert.equal(await flags(target), await flags(source));
    } finally {
      for (const d of dbs) await d.close();
      for (const s of schemas) await sql`drop schema if exists ${sql.id(s)} cascade`.execute(admin.kysely);
      await admin.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
