import assert from "node:assert/strict";
import { type AdapterContext, type CollectedSnapshot, DeviceError } from "@dutlab/core";
import { connectTo, logger, pollOnce, releaseParked, runAdapterContract } from "@dutlab/core/testing";
import adapter, { LABELS } from "./mod.ts";
import { startSimulatedDevice, type VendorSim } from "./sim.ts";
import { newRegistry, TEST_DEVICE_ID } from "./_testing.ts";

const facts = adapter.facts;
const isStatus = (status: string) => (e: unknown) => e instanceof DeviceError && e.status === status;
const payloadOf = (snaps: CollectedSnapshot[], label: string) =>
  snaps.find((s) => s.label === label)!.payload;

async function pollAndRelease(device: VendorSim): Promise<CollectedSnapshot[]> {
  const sessions = newRegistry();
  const snaps = await pollOnce(adapter, device, sessions);
  await releaseParked(adapter, device, sessions);
  return snaps;
}

Deno.test("vendor-a-ngfw meets the adapter contract", (t) =>
  runAdapterContract(t, {
    adapter,
    start: () => startSimulatedDevice(),
    cases: ["firepyer-ftd-6.6", "ntp-two-objects", "ssl-default-action-decrypt", "deploy-long-history"].map((
      c,
    ) => new URL(`./testdata/${c}`, import.meta.url)),
  }));

Deno.test("collects 7 labels per poll with the documented payload keys", async () => {
  await using device = await startSimulatedDevice();
  const snaps = await pollAndRelease(device);
  assert.equal(snaps.length, 7);
  assert.deepEqual(snaps.map((s) => s.label), [...LABELS]);
  const deploy = payloadOf(snaps, "deploy_status") as Record<string, unknown>;
  assert.deepEqual(Object.keys(deploy), ["deployments", "pendingChanges"]);
  const decrypt = payloadOf(snaps, "decrypt_policy") as Record<string, unknown>;
  assert.deepEqual(Object.keys(decrypt), ["accessPolicies", "sslPolicies", "sslRules"]);
  const info = payloadOf(snaps, "system_info") as Record<string, unknown>;
  assert.equal(info.type, "systeminformation");
  assert.equal(device.openSessions(), 0);
});

Deno.test("the simulator listens on the port it is given", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  await using device = await startSimulatedDevice({ port });
  assert.equal(device.sim.port, port);
  assert.equal(device.sim.url, `https://127.0.0.1:${port}`);
  const snaps = await pollAndRelease(device);
  assert.equal(snaps.length, 7, "a poll through the given port works");
});

Deno.test("wrong credentials give auth_failed without the password in the message", async () => {
  await using device = await startSimulatedDevice();
  const bad = { username: "admin", password: "not-the-password-xyz" };
  await assert.rejects(() => pollOnce(adapter, device, newRegistry(), bad), (e: unknown) => {
    assert.ok(isStatus("auth_failed")(e));
    assert.ok(!(e as Error).message.includes(bad.password));
    assert.match((e as Error).message, /HTTP 400 from POST \/api\/fdm\/latest\/fdm\/token/);
    return true;
  });
  assert.equal(device.openSessions(), 0);
});

// The contract kit already runs 50 polls in a row; 20 more here keep the file fast.
Deno.test("polls reuse one parked token, never exceed one session and leave none open", async () => {
  await using device = await startSimulatedDevice();
  const sessions = newRegistry();
  let peak = 0;
  for (let i = 0; i < 20; i++) {
    await pollOnce(adapter, device, sessions);
    peak = Math.max(peak, device.openSessions());
  }
  assert.equal(peak, 1);
  assert.equal(device.counters.logins, 1, "one password login for 20 polls");
  await releaseParked(adapter, device, sessions);
  assert.equal(device.counters.revokes, 2, "refresh and access token revoked");
  assert.equal(device.openSessions(), 0);
});

Deno.test("an expired session is renewed transparently", async () => {
  await using device = await startSimulatedDevice();
  const sessions = newRegistry();
  await pollOnce(adapter, device, sessions);
  device.expireSessions();
  assert.equal(device.openSessions(), 0);
  const snaps = await pollOnce(adapter, device, sessions);
  assert.equal(snaps.length, 7);
  assert.equal(device.counters.rejectedRequests, 1, "one 401, then a new login and a retry");
  assert.equal(device.counters.logins, 2);
  assert.equal(device.openSessions(), 1);
  await releaseParked(adapter, device, sessions);
  assert.equal(device.openSessions(), 0);
});

Deno.test("a token near its expiry is refreshed instead of logging in again", async () => {
  await using device = await startSimulatedDevice();
  device.state.tokenLifetimeSeconds = 30; // below the adapter's 60 s margin: every poll refreshes
  const sessions = newRegistry();
  await pollOnce(adapter, device, sessions);
  await pollOnce(adapter, device, sessions);
  await pollOnce(adapter, device, sessions);
  assert.equal(device.counters.logins, 1);
  assert.equal(device.counters.refreshes, 2);
  assert.equal(device.openSessions(), 1);
  await releaseParked(adapter, device, sessions);
  assert.equal(device.openSessions(), 0);
});

Deno.test("a session expired by the cap (web UI logins) is replaced on the next poll", async () => {
  await using device = await startSimulatedDevice();
  const sessions = newRegistry();
  await pollOnce(adapter, device, sessions);
  device.simulateUiLogins(5); // the 6th session expires the oldest: ours
  assert.equal(device.openSessions(), 5);
  const snaps = await pollOnce(adapter, device, sessions);
  assert.equal(snaps.length, 7);
  assert.equal(device.openSessions(), 5, "never more than the cap");
  await releaseParked(adapter, device, sessions);
  assert.equal(device.openSessions(), 4, "our session is gone, the UI sessions stay");
});

Deno.test("testConnection reports the CPU reading from the trending report", async () => {
  await using device = await startSimulatedDevice();
  device.state.cpuPercent = 37.5;
  const sessions = newRegistry();
  await using conn = await connectTo(adapter, device.sim, { credentials: device.credentials, sessions });
  const r = await conn.session.testConnection();
  assert.equal(r.cpuPercent, 37.5);
  assert.match(
    r.cpuDetail,
    /CPU 37\.5% .*GET \/api\/fdm\/latest\/monitor\/trendingreports\/cpu\?time_duration=300/,
  );
  await conn.close();
  await releaseParked(adapter, device, sessions);
  assert.equal(device.openSessions(), 0);
});

Deno.test("changing the simulator state changes the stored payloads", async () => {
  await using device = await startSimulatedDevice();
  const sessions = newRegistry();
  const f = facts!;
  let snaps = await pollOnce(adapter, device, sessions);
  assert.deepEqual(f.deployState!(payloadOf(snaps, "deploy_status")), {
    state: "DEPLOYED",
    pendingChanges: 0,
  });
  assert.equal(f.decryptRuleCount!(payloadOf(snaps, "decrypt_policy")), 0);
  assert.deepEqual(f.ntpServers!(payloadOf(snaps, "ntp_config")), [
    "0.sourcefire.pool.ntp.org",
    "1.sourcefire.pool.ntp.org",
  ]);
  assert.deepEqual(f.haState!(payloadOf(snaps, "ha_status")), { raw: "SINGLE_NODE", mapped: "ACTIVE" });

  device.addPendingChange("accessrule", "lab-throughput-permit");
  device.deploy("DEPLOYING");
  device.setDecrypt(true);
  device.state.ntpServers = ["192.0.2.123"];
  Object.assign(device.state.ha, {
    nodeRole: "HA_SECONDARY",
    nodeState: "HA_STANDBY_NODE",
    peerNodeState: "HA_ACTIVE_NODE",
    configStatus: "IN_SYNC",
  });
  device.state.systemInfo.softwareVersion = "7.4.1-172";
  snaps = await pollOnce(adapter, device, sessions);
  assert.deepEqual(f.deployState!(payloadOf(snaps, "deploy_status")), {
    state: "DEPLOYING",
    pendingChanges: 1,
  });
  assert.equal(f.decryptRuleCount!(payloadOf(snaps, "decrypt_policy")), 1);
  assert.deepEqual(f.ntpServers!(payloadOf(snaps, "ntp_config")), ["192.0.2.123"]);
  assert.deepEqual(f.haState!(payloadOf(snaps, "ha_status")), {
    raw: "HA_STANDBY_NODE",
    mapped: "STANDBY_READY",
  });
  assert.equal((payloadOf(snaps, "system_info") as Record<string, unknown>).softwareVersion, "7.4.1-172");

  device.deploy("DEPLOYED");
  device.state.ntpEnabled = false;
  device.state.ha.nodeState = "HA_FAILED_NODE";
  snaps = await pollOnce(adapter, device, sessions);
  assert.deepEqual(f.deployState!(payloadOf(snaps, "deploy_status")), {
    state: "DEPLOYED",
    pendingChanges: 0,
  });
  assert.deepEqual(f.ntpServers!(payloadOf(snaps, "ntp_config")), []);
  assert.deepEqual(f.haState!(payloadOf(snaps, "ha_status")), { raw: "HA_FAILED_NODE", mapped: null });
  await releaseParked(adapter, device, sessions);
});

Deno.test("decrypt rules of an SSL policy detached from the access policy count as zero", async () => {
  await using device = await startSimulatedDevice();
  device.setDecrypt(true);
  device.state.accessPolicy.sslPolicy = null;
  const snaps = await pollAndRelease(device);
  assert.equal(facts!.decryptRuleCount!(payloadOf(snaps, "decrypt_policy")), 0);
});

Deno.test("a device without any SSL policy is stored as a payload saying so, not a failed poll", async () => {
  await using device = await startSimulatedDevice();
  device.state.sslPolicies = [];
  device.state.accessPolicy.sslPolicy = null;
  const snaps = await pollAndRelease(device);
  const decrypt = payloadOf(snaps, "decrypt_policy") as {
    sslPolicies: { items: unknown[] };
    sslRules: Record<string, unknown>;
  };
  assert.deepEqual(decrypt.sslPolicies.items, []);
  assert.deepEqual(decrypt.sslRules, {});
  assert.equal(facts!.decryptRuleCount!(decrypt), 0);
});

Deno.test("lists are paged by offset whatever address the device names itself by", async () => {
  await using device = await startSimulatedDevice();
  device.state.maxPageLimit = 5;
  device.state.advertisedHost = "192.0.2.10"; // paging.next points at the device's own address
  device.sim.clearLog();
  const snaps = await pollAndRelease(device);
  const ifaces = payloadOf(snaps, "interfaces") as {
    items: Array<{ hardwareName: string }>;
    paging: unknown;
  };
  assert.equal(ifaces.items.length, 13);
  assert.deepEqual(ifaces.items.map((i) => i.hardwareName).slice(0, 2), ["Management1/1", "Ethernet1/1"]);
  const offsets = device.sim.requests
    .filter((r) => r.path.endsWith("/devices/default/interfaces"))
    .map((r) => r.query.get("offset"));
  assert.deepEqual(offsets, ["0", "5", "10"]);
  assert.ok(device.sim.requests.every((r) => r.path.startsWith("/api/fdm/latest/")));
});

Deno.test("a 5xx answer gives http_error naming the method, path and status", async () => {
  await using device = await startSimulatedDevice();
  device.state.failPaths["/policy/sslpolicies"] = 500;
  const sessions = newRegistry();
  await assert.rejects(() => pollOnce(adapter, device, sessions), (e: unknown) => {
    assert.ok(isStatus("http_error")(e));
    assert.match((e as Error).message, /HTTP 500 from GET \/api\/fdm\/latest\/policy\/sslpolicies\?offset=0/);
    assert.match((e as Error).message, /Simulated failure/);
    return true;
  });
  device.sim.faults.status = 503;
  await assert.rejects(() => pollOnce(adapter, device, newRegistry()), isStatus("http_error"));
  device.sim.faults.status = null;
  await releaseParked(adapter, device, sessions);
  assert.equal(device.openSessions(), 0, "the failed poll parked its session; release logs it out");
});

Deno.test("403 on a data call gives auth_failed (the API user lacks permission)", async () => {
  await using device = await startSimulatedDevice();
  device.state.failPaths["/devices/default/operational/ha/status/default"] = 403;
  const sessions = newRegistry();
  await assert.rejects(() => pollOnce(adapter, device, sessions), (e: unknown) => {
    assert.ok(isStatus("auth_failed")(e));
    assert.match((e as Error).message, /lacks permission: HTTP 403 from GET/);
    return true;
  });
  await releaseParked(adapter, device, sessions);
  assert.equal(device.openSessions(), 0);
});

Deno.test("a hung device gives timeout", async () => {
  await using device = await startSimulatedDevice();
  await using conn = await connectTo(adapter, device.sim, { credentials: device.credentials });
  const ctx: AdapterContext = {
    device: {
      id: TEST_DEVICE_ID,
      hostname: "sim-device",
      vendor: adapter.vendorKey,
      deviceRole: "ngfw",
      baseUrl: device.sim.url,
      username: device.credentials.username,
      tlsVerifyMode: "insecure",
    },
    credentials: device.credentials,
    http: {
      request: (r) => conn.transport.request({ ...r, timeoutMs: 300 }),
      cookies: conn.transport.cookies,
    },
    sessions: newRegistry().scope(TEST_DEVICE_ID, "k"),
    log: logger("test"),
    signal: new AbortController().signal,
  };
  device.sim.faults.hang = true;
  await assert.rejects(() => adapter.create(ctx).collectAll(), isStatus("timeout"));
  device.sim.faults.hang = false;
});

Deno.test("facts read deploy, decrypt, NTP and HA payloads", () => {
  const f = facts!;
  const list = (items: unknown[]) => ({ items, paging: { prev: [], next: [], limit: 100, offset: 0 } });
  const job = (state: string, queuedTime: number) => ({
    state,
    queuedTime,
    startTime: queuedTime + 1,
    endTime: -1,
  });
  assert.deepEqual(
    f.deployState!({
      deployments: list([job("DEPLOYED", 5), job("DEPLOY_FAILED", 9)]),
      pendingChanges: list([{}]),
    }),
    { state: "DEPLOY_FAILED", pendingChanges: 1 },
  );
  assert.deepEqual(f.deployState!({ deployments: list([]), pendingChanges: list([]) }), {
    state: "NO_DEPLOYMENT",
    pendingChanges: 0,
  });
  const attached = {
    accessPolicies: list([{ id: "ap", sslPolicy: { id: "sp", type: "sslpolicy" } }]),
    sslPolicies: list([{ id: "sp" }, { id: "other" }]),
    sslRules: {
      sp: list([{ ruleAction: "DECRYPT_RE_SIGN" }, { ruleAction: "DECRYPT_KNOWN_KEY" }, {
        ruleAction: "BLOCK",
      }]),
      other: list([{ ruleAction: "DECRYPT_RE_SIGN" }]),
    },
  };
  assert.equal(f.decryptRuleCount!(attached), 2);
  assert.deepEqual(
    f.ntpServers!(list([{ ntpServers: [" a.example ", "b.example", "a.example"], enabled: true }])),
    [
      "a.example",
      "b.example",
    ],
  );
  const map = (nodeState: string) => f.haState!({ nodeState }).mapped;
  assert.equal(map("HA_ACTIVE_NODE"), "ACTIVE");
  assert.equal(map("SINGLE_NODE"), "ACTIVE");
  assert.equal(map("HA_STANDBY_NODE"), "STANDBY_READY");
  assert.equal(map("HA_NEGOTIATING_NODE"), "NEGOTIATION");
  assert.equal(map("HA_CONFIGURATION_SYNC"), "NEGOTIATION");
  for (
    const s of ["HA_FAILED_NODE", "HA_SUSPENDED_NODE", "HA_DISABLED_NODE", "HA_UNKNOWN_NODE", "NEW_STATE"]
  ) {
    assert.equal(map(s), null, s);
  }
});

Deno.test("facts throw on a payload of the wrong shape", () => {
  const f = facts!;
  for (const bad of [null, 42, "DEPLOYED", [], {}, { deployments: [], pendingChanges: [] }]) {
    assert.throws(() => f.deployState!(bad));
  }
  assert.throws(() => f.deployState!({ deployments: { items: [{}] }, pendingChanges: { items: [] } }));
  for (const bad of [null, {}, { accessPolicies: { items: [] } }, { items: [] }]) {
    assert.throws(() => f.decryptRuleCount!(bad));
  }
  assert.throws(() =>
    f.decryptRuleCount!({
      accessPolicies: { items: [{ sslPolicy: { id: "missing" } }] },
      sslPolicies: { items: [] },
      sslRules: {},
    })
  );
  for (const bad of [null, {}, { items: [{ servers: [] }] }, { items: [{ ntpServers: [1] }] }]) {
    assert.throws(() => f.ntpServers!(bad));
  }
  for (const bad of [null, {}, { nodeState: 3 }, { items: [] }]) {
    assert.throws(() => f.haState!(bad));
  }
});
