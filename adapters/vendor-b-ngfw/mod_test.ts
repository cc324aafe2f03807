import assert from "node:assert/strict";
import { type AdapterSession, DeviceError, type DeviceHttp, type SessionStore } from "@dutlab/core";
import { connectTo, logger, runAdapterContract } from "@dutlab/core/testing";
import adapter, { CALLS } from "./mod.ts";
import {
  type FirmwareMode,
  simPolicy,
  simSslSshProfile,
  startSimulatedDevice,
  type VendorSim,
} from "./sim.ts";

const { decryptRuleCount, ntpServers } = adapter.facts;
type Creds = { username: string; password: string };
type Obj = Record<string, unknown>;

/** A SessionStore that lives as long as the test wants (core's SessionRegistry is not exported). */
function memoryStore(): SessionStore & { peek(): unknown } {
  let slot: { value: unknown; until: number } | undefined;
  return {
    get: <T>() => (slot && slot.until > Date.now() ? slot.value as T : undefined),
    set: (value, ttlMs) => void (slot = { value, until: Date.now() + ttlMs }),
    clear: () => void (slot = undefined),
    peek: () => slot?.value,
  };
}

/** One cycle as the poller runs it (create, use, close) over the core transport. */
async function cycle<T>(
  sim: VendorSim,
  credentials: Creds,
  use: (s: AdapterSession) => Promise<T>,
  opts: { store?: SessionStore; timeoutMs?: number } = {},
): Promise<T> {
  await using conn = await connectTo(adapter, sim.sim, { credentials });
  const http: DeviceHttp = opts.timeoutMs
    ? {
      cookies: conn.transport.cookies,
      request: (r) => conn.transport.request({ ...r, timeoutMs: opts.timeoutMs }),
    }
    : conn.transport;
  const session = adapter.create({
    device: {
      id: "00000000-0000-4000-8000-0000000000b1",
      hostname: "fgt-lab-1",
      vendor: adapter.vendorKey,
      deviceRole: "ngfw",
      baseUrl: sim.sim.url,
      username: credentials.username,
      tlsVerifyMode: "insecure",
    },
    credentials,
    http,
    sessions: opts.store ?? memoryStore(),
    log: logger("test"),
    signal: new AbortController().signal,
  });
  try {
    return await use(session);
  } finally {
    await session.close();
  }
}

const poll = (sim: VendorSim, creds: Creds, store?: SessionStore) =>
  cycle(sim, creds, (s) => s.collectAll(), { store });
const payloadOf = async (sim: VendorSim, creds: Creds, label: string) =>
  (await poll(sim, creds)).find((s) => s.label === label)!.payload as Obj;
const isStatus = (status: string) => (e: unknown) => e instanceof DeviceError && e.status === status;
const apiPaths = (sim: VendorSim) => sim.sim.requests.filter((r) => r.path.startsWith("/api/v2/"));

Deno.test("vendor-b-ngfw meets the adapter contract", (t) =>
  runAdapterContract(t, {
    adapter,
    start: () => startSimulatedDevice(),
    cases: ["exporter-multi-vdom", "multi-vdom-deep-inspection"].map((c) => ({
      folder: new URL(`./testdata/${c}`, import.meta.url),
      credentials: { username: "apitoken", password: "replay-token-0123456789" },
    })),
  }));

Deno.test("vendor-b-ngfw meets the adapter contract with an API token", (t) =>
  runAdapterContract(t, { adapter, start: () => startSimulatedDevice({ username: "apitoken" }) }));

Deno.test("vendor-b-ngfw meets the adapter contract on legacy /logincheck firmware", (t) =>
  runAdapterContract(t, { adapter, start: () => startSimulatedDevice({ firmware: "legacy" }) }));

Deno.test("a token and a session registration of one device both poll 7 labels, each in its own auth style", async () => {
  await using sim = await startSimulatedDevice();
  assert.equal(adapter.labels.length, 7);

  sim.sim.clearLog();
  const byToken = await poll(sim, sim.tokenCredentials);
  assert.deepEqual(byToken.map((s) => s.label), [...adapter.labels]);
  assert.ok(sim.sim.requests.length >= 8);
  for (const r of sim.sim.requests) {
    assert.equal(r.authStyle, "bearer", `${r.method} ${r.path} used bearer auth`);
    assert.equal(r.headers.get("authorization"), `Bearer ${sim.tokenCredentials.password}`);
    assert.ok(!r.headers.has("cookie"), "no cookie with a token");
    assert.ok(!["/api/v2/authentication", "/logincheck", "/logout"].includes(r.path), "no login or logout");
  }
  assert.equal(sim.authEvents.length, 0);

  sim.sim.clearLog();
  const bySession = await poll(sim, sim.sessionCredentials);
  assert.deepEqual(bySession.map((s) => s.label), [...adapter.labels]);
  const reqs = sim.sim.requests;
  assert.ok(
    reqs.every((r) => r.authStyle !== "bearer" && !r.headers.has("authorization")),
    "never a bearer token",
  );
  assert.deepEqual([reqs[0]!.method, reqs[0]!.path], ["POST", "/api/v2/authentication"]);
  assert.deepEqual([reqs.at(-1)!.method, reqs.at(-1)!.path], ["DELETE", "/api/v2/authentication"]);
  for (const r of reqs.slice(1)) {
    assert.equal(r.authStyle, "cookie", `${r.method} ${r.path} used the session cookie`);
  }
  assert.deepEqual(sim.authEvents.map((e) => `${e.event}:${e.style}`), ["login:api-auth", "logout:api-auth"]);
  assert.equal(sim.openSessions(), 0);

  // The same data either way (modulo the live resource counters).
  for (const label of ["system_info", "ntp_config", "decrypt_policy", "ha_status", "license_status"]) {
    assert.deepEqual(
      byToken.find((s) => s.label === label)!.payload,
      bySession.find((s) => s.label === label)!.payload,
      label,
    );
  }
});

Deno.test("a legacy device is polled over /logincheck and logged out with GET /logout", async () => {
  await using sim = await startSimulatedDevice({ firmware: "legacy" });
  const snaps = await poll(sim, sim.credentials);
  assert.equal(snaps.length, 7);
  const paths = sim.sim.requests.map((r) => `${r.method} ${r.path}`);
  assert.deepEqual(paths.slice(0, 2), ["POST /api/v2/authentication", "POST /logincheck"]);
  assert.equal(paths.at(-1), "GET /logout");
  assert.deepEqual(sim.authEvents.map((e) => `${e.event}:${e.style}`), [
    "login:logincheck",
    "logout:logincheck",
  ]);
  assert.equal(sim.openSessions(), 0);
});

Deno.test("the login style a device answered to is remembered, so the next cycle does not probe", async () => {
  await using legacy = await startSimulatedDevice({ firmware: "legacy" });
  const store = memoryStore();
  await poll(legacy, legacy.credentials, store);
  assert.deepEqual(store.peek(), { loginStyle: "logincheck" });
  legacy.sim.clearLog();
  await poll(legacy, legacy.credentials, store);
  assert.ok(
    !legacy.sim.requests.some((r) => r.path === "/api/v2/authentication"),
    "no probe of the new endpoint",
  );

  // After a firmware upgrade the remembered style fails over once and is re-learned.
  legacy.state.firmware = "7.6.3+";
  await poll(legacy, legacy.credentials, store);
  assert.deepEqual(store.peek(), { loginStyle: "api-auth" });
  assert.equal(legacy.openSessions(), 0);
});

Deno.test("session writes echo the CSRF cookie, without quotes, as X-CSRFTOKEN", async () => {
  for (const firmware of ["7.6.3+", "legacy"] as FirmwareMode[]) {
    await using sim = await startSimulatedDevice({ firmware });
    let csrfCookie = "";
    await cycle(sim, sim.credentials, async (s) => {
      await s.collectAll();
      csrfCookie = sim.sessions()[0]!.csrf;
    });
    const write = sim.sim.requests.find((r) => r.method === "DELETE");
    if (firmware === "7.6.3+") {
      assert.equal(write?.headers.get("x-csrftoken"), csrfCookie);
      assert.match(write!.headers.get("cookie")!, new RegExp(`ccsrf_token_\\d+_\\d+="${csrfCookie}"`));
    } else {
      assert.equal(write, undefined, "legacy logout is a GET");
    }
    assert.ok(sim.sim.requests.filter((r) => r.method === "GET").every((r) => !r.headers.has("x-csrftoken")));
  }
});

Deno.test("a wrong API token gives auth_failed", async () => {
  await using sim = await startSimulatedDevice({ username: "apitoken" });
  const bad = { username: "apitoken", password: "x".repeat(30) };
  await assert.rejects(() => poll(sim, bad), (e: unknown) => {
    assert.ok(isStatus("auth_failed")(e));
    assert.match((e as Error).message, /API token refused: HTTP 401/);
    assert.ok(!(e as Error).message.includes(bad.password));
    return true;
  });
  await assert.rejects(() => cycle(sim, bad, (s) => s.testConnection()), isStatus("auth_failed"));
  assert.ok(sim.sim.requests.every((r) => r.authStyle === "bearer"));
});

Deno.test("a wrong password gives auth_failed on 7.6.3+ and on legacy firmware, with no session left", async () => {
  for (const firmware of ["7.6.3+", "legacy"] as FirmwareMode[]) {
    await using sim = await startSimulatedDevice({ firmware });
    const bad = { username: sim.credentials.username, password: "not-the-password" };
    await assert.rejects(() => poll(sim, bad), (e: unknown) => {
      assert.ok(isStatus("auth_failed")(e), `${firmware}: ${e}`);
      assert.match(
        (e as Error).message,
        firmware === "legacy"
          ? /logincheck answered HTTP 200 without a usable ccsrftoken cookie/
          : /LOGIN_FAILED/,
      );
      assert.ok(!(e as Error).message.includes(bad.password));
      return true;
    });
    assert.equal(sim.openSessions(), 0);
    assert.equal(apiPaths(sim).filter((r) => r.path !== "/api/v2/authentication").length, 0, "no data call");
  }
});

Deno.test("an admin profile without read permission (403) gives auth_failed", async () => {
  await using sim = await startSimulatedDevice();
  sim.state.deniedPaths.push("/api/v2/cmdb/firewall/policy");
  for (const creds of [sim.tokenCredentials, sim.sessionCredentials]) {
    await assert.rejects(() => poll(sim, creds), (e: unknown) => {
      assert.ok(isStatus("auth_failed")(e));
      assert.match(
        (e as Error).message,
        /Permission denied: HTTP 403 from GET \/api\/v2\/cmdb\/firewall\/policy/,
      );
      return true;
    });
  }
  assert.equal(sim.openSessions(), 0, "the session is logged out after the failure");
});

Deno.test("a session that expires mid-cycle is renewed once, transparently, and logged out", async () => {
  for (const firmware of ["7.6.3+", "legacy"] as FirmwareMode[]) {
    await using sim = await startSimulatedDevice({ firmware });
    const store = memoryStore();
    await poll(sim, sim.credentials, store);
    sim.authEvents.length = 0;
    sim.expireSessionsOnNextCall();
    const snaps = await poll(sim, sim.credentials, store);
    assert.equal(snaps.length, 7);
    const style = firmware === "legacy" ? "logincheck" : "api-auth";
    assert.deepEqual(sim.authEvents.map((e) => `${e.event}:${e.style}`), [
      `login:${style}`,
      `expired:${style}`,
      `login:${style}`,
      `logout:${style}`,
    ]);
    assert.equal(sim.openSessions(), 0);
  }
});

Deno.test("50 polls in a row never exceed a session cap of 1 and leave no session open", async () => {
  for (const firmware of ["7.6.3+", "legacy"] as FirmwareMode[]) {
    await using sim = await startSimulatedDevice({ firmware, sessionCap: 1 });
    const store = memoryStore();
    for (let i = 0; i < 50; i++) {
      await poll(sim, sim.credentials, store);
      assert.equal(sim.openSessions(), 0, `${firmware} poll ${i}`);
    }
    assert.equal(sim.authEvents.filter((e) => e.event === "login_refused").length, 0);
    assert.equal(sim.authEvents.filter((e) => e.event === "login").length, 50);
    assert.equal(sim.authEvents.filter((e) => e.event === "logout").length, 50);
  }
});

Deno.test("a login beyond admin-login-max is refused as auth_failed", async () => {
  await using sim = await startSimulatedDevice({ sessionCap: 1 });
  // Someone else holds the only admin slot.
  await cycle(sim, sim.credentials, async (s) => {
    await s.collectAll();
    await assert.rejects(() => poll(sim, sim.credentials), (e: unknown) => {
      assert.ok(isStatus("auth_failed")(e));
      assert.match((e as Error).message, /admin-login-max/);
      return true;
    });
  });
  assert.equal(sim.openSessions(), 0);
  // The token needs no admin session, so it still works at the cap.
  sim.sessionCap = 0;
  assert.equal((await poll(sim, sim.tokenCredentials)).length, 7);
});

Deno.test("testConnection reports the CPU reading", async () => {
  await using sim = await startSimulatedDevice();
  sim.state.cpu = 23;
  for (
    const [creds, how] of [[sim.tokenCredentials, "API token"], [
      sim.sessionCredentials,
      "admin session",
    ]] as const
  ) {
    sim.sim.clearLog();
    const r = await cycle(sim, creds, (s) => s.testConnection());
    assert.equal(r.cpuPercent, 23);
    assert.match(
      r.cpuDetail,
      /^CPU 23% from GET \/api\/v2\/monitor\/system\/resource\/usage\?resource=cpu&scope=global/,
    );
    assert.match(r.cpuDetail, new RegExp(how));
    const cpuCall = sim.sim.requests.find((q) => q.path === "/api/v2/monitor/system/resource/usage")!;
    assert.equal(cpuCall.query.get("resource"), "cpu");
    assert.equal(cpuCall.query.get("scope"), "global");
  }
  assert.equal(sim.openSessions(), 0);
});

Deno.test("changing simulator state changes the stored payload of every label", async () => {
  await using sim = await startSimulatedDevice();
  const creds = sim.tokenCredentials;
  const before = Object.fromEntries((await poll(sim, creds)).map((s) => [s.label, s.payload]));
  sim.state.hostname = "fgt-lab-2";
  sim.state.cpu = 88;
  sim.state.ntp.type = "fortiguard";
  sim.state.ntp.ntpserver = [];
  sim.state.policies[0]!["ssl-ssh-profile"] = "deep-inspection";
  sim.state.ha.mode = "a-p";
  sim.state.ha["group-name"] = "lab-cluster";
  sim.state.interfaces.port3!.link = true;
  (sim.state.license.antivirus as Obj).status = "expired";
  const after = Object.fromEntries((await poll(sim, creds)).map((s) => [s.label, s.payload])) as Record<
    string,
    Obj
  >;
  for (const label of adapter.labels) assert.notDeepEqual(after[label], before[label], label);
  assert.equal((after.system_info!.results as Obj).hostname, "fgt-lab-2");
  assert.equal(((after.resource_usage!.results as Obj).cpu as Obj[])[0]!.current, 88);
  assert.deepEqual(ntpServers(after.ntp_config), ["fortiguard"]);
  assert.equal((after.ha_status!.results as Obj).mode, "a-p");
  // `vdom=*`: one envelope per VDOM, root only on this single-VDOM box.
  assert.equal((((after.interfaces as unknown as Obj[])[0]!.results as Obj).port3 as Obj).link, true);
  // Payloads are the device's envelopes, unchanged.
  assert.equal(after.system_info!.serial, sim.state.serial);
  assert.equal(after.system_info!.version, "v7.6.7");
  assert.deepEqual(Object.keys(after.decrypt_policy!), ["policies", "sslSshProfiles"]);
});

Deno.test("toggling deep inspection on a policy changes decrypt_policy and decryptRuleCount", async () => {
  await using sim = await startSimulatedDevice();
  const count = async () => decryptRuleCount(await payloadOf(sim, sim.sessionCredentials, "decrypt_policy"));
  assert.equal(await count(), 1, "lab-decrypt uses custom-deep-inspection");
  sim.state.policies[0]!["ssl-ssh-profile"] = "deep-inspection";
  assert.equal(await count(), 2);
  sim.state.policies[1]!.status = "disable";
  assert.equal(await count(), 1);
  sim.state.policies[0]!["ssl-ssh-profile"] = "certificate-inspection";
  assert.equal(await count(), 0, "decrypt off");
  // Editing the profile itself counts too.
  sim.state.policies[1]!.status = "enable";
  const custom = sim.state.sslSshProfiles.find((p) => p.name === "custom-deep-inspection")!;
  (custom.https as Obj).status = "certificate-inspection";
  assert.equal(await count(), 0);
  (custom.ssl as Obj)["inspect-all"] = "deep-inspection";
  assert.equal(await count(), 1);
  assert.equal(sim.openSessions(), 0);
});

Deno.test("a feature that is off is stored as the device says so, not as a failed poll", async () => {
  await using sim = await startSimulatedDevice();
  sim.state.ntp.ntpsync = "disable";
  sim.state.policies = [];
  const snaps = Object.fromEntries((await poll(sim, sim.tokenCredentials)).map((s) => [s.label, s.payload]));
  assert.equal((snaps.ha_status as { results: Obj }).results.mode, "standalone", "no HA: standalone");
  assert.deepEqual(ntpServers(snaps.ntp_config), []);
  assert.deepEqual((snaps.decrypt_policy as { policies: Obj[] }).policies[0]!.results, []);
  assert.equal(decryptRuleCount(snaps.decrypt_policy), 0);
});

Deno.test("decryptRuleCount counts enabled accept policies whose profile does deep inspection", () => {
  const env = (results: unknown) => ({ http_method: "GET", results, status: "success" });
  const payload = (policies: Obj[], profiles: Obj[]) => ({
    policies: env(policies),
    sslSshProfiles: env(profiles),
  });
  const profiles = [
    simSslSshProfile("certificate-inspection", "certificate-inspection"),
    simSslSshProfile("my-deep", "deep-inspection"),
    { ...simSslSshProfile("inspect-all", "disable"), ssl: { "inspect-all": "deep-inspection" } },
  ];
  assert.equal(
    decryptRuleCount(payload([
      simPolicy(1, "a", { "ssl-ssh-profile": "my-deep" }),
      simPolicy(2, "b", { "ssl-ssh-profile": "inspect-all" }),
      simPolicy(3, "deny", { "ssl-ssh-profile": "my-deep", action: "deny" }),
      simPolicy(4, "off", { "ssl-ssh-profile": "my-deep", status: "disable" }),
      simPolicy(5, "cert", { "ssl-ssh-profile": "certificate-inspection" }),
      simPolicy(6, "none", { "ssl-ssh-profile": "" }),
      // Built-in deep profiles count by name when the profile table does not list them.
      simPolicy(7, "builtin", { "ssl-ssh-profile": "deep-inspection" }),
    ], profiles)),
    3,
  );
  assert.equal(decryptRuleCount(payload([], profiles)), 0);
  assert.throws(() => decryptRuleCount({ results: [] }), /expected \{ policies, sslSshProfiles \}/);
  assert.throws(() => decryptRuleCount({ policies: env({}), sslSshProfiles: env([]) }), /not a table/);
  assert.throws(() => decryptRuleCount(null), Error);
});

Deno.test("ntpServers reads custom servers, treats FortiGuard sync as a source and ntpsync off as none", () => {
  const ntp = (results: Obj) => ({ http_method: "GET", results, status: "success" });
  const custom = ntp({
    ntpsync: "enable",
    type: "custom",
    ntpserver: [{ id: 1, server: "10.0.0.1" }, { id: 2, server: "" }],
  });
  assert.deepEqual(ntpServers(custom), ["10.0.0.1"]);
  assert.deepEqual(ntpServers(ntp({ ntpsync: "enable", type: "fortiguard", ntpserver: [] })), ["fortiguard"]);
  assert.deepEqual(
    ntpServers(ntp({ ntpsync: "disable", type: "custom", ntpserver: [{ id: 1, server: "x" }] })),
    [],
  );
  assert.throws(() => ntpServers({ results: [] }), /ntpsync/);
  assert.throws(() => ntpServers(ntp({ ntpsync: "enable", type: "custom", ntpserver: "x" })), /not a list/);
  assert.throws(() => ntpServers("nope"), /envelope/);
});

Deno.test("a 5xx answer gives http_error and a hanging device gives timeout", async () => {
  await using sim = await startSimulatedDevice();
  sim.sim.faults.status = 503;
  await assert.rejects(() => poll(sim, sim.tokenCredentials), (e: unknown) => {
    assert.ok(isStatus("http_error")(e));
    assert.match((e as Error).message, /GET \/api\/v2\/monitor\/system\/status\S* answered HTTP 503/);
    return true;
  });
  await assert.rejects(() => poll(sim, sim.sessionCredentials), isStatus("http_error"));
  sim.sim.faults.status = null;
  sim.sim.faults.hang = true;
  await assert.rejects(
    () => cycle(sim, sim.tokenCredentials, (s) => s.collectAll(), { timeoutMs: 300 }),
    isStatus("timeout"),
  );
  sim.sim.faults.hang = false;
});

Deno.test("an answer without the REST API v2 envelope gives protocol_error", async () => {
  await using sim = await startSimulatedDevice();
  sim.overrides.set(CALLS.ntp_config, () => Response.json([{ ntpsync: "enable" }]));
  await assert.rejects(() => poll(sim, sim.tokenCredentials), (e: unknown) => {
    assert.ok(isStatus("protocol_error")(e));
    assert.match(
      (e as Error).message,
      /GET \/api\/v2\/cmdb\/system\/ntp answered without a REST API v2 envelope/,
    );
    return true;
  });
  sim.overrides.set(CALLS.ntp_config, () => new Response("<html>maintenance</html>"));
  await assert.rejects(() => poll(sim, sim.sessionCredentials), isStatus("protocol_error"));
  assert.equal(sim.openSessions(), 0);
});
