import assert from "node:assert/strict";
import { childEnv } from "../../core/harness/process.ts";
import { freePort } from "../../core/harness/serve.ts";
import { TEST_PDF_CERT, TEST_PDF_KEY, TEST_SIGNING_KEY } from "../../core/harness/app.ts";
import { openDatabase } from "../../core/harness/core.ts";
import { buildRegistry } from "../../core/harness/core.ts";
import { patternSetKey, volatileFor } from "../../core/harness/core.ts";
import { modules } from "../../modules.gen.ts";

const root = new URL("../..", import.meta.url).pathname;
const dec = new TextDecoder();

/** Run `server.ts` with the inherited environment (dutlab's own variables removed) plus `env`. */
async function runServe(env: Record<string, string>, ms = 20_000, script = "server.ts") {
  const cmd = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script],
    cwd: root,
    clearEnv: true,
    env: childEnv(env),
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(ms),
  });
  const out = await cmd.output();
  return { code: out.code, lines: dec.decode(out.stderr).trim().split("\n").filter(Boolean) };
}

async function waitFor(url: string, ms = 30_000): Promise<Response> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    try {
      return await fetch(url);
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw new Error(`no answer from ${url}`);
}

Deno.test("bad configuration exits non-zero with one clear line per problem", async () => {
  const dir = await Deno.makeTempDir();
  const cases: Array<[Record<string, string>, RegExp]> = [
    [
      { DUT_CRED_ENC_KEY: "a".repeat(63) },
      /^dutlab: BAD_CONFIG: DUT_CRED_ENC_KEY: must be exactly 64 hex characters/,
    ],
    [
      { DUT_CRED_ENC_KEY: "x".repeat(64) },
      /^dutlab: BAD_CONFIG: DUT_CRED_ENC_KEY: must be exactly 64 hex characters/,
    ],
    [
      {
        DATABASE_URL: "postgres://postgres@127.0.0.1:5432/test",
        DUT_CRED_ENC_KEY: "ab".repeat(32),
        DUT_REPORT_SIGNING_KEY: TEST_SIGNING_KEY,
        DUT_PDF_SIGNING_CERT: TEST_PDF_CERT,
        DUT_PDF_SIGNING_KEY: TEST_PDF_KEY,
      },
      /^dutlab: BAD_CONFIG: ADMIN_TOKEN: required by serve when DATABASE_URL is set/,
    ],
    [
      // serve signs report.pdf: with DATABASE_URL the certificate is configuration (poll never needs it).
      {
        DATABASE_URL: "postgres://postgres@127.0.0.1:5432/test",
        ADMIN_TOKEN: "x".repeat(32),
        DUT_CRED_ENC_KEY: "ab".repeat(32),
        DUT_REPORT_SIGNING_KEY: TEST_SIGNING_KEY,
      },
      /^dutlab: BAD_CONFIG: DUT_PDF_SIGNING_CERT: required when DATABASE_URL is set .*make one with: openssl req -x509/,
    ],
    [{ PORT: "70000" }, /^dutlab: BAD_CONFIG: PORT: must be at most 65535$/],
    [{ HOST: "http://localhost" }, /^dutlab: BAD_CONFIG: HOST: must be an IP address or a host name/],
  ];
  for (const [env, re] of cases) {
    const r = await runServe({ DUT_DATA_DIR: dir, ...env });
    assert.notEqual(r.code, 0, JSON.stringify(env));
    assert.equal(r.lines.length, 1, r.lines.join("\n"));
    assert.match(r.lines[0]!, re);
    for (const v of Object.values(env)) {
      if (v.length > 20) assert.ok(!r.lines[0]!.includes(v), "no value echoed");
    }
  }
  // poll asks for the credential key alone: without it, one line naming it (not the admin token nor a
  // signing key, which a poller never uses).
  const poll = await runServe(
    { DATABASE_URL: "postgres://postgres@127.0.0.1:5432/test" },
    20_000,
    "poller.ts",
  );
  assert.notEqual(poll.code, 0);
  assert.equal(poll.lines.length, 1, poll.lines.join("\n"));
  assert.match(
    poll.lines[0]!,
    /^dutlab: BAD_CONFIG: DUT_CRED_ENC_KEY: required by poll when DATABASE_URL is set/,
  );
  // Issue 48: a poll lease not longer than a device's poll time limit, or a bad claim batch, refuses to start.
  const leaseCases: Array<[Record<string, string>, RegExp]> = [
    [
      { DUT_POLL_LEASE_SECONDS: "20", DUT_POLL_DEVICE_TIMEOUT_SECONDS: "25" },
      /^dutlab: BAD_CONFIG: DUT_POLL_LEASE_SECONDS: must be longer than DUT_POLL_DEVICE_TIMEOUT_SECONDS \(25 s\): a lease shorter than a poll could expire while it runs$/,
    ],
    [{ DUT_POLL_LEASE_SECONDS: "2" }, /^dutlab: BAD_CONFIG: DUT_POLL_LEASE_SECONDS: must be at least 5$/],
    [{ DUT_POLL_CLAIM_BATCH: "0" }, /^dutlab: BAD_CONFIG: DUT_POLL_CLAIM_BATCH: must be at least 1$/],
    [{ DUT_POLL_CLAIM_BATCH: "many" }, /^dutlab: BAD_CONFIG: DUT_POLL_CLAIM_BATCH: must be a whole number$/],
  ];
  for (const [env, re] of leaseCases) {
    const r = await runServe(
      { DATABASE_URL: "postgres://postgres@127.0.0.1:5432/test", DUT_CRED_ENC_KEY: "ab".repeat(32), ...env },
      20_000,
      "poller.ts",
    );
    assert.notEqual(r.code, 0, JSON.stringify(env));
    assert.equal(r.lines.length, 1, r.lines.join("\n"));
    assert.match(r.lines[0]!, re);
  }
  await Deno.remove(dir, { recursive: true });
});

/** Every line parsed as JSON (DUT_LOG_FORMAT=json promises nothing else on stderr). */
function jsonLines(text: string): Array<{ level: string; message: string }> {
  return text.trim().split("\n").filter(Boolean).map((l) => {
    try {
      return JSON.parse(l);
    } catch {
      throw new Error(`not a JSON line: ${l}`);
    }
  });
}

Deno.test("migrate asks for no secret; serve then starts, stores secrets 0600, logs JSON only, and a second serve is refused", async () => {
  const dir = await Deno.makeTempDir();
  const port = freePort();
  // `deno task migrate` uses the database only: no admin token or key is generated or needed.
  const task = JSON.parse(await Deno.readTextFile(`${root}deno.json`)).tasks.migrate;
  assert.equal(task, "deno run -A tools/migrate.ts");
  const migrated = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "tools/migrate.ts"],
    cwd: root,
    clearEnv: true,
    env: childEnv({ DUT_DATA_DIR: dir, DUT_LOG_FORMAT: "json" }),
    stdout: "piped",
    stderr: "piped",
  }).output();
  const migrateLog = jsonLines(dec.decode(migrated.stderr));
  assert.equal(migrated.code, 0, dec.decode(migrated.stderr));
  assert.ok(migrateLog.some((l) => /^Creating the embedded database in .* \(first start/.test(l.message)));
  // The shipped template already holds the migrations it was built with; newer ones are applied.
  assert.ok(migrateLog.some((l) => /^(Applied migrations|Migrations are up to date)/.test(l.message)));
  await assert.rejects(Deno.stat(`${dir}/secrets.json`), Deno.errors.NotFound);
  await assert.rejects(Deno.stat(`${dir}/dutlab.pid`), Deno.errors.NotFound, "lock released");

  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "server.ts"],
    cwd: root,
    clearEnv: true,
    env: childEnv({
      PORT: String(port),
      HOST: "127.0.0.1",
      DUT_DATA_DIR: dir,
      DUT_API_POLLER_DISABLE: "1",
      DUT_LOG_FORMAT: "json",
    }),
    stdout: "null",
    stderr: "piped",
  }).spawn();
  try {
    const health = await waitFor(`http://127.0.0.1:${port}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: "ok" });
    const ready = await waitFor(`http://127.0.0.1:${port}/readyz`);
    assert.equal(ready.status, 200);
    await ready.body?.cancel();
    const st = await Deno.stat(`${dir}/secrets.json`);
    assert.equal(st.mode! & 0o777, 0o600);
    const secrets = JSON.parse(await Deno.readTextFile(`${dir}/secrets.json`));
    assert.match(secrets.adminToken, /^[0-9a-f]{64}$/);
    assert.match(secrets.credEncKey, /^[0-9a-f]{64}$/);
    assert.match(
      secrets.reportSigningKey,
      /^MC4CAQAwBQYDK2VwBCIEI[A-Za-z0-9+/]{43}$/,
      "Ed25519 PKCS#8, base64",
    );
    // The self-signed PDF signing certificate, generated by serve's first start, listed publicly.
    assert.match(secrets.pdfSigningCertificate, /^-----BEGIN CERTIFICATE-----\n/);
    assert.match(secrets.pdfSigningKey, /^-----BEGIN PRIVATE KEY-----\n/);
    const listed = await (await fetch(`http://127.0.0.1:${port}/api/report-keys`)).json();
    assert.equal(listed.certificates.length, 1);
    assert.equal(listed.certificates[0].certificatePem, secrets.pdfSigningCertificate);
    assert.equal(listed.certificates[0].subject, "CN=dutlab test lab report signing, O=dutlab test lab");
    const authed = await fetch(`http://127.0.0.1:${port}/api/admin/dut/devices`, {
      headers: { authorization: `Bearer ${secrets.adminToken}` },
    });
    assert.equal(authed.status, 200);
    await authed.body?.cancel();
    const second = await runServe({ DUT_DATA_DIR: dir, PORT: String(freePort()) });
    assert.notEqual(second.code, 0);
    assert.match(second.lines.join("\n"), /DATA_DIR_IN_USE: Data directory .* is in use by process \d+/);
    const again = await fetch(`http://127.0.0.1:${port}/readyz`);
    assert.equal(again.status, 200, "the first instance still works");
    await again.body?.cancel();
  } finally {
    child.kill("SIGTERM");
    const status = await child.status;
    const log = dec.decode(await new Response(child.stderr).arrayBuffer());
    const lines = jsonLines(log).map((l) => l.message);
    assert.ok(lines.some((m) => /^Generated an admin token; read it from/.test(m)), log);
    assert.ok(lines.some((m) => /^Generated a self-signed PDF signing certificate for/.test(m)), log);
    assert.ok(lines.some((m) => /^Opening the embedded database in/.test(m)), log);
    assert.ok(lines.includes(`dutlab listening on "http://127.0.0.1:${port}"`), log);
    assert.ok(lines.some((m) => /^Polling worker disabled by DUT_API_POLLER_DISABLE=1/.test(m)), log);
    const secrets = JSON.parse(await Deno.readTextFile(`${dir}/secrets.json`));
    assert.ok(
      !log.includes(secrets.adminToken) && !log.includes(secrets.credEncKey) &&
        !log.includes(secrets.reportSigningKey) &&
        !log.includes(secrets.pdfSigningKey.split("\n")[1]),
      "no secret in the log",
    );
    assert.equal(status.code, 0, "clean shutdown on SIGTERM");
    // Start-up recorded the volatile pattern set of every label of every enabled adapter (the stable change
    // flags are checked against them at each start, core/src/snapshots/stable.ts).
    const db = await openDatabase({ dataDir: `${dir}/pglite` });
    try {
      const registry = buildRegistry(modules);
      const sets = await db.kysely.selectFrom("volatile_path_sets").selectAll().execute();
      const want = [...registry.adapters].flatMap(([vendor, reg]) =>
        reg.adapter.labels.map((label) =>
          `${vendor} ${label} ${patternSetKey(volatileFor(registry, vendor, label))}`
        )
      );
      assert.deepEqual(sets.map((r) => `${r.vendor} ${r.endpoint_label} ${r.patterns}`).sort(), want.sort());
    } finally {
      await db.close();
    }
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("with PGlite in a worker a restart opens the database while the service loads; a bad configuration lets it go", async () => {
  const dir = await Deno.makeTempDir();
  const env = {
    DUT_DATA_DIR: dir,
    DUT_PGLITE_WORKER: "on",
    DUT_API_POLLER_DISABLE: "1",
    DUT_LOG_FORMAT: "json",
  };
  /** One `serve` until its first 200 from /readyz; its log's properties of "Embedded database ready". */
  const serveOnce = async () => {
    const port = freePort();
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "server.ts"],
      cwd: root,
      clearEnv: true,
      env: childEnv({ ...env, PORT: String(port), HOST: "127.0.0.1" }),
      stdout: "null",
      stderr: "piped",
    }).spawn();
    let log = "";
    try {
      for (;;) {
        const r = await waitFor(`http://127.0.0.1:${port}/readyz`);
        await r.body?.cancel();
        if (r.status === 200) break;
        await new Promise((res) => setTimeout(res, 50));
      }
    } finally {
      child.kill("SIGTERM");
      assert.equal((await child.status).code, 0);
      log = dec.decode(await new Response(child.stderr).arrayBuffer());
    }
    const ready = (jsonLines(log) as Array<{ message: string; properties?: Record<string, unknown> }>)
      .find((l) => /^Embedded database ready in \d+ ms$/.test(l.message));
    assert.ok(ready, log);
    return ready.properties ?? {};
  };
  try {
    const first = await serveOnce();
    assert.equal(first.openedEarly, true, "a first start opens early too (the worker unpacks the template)");
    const restart = await serveOnce();
    assert.equal(restart.pgliteWorker, true);
    assert.equal(restart.openedEarly, true);
    await assert.rejects(Deno.stat(`${dir}/dutlab.pid`), Deno.errors.NotFound, "released at shutdown");
    // The directory is taken before the environment is validated; a start that fails there lets it go.
    const bad = await runServe({ ...env, PORT: "not-a-port" });
    assert.equal(bad.code, 2);
    assert.match(bad.lines.join("\n"), /PORT/);
    await assert.rejects(Deno.stat(`${dir}/dutlab.pid`), Deno.errors.NotFound, "no lock left behind");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
