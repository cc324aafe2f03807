import assert from "node:assert/strict";
import { GENERATE_SECRET, parseEnv } from "./config.ts";
import { StartupError } from "./errors.ts";

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
  assert.equal(l.length, 2);
  assert.match(l[0], /^ADMIN_TOKEN: required when DATABASE_URL is set/);
  assert.match(l[1], /^DUT_CRED_ENC_KEY: required when DATABASE_URL is set/);
  for (const line of l) assert.ok(line.endsWith(`generate one with: ${GENERATE_SECRET}`), line);
  // migrate uses neither secret
  assert.doesNotThrow(() => parseEnv({ DATABASE_URL: "postgres://u@h/db" }, { secrets: false }));
  const secret = "tooshort-secret";
  const msg = lines({ ADMIN_TOKEN: secret, DUT_CRED_ENC_KEY: "deadbeef-not-a-key" }).join("\n");
  assert.ok(!msg.includes(secret) && !msg.includes("deadbeef"));
  assert.deepEqual(
    lines({ DATABASE_URL: "postgres://u@h/db", ADMIN_TOKEN: "x".repeat(32), DUT_CRED_ENC_KEY: KEY }),
    [],
  );
  assert.deepEqual(lines({ DATABASE_URL: "mysql://u@h/db" }).slice(0, 1), [
    "DATABASE_URL: must be a postgres:// or postgresql:// URL",
  ]);
});

Deno.test("the printed generate command prints a valid secret", async () => {
  const out = await new Deno.Command("sh", { args: ["-c", GENERATE_SECRET], stdout: "piped" }).output();
  assert.equal(out.code, 0);
  const secret = new TextDecoder().decode(out.stdout).trim();
  assert.deepEqual(
    lines({ DATABASE_URL: "postgres://u@h/db", ADMIN_TOKEN: secret, DUT_CRED_ENC_KEY: secret }),
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
    assert.match(l[0], /^HOST: must be an IP address or a host name/);
  }
});
