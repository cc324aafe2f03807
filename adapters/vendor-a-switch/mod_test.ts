// deno-lint-ignore-file no-explicit-any -- the tests dig into DME payloads by class name
import assert from "node:assert/strict";
import { type AdapterSession, DeviceError, type SessionStore } from "@dutlab/core";
import { connectTo, logger, runAdapterContract } from "@dutlab/core/testing";
import adapter from "./mod.ts";
import { startSimulatedDevice, type VendorSim } from "./sim.ts";
import { type ParkedLogin, PATHS } from "./_session.ts";

Deno.test("vendor-a-switch meets the adapter contract", (t) =>
  runAdapterContract(t, {
    adapter,
    start: () => startSimulatedDevice(),
    cases: [new URL("./testdata/ntp-admin-disabled", import.meta.url)],
  }));

/**
 * Parking between cycles as core's SessionRegistry does it (TTL included). Core exports no registry to
 * module tests outside its contract kit, so the vendor tests keep their own.
 */
class MemoryStore implements SessionStore {
  value: unknown;
  expiresAt = 0;
  get<T>(): T | undefined {
    return this.expiresAt > Date.now() ? this.value as T : undefined;
  }
  set<T>(value: T, ttlMs: number): void {
    this.value = value;
    this.expiresAt = Date.now() + ttlMs;
  }
  clear(): void {
    this.value = undefined;
    this.expiresAt = 0;
  }
}

/** One cycle over core's transport (connectTo), with our store and optionally a short request timeout. */
async function cycle<T>(
  device: VendorSim,
  store: SessionStore,
  fn: (s: AdapterSession) => Promise<T>,
  opts: { credentials?: { username: string; password: string }; timeoutMs?: number } = {},
): Promise<T> {
  const credentials = opts.credentials ?? device.credentials;
  await using conn = await connectTo(adapter, device.sim, { credentials });
  const http = {
    cookies: conn.transport.cookies,
    request: (r: Parameters<typeof conn.transport.request>[0]) =>
      conn.transport.request(opts.timeoutMs ? { ...r, timeoutMs: opts.timeoutMs } : r),
  };
  const session = adapter.create({
    device: {
      id: "00000000-0000-4000-8000-0000000000aa",
      hostname: "sim-switch",
      vendor: adapter.vendorKey,
      deviceRole: "switch",
      baseUrl: device.sim.url,
      username: credentials.username,
      tlsVerifyMode: "insecure",
    },
    credentials,
    http,
    sessions: store,
    log: logger("test"),
    signal: new AbortController().signal,
  });
  try {
    return await fn(session);
  } finally {
    await session.close();
  }
}

const poll = (device: VendorSim, store: SessionStore) => cycle(device, store, (s) => s.collectAll());

async function release(device: VendorSim, store: MemoryStore) {
  const parked = store.get();
  store.clear();
  if (parked === undefined) return;
  await using conn = await connectTo(adapter, device.sim, { credentials: device.credentials });
  const { credentials: _c, ...ctx } = {
    device: {
      id: "x",
      hostname: "sim-switch",
      vendor: adapter.vendorKey,
      deviceRole: "switch",
      baseUrl: device.sim.url,
      username: device.credentials.username,
      tlsVerifyMode: "insecure" as const,
    },
    credentials: undefined,
    http: conn.transport,
    sessions: new MemoryStore(),
    log: logger("test"),
    signal: new AbortController().signal,
  };
  await adapter.release!(ctx, parked);
}

const payloadOf = (snaps: { label: string; payload: unknown }[], label: string) =>
  snaps.find((s) => s.label === label)!.payload as Record<string, unknown>;
const count = (device: VendorSim, path: string) => device.sim.requests.filter((r) => r.path === path).length;
const isStatus = (status: string, re?: RegExp) => (e: unknown) => {
  assert.ok(e instanceof DeviceError, `expected a DeviceError, got ${e}`);
  assert.equal(e.status, status, e.message);
  if (re) assert.match(e.message, re);
  return true;
};

Deno.test("collectAll returns the six labels with the switch's DME answers", async () => {
  await using device = await startSimulatedDevice();
  const store = new MemoryStore();
  const snaps = await poll(device, store);
  assert.deepEqual(snaps.map((s) => s.label), [
    "system_info",
    "ntp_config",
    "cpu_usage",
    "memory",
    "interfaces",
    "vpc_status",
  ]);
  const sys = payloadOf(snaps, "system_info") as Record<string, { imdata: Record<string, any>[] }>;
  assert.equal(sys.topSystem!.imdata[0]!.topSystem.attributes.name, "lab-n9k-01");
  assert.equal(sys.topSystem!.imdata[0]!.topSystem.attributes.dn, "sys");
  assert.equal(sys.showVersion!.imdata[0]!.sysmgrShowVersion.attributes.nxosVersion, "10.3(4a)");
  const ntp = payloadOf(snaps, "ntp_config") as { totalCount: string; imdata: Record<string, any>[] };
  assert.equal(ntp.totalCount, "1");
  assert.equal(ntp.imdata[0]!.datetimeClkPol.attributes.dn, "sys/time");
  assert.equal(
    ntp.imdata[0]!.datetimeClkPol.children[0].datetimeNtpProvider.attributes.rn,
    "prov-[10.10.0.11]",
  );
  const ifs = payloadOf(snaps, "interfaces") as { imdata: Record<string, any>[] };
  assert.equal(ifs.imdata[0]!.l1PhysIf.attributes.dn, "sys/intf/phys-[eth1/1]");
  assert.equal(ifs.imdata[0]!.l1PhysIf.children[0].ethpmPhysIf.attributes.operSt, "up");
  const vpc = payloadOf(snaps, "vpc_status") as {
    configured: boolean;
    vpcDom: { imdata: Record<string, any>[] };
  };
  assert.equal(vpc.configured, true);
  assert.equal(vpc.vpcDom.imdata[0]!.vpcDom.attributes.id, "10");
  await release(device, store);
  assert.equal(device.openSessions(), 0);
});

Deno.test("login posts aaaUser and data calls send the APIC-cookie token", async () => {
  await using device = await startSimulatedDevice();
  const store = new MemoryStore();
  await poll(device, store);
  const login = device.sim.requests.find((r) => r.path === PATHS.login)!;
  assert.equal(login.method, "POST");
  assert.deepEqual(JSON.parse(login.body), {
    aaaUser: { attributes: { name: "admin", pwd: device.credentials.password } },
  });
  const data = device.sim.requests.filter((r) => r.path !== PATHS.login);
  assert.ok(data.length >= 7);
  const token = (store.get() as ParkedLogin).token;
  for (const r of data) assert.equal(r.headers.get("cookie"), `APIC-cookie=${token}`);
  await release(device, store);
  const logout = device.sim.requests.find((r) => r.path === PATHS.logout)!;
  assert.deepEqual(JSON.parse(logout.body), { aaaUser: { attributes: { name: "admin" } } });
  assert.equal(device.openSessions(), 0);
});

Deno.test("wrong credentials give auth_failed without echoing the password", async () => {
  await using device = await startSimulatedDevice();
  const bad = { username: "admin", password: "not-the-password-42" };
  await assert.rejects(
    () => cycle(device, new MemoryStore(), (s) => s.collectAll(), { credentials: bad }),
    (e: unknown) => {
      isStatus("auth_failed", /HTTP 401 .*Authentication failure\./)(e);
      assert.doesNotMatch((e as Error).message, /not-the-password-42/);
      return true;
    },
  );
  assert.equal(device.openSessions(), 0);
});

Deno.test("a parked token is reused by the next poll without logging in again", async () => {
  await using device = await startSimulatedDevice();
  const store = new MemoryStore();
  await poll(device, store);
  await poll(device, store);
  await poll(device, store);
  assert.equal(count(device, PATHS.login), 1);
  assert.equal(device.openSessions(), 1);
  await release(device, store);
  assert.equal(device.openSessions(), 0);
});

Deno.test("an expired session is renewed transparently with one new login", async () => {
  await using device = await startSimulatedDevice();
  const store = new MemoryStore();
  await poll(device, store);
  device.expireSessions();
  const snaps = await poll(device, store);
  assert.equal(snaps.length, 6);
  assert.equal(count(device, PATHS.login), 2);
  assert.equal(device.openSessions(), 1);
  await release(device, store);
  assert.equal(device.openSessions(), 0);
});

Deno.test("a parked token past half its lifetime is refreshed with aaaRefresh", async () => {
  await using device = await startSimulatedDevice();
  const store = new MemoryStore();
  await poll(device, store);
  const parked = store.get() as ParkedLogin;
  assert.equal(parked.lifetimeMs, 600_000, "lifetime read from refreshTimeoutSeconds");
  store.set({ ...parked, refreshedAt: Date.now() - 400_000 }, 60_000);
  await poll(device, store);
  assert.equal(count(device, PATHS.refresh), 1);
  assert.equal(count(device, PATHS.login), 1);
  const renewed = store.get() as ParkedLogin;
  assert.notEqual(renewed.token, parked.token);
  assert.ok(Date.now() - renewed.refreshedAt < 60_000);
  assert.equal(device.openSessions(), 1);
  await release(device, store);
  assert.equal(device.openSessions(), 0);
});

Deno.test("a token near the end of its life is logged out and replaced", async () => {
  await using device = await startSimulatedDevice();
  const store = new MemoryStore();
  await poll(device, store);
  const parked = store.get() as ParkedLogin;
  store.set({ ...parked, refreshedAt: Date.now() - 590_000 }, 60_000);
  await poll(device, store);
  assert.equal(count(device, PATHS.logout), 1);
  assert.equal(count(device, PATHS.login), 2);
  assert.equal(device.openSessions(), 1);
  await release(device, store);
  assert.equal(device.openSessions(), 0);
});

Deno.test("50 polls in a row never exceed the session cap and leave no session open", async () => {
  await using device = await startSimulatedDevice({ sessionCap: 2 });
  const store = new MemoryStore();
  for (let i = 0; i < 50; i++) {
    await poll(device, store);
    if (i % 10 === 9) device.expireSessions();
  }
  assert.ok(device.peakSessions() <= 1, `peak ${device.peakSessions()}`);
  assert.ok(device.peakSessions() <= device.sessionCap);
  await release(device, store);
  assert.equal(device.openSessions(), 0);
});

Deno.test("the switch refuses logins beyond its session cap and the adapter reports http_error", async () => {
  await using device = await startSimulatedDevice({ sessionCap: 1 });
  const first = new MemoryStore();
  await poll(device, first);
  await assert.rejects(
    () => poll(device, new MemoryStore()),
    isStatus("http_error", /HTTP 503.*Maximum number/),
  );
  await release(device, first);
  assert.equal(device.openSessions(), 0);
});

Deno.test("testConnection reports CPU as 100 minus procSysCpuSummary idle", async () => {
  await using device = await startSimulatedDevice();
  device.state.cpu = { idle: 87.5, user: 9.5, kernel: 3 };
  const store = new MemoryStore();
  const r = await cycle(device, store, (s) => s.testConnection());
  assert.equal(r.cpuPercent, 12.5);
  assert.match(r.cpuDetail, /CPU 12\.5% .*GET \/api\/class\/procSysCpuSummary\.json/);
  assert.equal(count(device, PATHS.cpu), 1);
  await release(device, store);
  assert.equal(device.openSessions(), 0);
});

Deno.test("changing the switch state changes every stored payload", async () => {
  await using device = await startSimulatedDevice();
  const store = new MemoryStore();
  const before = await poll(device, store);
  device.state.hostname = "lab-n9k-02";
  device.state.ntpProviders.push({
    name: "ntp.lab.example",
    vrf: "default",
    provT: "peer",
    preferred: false,
  });
  device.state.cpu = { idle: 40, user: 45, kernel: 15 };
  device.state.memory = { total: 24500560, used: 20000000, free: 4500560 };
  device.state.interfaces[2]!.operSt = "up";
  device.state.vpc!.peerSt = "peer-link-down";
  const after = await poll(device, store);
  for (const label of adapter.labels) {
    assert.notDeepEqual(payloadOf(after, label), payloadOf(before, label), `${label} changed`);
  }
  const sys = payloadOf(after, "system_info") as Record<string, { imdata: Record<string, any>[] }>;
  assert.equal(sys.topSystem!.imdata[0]!.topSystem.attributes.name, "lab-n9k-02");
  assert.deepEqual(adapter.facts.ntpServers(payloadOf(after, "ntp_config")), [
    "10.10.0.11",
    "10.10.0.12",
    "ntp.lab.example",
  ]);
  const cpu = payloadOf(after, "cpu_usage") as { imdata: Record<string, any>[] };
  assert.equal(cpu.imdata[0]!.procSysCpuSummary.attributes.idle, "40.00");
  const mem = payloadOf(after, "memory") as { imdata: Record<string, any>[] };
  assert.equal(mem.imdata[0]!.procSysMem.attributes.used, "20000000");
  const ifs = payloadOf(after, "interfaces") as { imdata: Record<string, any>[] };
  assert.equal(ifs.imdata[2]!.l1PhysIf.children[0].ethpmPhysIf.attributes.operSt, "up");
  await release(device, store);
});

Deno.test("removing all NTP providers yields an ntp_config payload with none", async () => {
  await using device = await startSimulatedDevice();
  device.state.ntpProviders = [];
  const store = new MemoryStore();
  const ntp = payloadOf(await poll(device, store), "ntp_config") as { imdata: Record<string, any>[] };
  assert.equal(ntp.imdata[0]!.datetimeClkPol.attributes.dn, "sys/time");
  assert.equal(ntp.imdata[0]!.datetimeClkPol.children, undefined);
  assert.deepEqual(adapter.facts.ntpServers(ntp), []);
  await release(device, store);
});

Deno.test("a switch without vPC is stored as a vpc_status payload saying not configured", async () => {
  await using device = await startSimulatedDevice();
  device.state.vpc = null;
  const store = new MemoryStore();
  const snaps = await poll(device, store);
  assert.equal(snaps.length, 6);
  assert.deepEqual(payloadOf(snaps, "vpc_status"), {
    configured: false,
    vpcDom: { totalCount: "0", imdata: [] },
  });
  await release(device, store);
});

Deno.test("ntpServers reads provider names and throws on a payload of the wrong shape", () => {
  const { ntpServers } = adapter.facts;
  const pol = (children?: unknown[]) => ({
    totalCount: "1",
    imdata: [{ datetimeClkPol: { attributes: { dn: "sys/time", adminSt: "enabled" }, children } }],
  });
  assert.deepEqual(
    ntpServers(pol([
      { datetimeNtpProvider: { attributes: { name: "192.0.2.1", rn: "prov-[192.0.2.1]", provT: "server" } } },
      { datetimeNtpAuth: { attributes: { id: "1" } } },
      { datetimeNtpProvider: { attributes: { name: "192.0.2.2", rn: "prov-[192.0.2.2]", provT: "peer" } } },
    ])),
    ["192.0.2.1", "192.0.2.2"],
  );
  assert.deepEqual(ntpServers(pol()), []);
  assert.deepEqual(ntpServers({ totalCount: "0", imdata: [] }), []);
  for (
    const bad of [
      null,
      "x",
      {},
      { imdata: "x" },
      { imdata: [{ topSystem: { attributes: {} } }] },
      { imdata: [{ datetimeClkPol: { children: [] } }] },
      pol("x" as unknown as unknown[]),
      pol([{ datetimeNtpProvider: { attributes: { vrf: "management" } } }]),
    ]
  ) {
    assert.throws(() => ntpServers(bad), Error, JSON.stringify(bad));
  }
});

Deno.test("a 5xx answer gives http_error naming method, path and status", async () => {
  await using device = await startSimulatedDevice();
  const store = new MemoryStore();
  await poll(device, store);
  device.sim.faults.status = 503;
  await assert.rejects(
    () => poll(device, store),
    isStatus("http_error", /GET \/api\/mo\/sys\.json returned HTTP 503/),
  );
  device.sim.faults.status = null;
  await poll(device, store);
  assert.equal(count(device, PATHS.login), 1, "the parked token survives a 5xx");
  await release(device, store);
  assert.equal(device.openSessions(), 0);
});

Deno.test("a hanging switch gives timeout", async () => {
  await using device = await startSimulatedDevice();
  device.sim.faults.hang = true;
  await assert.rejects(
    () => cycle(device, new MemoryStore(), (s) => s.collectAll(), { timeoutMs: 300 }),
    isStatus("timeout", /NX-API HTTPS feature is enabled on port 443 in the management VRF/),
  );
  device.sim.faults.hang = false;
});

Deno.test("a switch without the NX-API feature fails testConnection with the prerequisite", async () => {
  await using device = await startSimulatedDevice();
  device.state.nxapiEnabled = false;
  await assert.rejects(
    () => cycle(device, new MemoryStore(), (s) => s.testConnection()),
    isStatus("http_error", /HTTP 404.*NX-API HTTPS feature is enabled on port 443 in the management VRF/),
  );
  const port = device.sim.port;
  await device.close();
  await assert.rejects(
    async () => {
      await using conn = await connectTo(adapter, { url: `https://127.0.0.1:${port}` }, {
        credentials: device.credentials,
      });
      await conn.session.testConnection();
    },
    isStatus("unreachable", /feature nxapi; nxapi https port 443; nxapi use-vrf management/),
  );
});

Deno.test("a user without read permission gets auth_failed and leaves at most one session", async () => {
  await using device = await startSimulatedDevice();
  device.state.readDenied = true;
  const store = new MemoryStore();
  await assert.rejects(() => poll(device, store), isStatus("auth_failed", /HTTP 403 after a fresh login/));
  assert.equal(count(device, PATHS.login), 2, "re-authenticated once");
  assert.equal(device.openSessions(), 1);
  await release(device, store);
  assert.equal(device.openSessions(), 0);
});

Deno.test("the simulator answers like NX-API REST without a token and for unknown DNs and classes", async () => {
  await using device = await startSimulatedDevice();
  await using conn = await connectTo(adapter, device.sim, { credentials: device.credentials });
  const noCookie = await conn.transport.request({ path: PATHS.topSystem });
  assert.equal(noCookie.status, 403);
  assert.match(noCookie.text, /"code":"403"/);
  const bad = await conn.transport.request({
    path: PATHS.topSystem,
    headers: { cookie: "APIC-cookie=nope" },
  });
  assert.equal(bad.status, 403);
  assert.match(bad.text, /Token was invalid/);
  const login = await conn.transport.request({
    method: "POST",
    path: PATHS.login,
    json: { aaaUser: { attributes: { name: "admin", pwd: device.credentials.password } } },
  });
  assert.match(login.setCookies[0]!, /^APIC-cookie=[^;]+; path=\/; HttpOnly$/);
  const token = (login.json() as { imdata: Record<string, any>[] }).imdata[0]!.aaaLogin.attributes.token;
  const headers = { cookie: `APIC-cookie=${token}` };
  assert.deepEqual((await conn.transport.request({ path: "/api/mo/sys/nope.json", headers })).json(), {
    totalCount: "0",
    imdata: [],
  });
  assert.equal((await conn.transport.request({ path: "/api/class/noSuchClass.json", headers })).status, 400);
  const children = (await conn.transport.request({
    path: "/api/mo/sys/procsys.json?query-target=children&target-subtree-class=procSysMem",
    headers,
  })).json() as { imdata: Record<string, any>[] };
  assert.equal(children.imdata[0]!.procSysMem.attributes.dn, "sys/procsys/sysmem");
  await conn.transport.request({ method: "POST", path: PATHS.logout, headers, json: {} });
  assert.equal(device.openSessions(), 0);
});
