import assert from "node:assert/strict";
import {
  type Entry,
  ENTRY_SECRETS,
  GENERATE_SECRET,
  GENERATE_SIGNING_KEY,
  parseEnv,
  pollConfig,
} from "./config.ts";
import { StartupError } from "../errors.ts";

const lines = (env: Record<string, string>) => {
  try {
    parseEnv(env);
    return [];
  } catch (e) {
    assert.ok(e instanceof StartupError && e.code === "BAD_CONFIG");
    return e.message.split("\n");
  }
};
const KEY = "ab".repeat(32);
const SIGNING_KEY = "MC4CAQAwBQYDK2VwBCIEIAEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEB";

Deno.test("config defaults: port 8080, scan 30 s, data dir ./.data, poller on", () => {
  const c = parseEnv({});
  assert.equal(c.PORT, 8080);
  assert.equal(c.DUT_POLL_SCAN_SECONDS, 30);
  assert.equal(c.DUT_DATA_DIR, "./.data");
  assert.equal(c.DUT_API_POLLER_DISABLE, "0");
  assert.equal(c.DUT_BODY_LIMIT_BYTES, 1024 * 1024);
  assert.deepEqual(c.DUT_CORS_ORIGINS, []);
});

Deno.test("a bad key, port or flag gives one line per problem naming the variable", () => {
  const keyLine =
    `DUT_CRED_ENC_KEY: must be exactly 64 hex characters (32 bytes); generate one with: ${GENERATE_SECRET}`;
  assert.deepEqual(lines({ DUT_CRED_ENC_KEY: "a".repeat(63) }), [keyLine]);
  assert.deepEqual(lines({ DUT_CRED_ENC_KEY: "z".repeat(64) }), [keyLine]);
  assert.deepEqual(lines({ PORT: "70000" }), ["PORT: must be at most 65535"]);
  assert.deepEqual(lines({ PORT: "0", DUT_API_POLLER_DISABLE: "yes" }), [
    "PORT: must be at least 1",
    'DUT_API_POLLER_DISABLE: must be "0" or "1"',
  ]);
  assert.deepEqual(lines({ DUT_CORS_ORIGINS: "not a url" }), [
    "DUT_CORS_ORIGINS: must be a comma-separated list of origins like https://dash.example",
  ]);
});

Deno.test("DATABASE_URL without secrets is refused; error lines never echo a secret", () => {
  const l = lines({ DATABASE_URL: "postgres://u@h/db" });
  assert.equal(l.length, 3);
  assert.match(l[0]!, /^ADMIN_TOKEN: required by this command when DATABASE_URL is set/);
  assert.match(l[1]!, /^DUT_CRED_ENC_KEY: required by this command when DATABASE_URL is set/);
  assert.match(l[2]!, /^DUT_REPORT_SIGNING_KEY: required by this command when DATABASE_URL is set/);
  for (const line of l.slice(0, 2)) assert.ok(line.endsWith(`generate one with: ${GENERATE_SECRET}`), line);
  assert.ok(l[2]!.endsWith(`generate one with: ${GENERATE_SIGNING_KEY}`), l[2]!);
  // migrate, prune, backup and restore use none of them
  assert.doesNotThrow(() => parseEnv({ DATABASE_URL: "postgres://u@h/db" }, { entry: "database" }));
  const secret = "tooshort-secret";
  const msg = lines({ ADMIN_TOKEN: secret, DUT_CRED_ENC_KEY: "deadbeef-not-a-key" }).join("\n");
  assert.ok(!msg.includes(secret) && !msg.includes("deadbeef"));
  assert.deepEqual(
    lines({
      DATABASE_URL: "postgres://u@h/db",
      ADMIN_TOKEN: "x".repeat(32),
      DUT_CRED_ENC_KEY: KEY,
      DUT_REPORT_SIGNING_KEY: SIGNING_KEY,
    }),
    [],
  );
  // A signing key is base64 PKCS#8 DER or PEM of an Ed25519 key; the message never echoes the value.
  const pem = `-----BEGIN PRIVATE KEY-----\n${SIGNING_KEY}\n-----END PRIVATE KEY-----\n`;
  assert.deepEqual(lines({ DUT_REPORT_SIGNING_KEY: pem }), []);
  const bad = lines({ DUT_REPORT_SIGNING_KEY: "c2VjcmV0LW5vdC1hLWtleQ==" });
  assert.equal(bad.length, 1);
  assert.match(bad[0]!, /^DUT_REPORT_SIGNING_KEY: must be an Ed25519 private key/);
  assert.ok(!bad[0]!.includes("c2VjcmV0"));
  assert.deepEqual(lines({ DATABASE_URL: "mysql://u@h/db" }).slice(0, 1), [
    "DATABASE_URL: must be a postgres:// or postgresql:// URL",
  ]);
});

Deno.test("the printed generate commands print valid secrets", async () => {
  const out = await new Deno.Command("sh", { args: ["-c", GENERATE_SECRET], stdout: "piped" }).output();
  assert.equal(out.code, 0);
  const secret = new TextDecoder().decode(out.stdout).trim();
  const key = await new Deno.Command("sh", { args: ["-c", GENERATE_SIGNING_KEY], stdout: "piped" }).output();
  assert.equal(key.code, 0);
  const signingKey = new TextDecoder().decode(key.stdout).trim();
  assert.deepEqual(
    lines({
      DATABASE_URL: "postgres://u@h/db",
      ADMIN_TOKEN: secret,
      DUT_CRED_ENC_KEY: secret,
      DUT_REPORT_SIGNING_KEY: signingKey,
    }),
    [],
  );
});

Deno.test("HOST must be an address or a host name", () => {
  for (const ok of ["0.0.0.0", "127.0.0.1", "::", "::1", "localhost", "lab-host.example"]) {
    assert.deepEqual(lines({ HOST: ok }), [], ok);
  }
  for (const bad of ["http://localhost", "localhost:8080", "[::1]", "bad host", "1.2.3.999"]) {
    const l = lines({ HOST: bad });
    assert.equal(l.length, 1, bad);
    assert.match(l[0]!, /^HOST: must be an IP address or a host name/);
  }
});

Deno.test("DUT_PGLITE_SHARED_BUFFERS takes a size with its unit between 128kB and 4GB", () => {
  assert.equal(parseEnv({}).DUT_PGLITE_SHARED_BUFFERS, undefined); // the database layer's default (16MB)
  for (const ok of ["128kB", "16MB", "32MB", "1GB", "4GB"]) {
    assert.deepEqual(lines({ DUT_PGLITE_SHARED_BUFFERS: ok }), [], ok);
    assert.equal(parseEnv({ DUT_PGLITE_SHARED_BUFFERS: ok }).DUT_PGLITE_SHARED_BUFFERS, ok);
  }
  for (
    const [bad, why] of [
      ["32", /with its unit/],
      ["32mb", /with its unit/],
      ["-1MB", /with its unit/],
      ["64kB", /between 128kB and 4GB/],
      ["5GB", /between 128kB and 4GB/],
      ["32MB; drop table x", /with its unit/],
    ] as const
  ) {
    const l = lines({ DUT_PGLITE_SHARED_BUFFERS: bad });
    assert.equal(l.length, 1, bad);
    assert.match(l[0]!, /^DUT_PGLITE_SHARED_BUFFERS: /);
    assert.match(l[0]!, why, bad);
  }
});

Deno.test("DUT_EVENTS_FLUSH_MS is a whole number of milliseconds from 0 to 1000, 100 by default", () => {
  assert.equal(parseEnv({}).DUT_EVENTS_FLUSH_MS, 100);
  for (const [ok, n] of [["0", 0], ["25", 25], [" 1000 ", 1000]] as const) {
    assert.deepEqual(lines({ DUT_EVENTS_FLUSH_MS: ok }), [], ok);
    assert.equal(parseEnv({ DUT_EVENTS_FLUSH_MS: ok }).DUT_EVENTS_FLUSH_MS, n);
  }
  for (
    const [bad, why] of [["-1", /whole number/], ["1.5", /whole number/], ["1001", /at most 1000/], [
      "x",
      /whole/,
    ]] as const
  ) {
    const l = lines({ DUT_EVENTS_FLUSH_MS: bad });
    assert.equal(l.length, 1, bad);
    assert.match(l[0]!, /^DUT_EVENTS_FLUSH_MS: /);
    assert.match(l[0]!, why, bad);
  }
});

Deno.test("DUT_POLL_WORKERS is a whole number of hash workers from 0 to 16, 0 (main thread) by default", () => {
  assert.equal(parseEnv({}).DUT_POLL_WORKERS, 0);
  for (const [ok, n] of [["0", 0], ["2", 2], [" 16 ", 16]] as const) {
    assert.equal(parseEnv({ DUT_POLL_WORKERS: ok }).DUT_POLL_WORKERS, n);
  }
  for (const [bad, why] of [["-1", /whole number/], ["17", /at most 16/], ["two", /whole number/]] as const) {
    const l = lines({ DUT_POLL_WORKERS: bad });
    assert.equal(l.length, 1, bad);
    assert.match(l[0]!, /^DUT_POLL_WORKERS: /);
    assert.match(l[0]!, why, bad);
  }
});

Deno.test("serve with DATABASE_URL needs a PDF signing certificate; poll does not; pairs are checked", async () => {
  const { TEST_PDF_CERT, TEST_PDF_KEY } = await import("../../harness/app.ts");
  const base = {
    DATABASE_URL: "postgres://u@h/db",
    ADMIN_TOKEN: "x".repeat(32),
    DUT_CRED_ENC_KEY: KEY,
    DUT_REPORT_SIGNING_KEY: SIGNING_KEY,
  };
  const serve = (env: Record<string, string>) => {
    try {
      parseEnv(env, { entry: "serve" });
      return [];
    } catch (e) {
      assert.ok(e instanceof StartupError && e.code === "BAD_CONFIG");
      return e.message.split("\n");
    }
  };
  const missing = serve(base);
  assert.equal(missing.length, 1);
  assert.match(missing[0]!, /^DUT_PDF_SIGNING_CERT: required when DATABASE_URL is set/);
  assert.match(missing[0]!, /make one with: openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256/);
  assert.deepEqual(lines(base), [], "the admin tools do not ask for it");
  assert.deepEqual(
    serve({ ...base, DUT_PDF_SIGNING_CERT: TEST_PDF_CERT, DUT_PDF_SIGNING_KEY: TEST_PDF_KEY }),
    [],
  );
  assert.deepEqual(serve({ ...base, DUT_PDF_SIGNING_P12: btoa("not checked until start") }), []);
  assert.match(
    serve({ ...base, DUT_PDF_SIGNING_CERT: TEST_PDF_CERT })[0]!,
    /^DUT_PDF_SIGNING_KEY: required with/,
  );
  assert.match(
    serve({ ...base, DUT_PDF_SIGNING_KEY: TEST_PDF_KEY })[0]!,
    /^DUT_PDF_SIGNING_CERT: required with/,
  );
  assert.match(
    serve({
      ...base,
      DUT_PDF_SIGNING_CERT: TEST_PDF_CERT,
      DUT_PDF_SIGNING_KEY: TEST_PDF_KEY,
      DUT_PDF_SIGNING_P12: "AAAA",
    })[0]!,
    /^DUT_PDF_SIGNING_P12: give either/,
  );
  // Wrong forms name the variable, never the value.
  const bad = serve({ ...base, DUT_PDF_SIGNING_CERT: TEST_PDF_KEY, DUT_PDF_SIGNING_KEY: TEST_PDF_CERT });
  assert.equal(bad.length, 2);
  assert.match(bad[0]!, /^DUT_PDF_SIGNING_CERT: must be an X\.509 certificate as PEM/);
  assert.match(bad[1]!, /^DUT_PDF_SIGNING_KEY: must be one unencrypted PKCS#8 private key/);
  assert.ok(!bad.join("\n").includes("PRIVATE KEY-----\nMI"), "no key material echoed");
  // base64 of the PEM files is accepted too (one line for an env file).
  assert.deepEqual(
    serve({ ...base, DUT_PDF_SIGNING_CERT: btoa(TEST_PDF_CERT), DUT_PDF_SIGNING_KEY: btoa(TEST_PDF_KEY) }),
    [],
  );
});

Deno.test("each entry point requires exactly the secrets it uses with DATABASE_URL", async () => {
  const { TEST_PDF_CERT, TEST_PDF_KEY } = await import("../../harness/app.ts");
  const failing = (env: Record<string, string>, entry: Entry) => {
    try {
      parseEnv(env, { entry });
      return [];
    } catch (e) {
      assert.ok(e instanceof StartupError && e.code === "BAD_CONFIG");
      return e.message.split("\n");
    }
  };
  const db = { DATABASE_URL: "postgres://u@h/db" };
  const all = {
    ...db,
    ADMIN_TOKEN: "x".repeat(32),
    DUT_CRED_ENC_KEY: KEY,
    DUT_REPORT_SIGNING_KEY: SIGNING_KEY,
    DUT_PDF_SIGNING_CERT: TEST_PDF_CERT,
    DUT_PDF_SIGNING_KEY: TEST_PDF_KEY,
  };
  // poll: the credential key and nothing else.
  assert.deepEqual(failing({ ...db, DUT_CRED_ENC_KEY: KEY }, "poll"), []);
  const poll = failing(db, "poll");
  assert.equal(poll.length, 1);
  assert.match(poll[0]!, /^DUT_CRED_ENC_KEY: required by poll when DATABASE_URL is set/);
  assert.ok(poll[0]!.endsWith(`generate one with: ${GENERATE_SECRET}`));
  // A secret poll does not use is still validated when given (a typo is not silently carried along).
  assert.match(failing({ ...db, DUT_CRED_ENC_KEY: KEY, ADMIN_TOKEN: "short" }, "poll")[0]!, /^ADMIN_TOKEN: /);
  // migrate, prune, backup, restore: none.
  assert.deepEqual(failing(db, "database"), []);
  // serve: refuses without each of its secrets, one clear line naming it.
  assert.deepEqual(failing(all, "serve"), []);
  const why: Record<string, RegExp> = {
    ADMIN_TOKEN: /^ADMIN_TOKEN: required by serve when DATABASE_URL is set/,
    DUT_CRED_ENC_KEY: /^DUT_CRED_ENC_KEY: required by serve when DATABASE_URL is set/,
    DUT_REPORT_SIGNING_KEY: /^DUT_REPORT_SIGNING_KEY: required by serve when DATABASE_URL is set/,
    DUT_PDF_SIGNING_CERT: /^DUT_PDF_SIGNING_CERT: required when DATABASE_URL is set \(serve signs/,
  };
  for (const [name, re] of Object.entries(why)) {
    const env: Record<string, string> = { ...all };
    delete env[name];
    if (name === "DUT_PDF_SIGNING_CERT") delete env.DUT_PDF_SIGNING_KEY; // the pair, else "required with"
    const l = failing(env, "serve");
    assert.equal(l.length, 1, `${name}: ${l.join(" | ")}`);
    assert.match(l[0]!, re);
  }
  assert.deepEqual(ENTRY_SECRETS.poll, ["DUT_CRED_ENC_KEY"]);
  // A poller's configuration keeps none of serve's secrets, even when its environment has them.
  const pc = pollConfig(parseEnv({ ...all, DUT_PDF_SIGNING_P12_PASSWORD: "pw" }, { entry: "poll" }), KEY, []);
  assert.equal(pc.DUT_CRED_ENC_KEY, KEY);
  for (
    const k of [
      "ADMIN_TOKEN",
      "DUT_REPORT_SIGNING_KEY",
      "DUT_PDF_SIGNING_CERT",
      "DUT_PDF_SIGNING_KEY",
      "DUT_PDF_SIGNING_P12",
      "DUT_PDF_SIGNING_P12_PASSWORD",
    ]
  ) assert.ok(!(k in pc), k);
});

Deno.test("DUT_DEVICE_NETWORKS: unset admits all but the guarded ranges; each bad entry is one line", () => {
  assert.equal(parseEnv({}).DUT_DEVICE_NETWORKS.listed, false);
  const set = parseEnv({ DUT_DEVICE_NETWORKS: "127.0.0.0/8, 10.20.0.0/16,*.mgmt.lab" }).DUT_DEVICE_NETWORKS;
  assert.equal(set.listed, true);
  assert.deepEqual(set.cidrs.map((c) => c.text), ["127.0.0.0/8", "10.20.0.0/16"]);
  assert.deepEqual(set.hosts.map((h) => h.text), ["*.mgmt.lab"]);
  assert.deepEqual(lines({ DUT_DEVICE_NETWORKS: "10.0.0.0/99,10.1.0.1/16" }), [
    'DUT_DEVICE_NETWORKS: "10.0.0.0/99" is not a CIDR (an address, "/" and a prefix length: 10.20.0.0/16, fd00:1::/64)',
    'DUT_DEVICE_NETWORKS: "10.1.0.1/16" has bits set after its prefix; the network is 10.1.0.0/16',
  ]);
  assert.deepEqual(lines({ DUT_DEVICE_NETWORKS: "," }), ["DUT_DEVICE_NETWORKS: lists no network or host"]);
});
