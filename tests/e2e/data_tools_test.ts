/**
 * The command-line tools of issue 31 as `deno task` runs them: `prune` on PostgreSQL (dry run, prune, bad
 * arguments), `backup` from PostgreSQL and `restore` into a new embedded data directory (a wrong key refused
 * before anything is created, then the right one; the data directory keeps the key for `serve`), and a backup
 * made before a migration restored and upgraded.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { childEnv } from "../../core/harness/process.ts";
import { dbTest } from "@dutlab/core/testing";
import { TEST_CRED_KEY } from "../../core/harness/app.ts";
import type { Db } from "../../core/harness/core.ts";
import { appliedMigrations, migrateUpTo, openDatabase } from "../../core/harness/core.ts";
import { migrationProvider } from "../../core/harness/core.ts";
import { encryptSecret, importCredentialKey } from "../../core/harness/core.ts";
import { hashSnapshot } from "../../core/harness/core.ts";
import { sha256Hex } from "@dutlab/core";

const ROOT = new URL("../..", import.meta.url).pathname;

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
  sanitizeResources: false,
  sanitizeOps: false,
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
