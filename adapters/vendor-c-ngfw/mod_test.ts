import assert from "node:assert/strict";
import { DeviceError, SessionRegistry } from "@dutlab/core";
import { connectTo, runAdapterContract } from "@dutlab/core/testing";
import adapter, { API_PATH, CALLS, cpuPercent, KEY_USERNAME } from "./mod.ts";
import { labControls, startSimulatedDevice, type VendorSim } from "./sim.ts";

type Creds = { username: string; password: string };
const CASES = ["upgrade-assurance-pa7050", "suzieq-pavm-8.0", "multi-vsys-decrypt"];

const poll = async (sim: VendorSim, credentials: Creds, sessions = new SessionRegistry()) => {
  await using conn = await connectTo(adapter, sim.sim, { credentials, sessions });
  return await conn.session.collectAll();
};
const payloadOf = async (sim: VendorSim, label: string) =>
  (await poll(sim, sim.credentials)).find((s) => s.label === label)!.payload;
/** Fails unless `fn` rejects with a DeviceError of `status` whose message holds none of `secrets`. */
async function rejectsWith(fn: () => Promise<unknown>, status: string, secrets: string[], pattern?: RegExp) {
  await assert.rejects(fn, (e: unknown) => {
    assert.ok(e instanceof DeviceError, String(e));
    assert.equal(e.status, status, e.message);
    for (const s of secrets) assert.ok(!e.message.includes(s), `secret in "${e.message}"`);
    if (pattern) assert.match(e.message, pattern);
    return true;
  });
}

Deno.test("vendor-c-ngfw meets the adapter contract (password: key from type=keygen)", (t) =>
  runAdapterContract(t, {
    adapter,
    start: () => startSimulatedDevice(),
    cases: CASES.map((c) => ({
      folder: new URL(`./testdata/${c}`, import.meta.url),
      credentials: { username: KEY_USERNAME, password: "LUFRPTreplayKey0123456789==" },
    })),
  }));

Deno.test("vendor-c-ngfw meets the adapter contract with an API key (user name apikey)", (t) =>
  runAdapterContract(t, { adapter, start: () => startSimulatedDevice({ username: KEY_USERNAME }) }));

Deno.test("a poll stores 9 snapshots from 11 XML API calls, the key in X-PAN-KEY and never in a URL", async () => {
  await using sim = await startSimulatedDevice();
  assert.equal(adapter.labels.length, 9);
  const snaps = await poll(sim, sim.passwordCredentials);
  assert.deepEqual(snaps.map((s) => s.label), [...adapter.labels]);
  const [keygen, ...data] = sim.sim.requests;
  assert.equal(keygen!.method, "POST");
  assert.equal(keygen!.path, API_PATH);
  assert.equal([...keygen!.query.keys()].length, 0, "nothing in the keygen URL");
  const form = new URLSearchParams(keygen!.body);
  assert.deepEqual([form.get("type"), form.get("user")], ["keygen", "admin"]);
  assert.equal(form.get("password"), sim.passwordCredentials.password);
  assert.equal(data.length, 11);
  const key = sim.validKeys()[1]!;
  for (const r of data) {
    assert.equal(r.method, "GET");
    assert.equal(r.headers.get("x-pan-key"), key);
    assert.equal(r.query.get("key"), null);
    const url = `${r.path}?${r.query}`;
    assert.ok(!url.includes(key) && !url.includes(sim.passwordCredentials.password), url);
  }
  const envelope = snaps[0]!.payload as { response: Record<string, unknown> };
  assert.equal(envelope.response["@status"], "success", "the envelope's status attribute is kept");
  assert.deepEqual(
    data.map((r) => r.query.get("cmd") ?? r.query.get("xpath")),
    [
      CALLS.system_info.cmd,
      CALLS.resource_usage.cmd,
      CALLS.ntp_config.status.cmd,
      CALLS.ntp_config.servers.xpath,
      CALLS.decrypt_policy.xpath,
      CALLS.access_rules.xpath,
      CALLS.ha_status.cmd,
      CALLS.deploy_status.pending.cmd,
      CALLS.deploy_status.jobs.cmd,
      CALLS.interfaces.cmd,
      CALLS.license_status.cmd,
    ],
  );
});

Deno.test("the generated key is parked and reused: one keygen for many polls (a keygen ends the admin's sessions)", async () => {
  await using sim = await startSimulatedDevice();
  const sessions = new SessionRegistry();
  for (let i = 0; i < 3; i++) await poll(sim, sim.passwordCredentials, sessions);
  assert.deepEqual(sim.keyEvents.map((e) => e.event), ["keygen"]);
  // The key expires on the device: the next poll is refused once, generates a new key and completes.
  sim.expireSessions();
  const snaps = await poll(sim, sim.passwordCredentials, sessions);
  assert.equal(snaps.length, 9);
  assert.deepEqual(sim.keyEvents.map((e) => e.event), ["keygen", "key_refused", "keygen"]);
});

Deno.test("an apikey registration never calls keygen", async () => {
  await using sim = await startSimulatedDevice({ username: KEY_USERNAME });
  await poll(sim, sim.keyCredentials);
  assert.ok(sim.sim.requests.every((r) => r.query.get("type") !== "keygen" && r.method === "GET"));
  assert.ok(sim.sim.requests.every((r) => r.headers.get("x-pan-key") === sim.keyCredentials.password));
});

Deno.test("a refused key or password gives auth_failed without the secret in the message", async () => {
  await using sim = await startSimulatedDevice();
  const badKey = { username: KEY_USERNAME, password: "LUFRPTwrongKeyWrongKey0000==" };
  await rejectsWith(() => poll(sim, badKey), "auth_failed", [badKey.password], /code 403|HTTP 403/);
  const badPassword = { username: "admin", password: "not-the-Password-7" };
  await rejectsWith(() => poll(sim, badPassword), "auth_failed", [badPassword.password], /type=keygen/);
  await rejectsWith(
    async () => {
      await using conn = await connectTo(adapter, sim.sim, { credentials: badKey });
      await conn.session.testConnection();
    },
    "auth_failed",
    [badKey.password],
  );
});

Deno.test("an HTML page, a truncated XML body, an error envelope and a 5xx each give their documented status", async () => {
  await using sim = await startSimulatedDevice({ username: KEY_USERNAME });
  const key = sim.keyCredentials.password;
  const cmd = CALLS.ha_status.cmd;
  sim.overrides.set(
    cmd,
    () =>
      new Response("<!DOCTYPE html><html><body>Login</body></html>", {
        headers: { "content-type": "text/html" },
      }),
  );
  await rejectsWith(() => poll(sim, sim.keyCredentials), "protocol_error", [key], /HTML page/);
  sim.overrides.set(
    cmd,
    () =>
      new Response('<response status="success"><result><enabled>yes</enabled><group><local-info><sta', {
        headers: { "content-type": "application/xml" },
      }),
  );
  await rejectsWith(() => poll(sim, sim.keyCredentials), "protocol_error", [key], /not well-formed/);
  sim.overrides.set(cmd, () =>
    new Response(
      `<response status="error" code="17"><msg><line>show -> high-availability is unexpected (key ${key})</line></msg></response>`,
    ));
  await rejectsWith(() => poll(sim, sim.keyCredentials), "protocol_error", [key], /code 17/);
  sim.overrides.set(cmd, () => new Response("", { status: 503 }));
  await rejectsWith(() => poll(sim, sim.keyCredentials), "http_error", [key], /HTTP 503/);
  sim.overrides.set(
    cmd,
    () => new Response('<response status="error" code="403"><msg>expired</msg></response>'),
  );
  await rejectsWith(() => poll(sim, sim.keyCredentials), "auth_failed", [key]);
  sim.overrides.set(
    cmd,
    () => new Response('<response status="error" code="22"><msg>Session timed out</msg></response>'),
  );
  await rejectsWith(() => poll(sim, sim.keyCredentials), "auth_failed", [key], /code 22/);
});

Deno.test("testConnection reads the management CPU from show system resources", async () => {
  await using sim = await startSimulatedDevice();
  sim.state.cpuIdle = 87.5;
  await using conn = await connectTo(adapter, sim.sim, { credentials: sim.credentials });
  const r = await conn.session.testConnection();
  assert.equal(r.cpuPercent, 12.5);
  assert.match(r.cpuDetail, /^CPU 12\.5% from show system resources \(key from type=keygen\)$/);
  assert.equal(cpuPercent({ response: { result: "no top here" } }), null);
});

Deno.test("lab controls change what the facts read: decrypt, deploy, ha, ntp", async () => {
  await using sim = await startSimulatedDevice();
  const lab = labControls(sim);
  const { decryptRuleCount, deployState, haState, ntpServers } = adapter.facts;
  assert.equal(decryptRuleCount(await payloadOf(sim, "decrypt_policy")), 0);
  await lab.start?.();
  assert.equal(decryptRuleCount(await payloadOf(sim, "decrypt_policy")), 1);
  await lab.settings.decrypt!.apply("off");
  assert.equal(decryptRuleCount(await payloadOf(sim, "decrypt_policy")), 0);

  assert.deepEqual(deployState(await payloadOf(sim, "deploy_status")), {
    state: "DEPLOYED",
    pendingChanges: 0,
  });
  await lab.settings.deploy!.apply("pending");
  assert.deepEqual(deployState(await payloadOf(sim, "deploy_status")), {
    state: "DEPLOYED",
    pendingChanges: 1,
  });
  await lab.settings.deploy!.apply("failed");
  assert.deepEqual(deployState(await payloadOf(sim, "deploy_status")), {
    state: "DEPLOY_FAILED",
    pendingChanges: 0,
  });
  await lab.settings.deploy!.apply("ok");
  assert.equal(deployState(await payloadOf(sim, "deploy_status")).state, "DEPLOYED");

  assert.deepEqual(haState(await payloadOf(sim, "ha_status")), { raw: "standalone", mapped: "ACTIVE" });
  for (
    const [v, raw, mapped] of [
      ["standby", "passive", "STANDBY_READY"],
      ["failed", "non-functional", null],
      ["initial", "initial", "NEGOTIATION"],
      ["suspended", "suspended", null],
      ["active", "active", "ACTIVE"],
    ] as const
  ) {
    await lab.settings.ha!.apply(v);
    assert.deepEqual(haState(await payloadOf(sim, "ha_status")), { raw, mapped }, v);
  }

  assert.deepEqual(ntpServers(await payloadOf(sim, "ntp_config")), ["0.pool.ntp.org", "1.pool.ntp.org"]);
  await lab.settings.ntp!.apply("off");
  assert.deepEqual(ntpServers(await payloadOf(sim, "ntp_config")), []);
  await lab.settings.ntp!.apply("on");
  assert.equal(ntpServers(await payloadOf(sim, "ntp_config")).length, 2);
  for (const [k, c] of Object.entries(lab.settings)) assert.ok(c.values.length > 1, k);
});
