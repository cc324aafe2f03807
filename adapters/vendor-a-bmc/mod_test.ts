import assert from "node:assert/strict";
import { DeviceError } from "@dutlab/core";
import { connectTo, runAdapterContract } from "@dutlab/core/testing";
import adapter, { LABELS, ntpServers } from "./mod.ts";
import { startSimulatedDevice, type VendorSim } from "./sim.ts";

type Snap = { label: string; payload: unknown };
// deno-lint-ignore no-explicit-any
const payloadOf = (snaps: Snap[], label: string): any => snaps.find((s) => s.label === label)?.payload;
const isStatus = (status: string, re?: RegExp) => (e: unknown) =>
  e instanceof DeviceError && e.status === status && (!re || re.test(e.message));

/** One poll cycle as the worker runs it (connect, collect all, close); the adapter never parks a session. */
async function pollFresh(sim: VendorSim, credentials = sim.credentials) {
  await using conn = await connectTo(adapter, sim.sim, { credentials });
  return await conn.session.collectAll();
}

async function testConnection(sim: VendorSim) {
  await using conn = await connectTo(adapter, sim.sim, { credentials: sim.credentials });
  return await conn.session.testConnection();
}

const CASES = ["dmtf-public-rackmount1", "dmtf-public-bladed", "oem-datetime", "basic-auth-only"].map((c) =>
  new URL(`./testdata/${c}`, import.meta.url)
);

Deno.test("vendor-a-bmc meets the adapter contract", (t) =>
  runAdapterContract(t, { adapter, start: () => startSimulatedDevice(), cases: CASES }));

Deno.test("vendor-a-bmc meets the adapter contract against a DMTF mockup-style service", (t) =>
  runAdapterContract(t, { adapter, start: () => startSimulatedDevice({ layout: "dmtf-mockup" }) }));

Deno.test("collects 8 snapshots from a Cisco IMC-shaped service, found through links", async () => {
  await using sim = await startSimulatedDevice();
  const snaps = await pollFresh(sim);
  assert.deepEqual(snaps.map((s) => s.label), [...LABELS]);
  assert.equal(snaps.length, 8);
  assert.equal(payloadOf(snaps, "service_root").RedfishVersion, "1.8.0");
  assert.equal(payloadOf(snaps, "system_info").Id, "WZP22490ZCU");
  assert.equal(payloadOf(snaps, "manager_info").Id, "CIMC");
  assert.equal(payloadOf(snaps, "chassis_info").Id, "1");
  assert.deepEqual(ntpServers(payloadOf(snaps, "ntp_config")), ["192.0.2.123", "192.0.2.124"]);
  assert.equal(payloadOf(snaps, "thermal")["@odata.id"], "/redfish/v1/Chassis/1/Thermal");
  assert.equal(payloadOf(snaps, "power").PowerControl[0].PowerConsumedWatts, 252);
  const fw = payloadOf(snaps, "firmware_inventory");
  assert.equal(fw.collection["Members@odata.count"], 7);
  assert.equal(Object.keys(fw.members).length, 7);
  assert.equal(fw.members["/redfish/v1/UpdateService/FirmwareInventory/CIMC"].Version, "4.1(3d)");
  assert.equal(sim.openSessions(), 0);
});

Deno.test("works against a DMTF mockup-style service with other ids and no NTP block", async () => {
  await using sim = await startSimulatedDevice({ layout: "dmtf-mockup" });
  const snaps = await pollFresh(sim);
  assert.equal(payloadOf(snaps, "system_info").Id, "437XR1138R2");
  assert.equal(payloadOf(snaps, "manager_info").Id, "BMC");
  assert.equal(payloadOf(snaps, "chassis_info").Id, "1U");
  const ntp = payloadOf(snaps, "ntp_config");
  assert.equal(ntp.managers[0].manager, "/redfish/v1/Managers/BMC");
  assert.equal(ntp.managers[0].networkProtocol["@odata.id"], "/redfish/v1/Managers/BMC/NetworkProtocol");
  assert.equal(
    ntp.managers[0].networkProtocol.NTP,
    undefined,
    "stored as the device reports it: no NTP block",
  );
  assert.deepEqual(ntpServers(ntp), []);
  assert.deepEqual(Object.keys(payloadOf(snaps, "firmware_inventory").members), [
    "/redfish/v1/UpdateService/FirmwareInventory/BMC",
    "/redfish/v1/UpdateService/FirmwareInventory/BIOS",
  ]);
  const paths = sim.sim.requests.map((r) => r.path);
  assert.ok(!paths.some((p) => /CIMC|WZP22490ZCU|Chassis\/1(\/|$)/.test(p)), "no Cisco ids assumed");
  assert.equal(sim.openSessions(), 0);
});

Deno.test("wrong credentials give auth_failed without echoing the password", async () => {
  await using sim = await startSimulatedDevice();
  const bad = { username: "admin", password: "not-the-Secret-42" };
  await assert.rejects(() => pollFresh(sim, bad), (e: unknown) => {
    assert.ok(isStatus("auth_failed", /Login refused: HTTP 401 .*NoValidSession/)(e), String(e));
    assert.ok(!(e as Error).message.includes(bad.password));
    return true;
  });
  assert.equal(sim.openSessions(), 0);
});

Deno.test("a 401 with an empty body on login still gives auth_failed", async () => {
  await using sim = await startSimulatedDevice({ emptyAuthErrorBody: true });
  await assert.rejects(
    () => pollFresh(sim, { username: "admin", password: "wrong" }),
    isStatus("auth_failed", /HTTP 401 from POST \/redfish\/v1\/SessionService\/Sessions$/),
  );
});

Deno.test("an expired session is re-created once and the collection goes on", async () => {
  await using sim = await startSimulatedDevice();
  await using conn = await connectTo(adapter, sim.sim, { credentials: sim.credentials });
  await conn.session.collectAll();
  sim.expireSessions();
  sim.sim.clearLog();
  const snaps = await conn.session.collectAll();
  assert.equal(snaps.length, 8);
  const logins = sim.sim.requests.filter((r) => r.method === "POST");
  assert.equal(logins.length, 1, "one new session");
  await conn.close();
  assert.equal(sim.openSessions(), 0);
});

Deno.test("a session refused again after re-login gives auth_failed", async () => {
  await using sim = await startSimulatedDevice();
  sim.state.sessionTimeoutSeconds = 0; // every session is stale by its first use
  await assert.rejects(() => pollFresh(sim), isStatus("auth_failed", /refused again after re-login/));
  assert.equal(sim.sim.requests.filter((r) => r.method === "POST").length, 2, "re-login exactly once");
  assert.equal(sim.openSessions(), 0);
});

Deno.test("with a session cap of 2, 50 polls in a row all succeed and delete every session", async () => {
  await using sim = await startSimulatedDevice({ sessionCap: 2 });
  for (let i = 0; i < 50; i++) {
    const snaps = await pollFresh(sim);
    assert.equal(snaps.length, 8);
    assert.equal(sim.openSessions(), 0, `no session left after poll ${i + 1}`);
  }
  assert.equal(sim.peakSessions(), 1);
  const count = (m: string) => sim.sim.requests.filter((r) => r.method === m).length;
  assert.equal(count("POST"), 50);
  assert.equal(count("DELETE"), 50);
});

for (const status of [400, 403, 503]) {
  Deno.test(`a full session table (HTTP ${status}) falls back to Basic for the cycle and says so`, async () => {
    await using sim = await startSimulatedDevice({ sessionCap: 2 });
    sim.state.sessionLimitStatus = status;
    sim.addForeignSessions(2);
    await using conn = await connectTo(adapter, sim.sim, { credentials: sim.credentials });
    const snaps = await conn.session.collectAll();
    assert.equal(snaps.length, LABELS.length);
    assert.deepEqual(ntpServers(payloadOf(snaps, "ntp_config")), ["192.0.2.123", "192.0.2.124"]);
    const notes = conn.session.pollNotes?.() ?? [];
    assert.equal(notes.length, 1);
    assert.match(notes[0]!, new RegExp(`session table is full \\(HTTP ${status} .*SessionLimitExceeded`));
    assert.match(notes[0]!, /this cycle used HTTP Basic authentication/);
    assert.ok(!notes[0]!.includes(sim.credentials.password));
    const data = sim.sim.requests.filter((r) => r.method === "GET" && r.path !== "/redfish/v1/");
    assert.ok(data.length > 0 && data.every((r) => r.authStyle === "basic"), "every data call sent Basic");
    await conn.close();
    assert.equal(sim.sim.requests.filter((r) => r.method === "DELETE").length, 0, "no session to delete");
    assert.equal(sim.openSessions(), 2, "only the foreign sessions");
    sim.expireSessions();
  });
}

Deno.test("testConnection reports the host CPU from ProcessorMetrics and deletes its session", async () => {
  await using sim = await startSimulatedDevice();
  sim.state.hostCpu = { kernelPercent: 10, userPercent: 27.5 };
  const r = await testConnection(sim);
  assert.equal(r.cpuPercent, 37.5);
  assert.match(
    r.cpuDetail,
    /Host CPU CPU1 37\.5% busy from GET \/redfish\/v1\/Systems\/WZP22490ZCU\/Processors\/CPU1\/ProcessorMetrics/,
  );
  assert.equal(sim.openSessions(), 0);
});

Deno.test("testConnection prefers the BMC's own CPU from ManagerDiagnosticData", async () => {
  await using sim = await startSimulatedDevice({ layout: "dmtf-mockup" });
  const r = await testConnection(sim);
  assert.equal(r.cpuPercent, 36);
  assert.match(
    r.cpuDetail,
    /BMC CPU 36% \(kernel \+ user\) from GET \/redfish\/v1\/Managers\/BMC\/ManagerDiagnosticData/,
  );
});

Deno.test("testConnection says so when the controller offers no CPU figure", async () => {
  await using sim = await startSimulatedDevice({ cpuSource: "none" });
  const r = await testConnection(sim);
  assert.equal(r.cpuPercent, null);
  assert.match(
    r.cpuDetail,
    /exposes no CPU figure: \/redfish\/v1\/Managers\/CIMC links no ManagerDiagnosticData/,
  );
  assert.equal(sim.openSessions(), 0);
});

Deno.test("changing simulator state changes the stored payloads", async () => {
  await using sim = await startSimulatedDevice();
  const before = await pollFresh(sim);
  sim.state.ntpServers = ["198.51.100.7", "", null];
  sim.state.powerState = "Off";
  sim.state.bmcFirmwareVersion = "4.2(3b)";
  sim.state.powerConsumedWatts = 310;
  sim.state.inletTempCelsius = 41;
  sim.state.health = "Warning";
  const after = await pollFresh(sim);
  assert.deepEqual(ntpServers(payloadOf(before, "ntp_config")), ["192.0.2.123", "192.0.2.124"]);
  assert.deepEqual(ntpServers(payloadOf(after, "ntp_config")), ["198.51.100.7"]);
  assert.equal(payloadOf(after, "system_info").PowerState, "Off");
  assert.equal(payloadOf(after, "system_info").Status.Health, "Warning");
  assert.equal(payloadOf(after, "manager_info").FirmwareVersion, "4.2(3b)");
  assert.equal(payloadOf(after, "chassis_info").PowerState, "Off");
  assert.equal(payloadOf(after, "power").PowerControl[0].PowerConsumedWatts, 310);
  assert.equal(payloadOf(after, "thermal").Temperatures[0].ReadingCelsius, 41);
  assert.equal(
    payloadOf(after, "firmware_inventory").members["/redfish/v1/UpdateService/FirmwareInventory/CIMC"]
      .Version,
    "4.2(3b)",
  );
  assert.equal(payloadOf(after, "service_root").UUID, payloadOf(before, "service_root").UUID);
});

Deno.test("ntpServers reads NTP.NTPServers, skipping empty strings and nulls", () => {
  const payload = {
    "@odata.type": "#ManagerNetworkProtocol.v1_5_0.ManagerNetworkProtocol",
    NTP: { NTPServers: ["10.0.0.1", "", null, " pool.ntp.org "], ProtocolEnabled: true },
  };
  assert.deepEqual(ntpServers(payload), ["10.0.0.1", "pool.ntp.org"]);
});

Deno.test("ntpServers gives [] without an NTP block or NetworkProtocol resource", () => {
  assert.deepEqual(
    ntpServers({ "@odata.type": "#ManagerNetworkProtocol.v1_11_0.ManagerNetworkProtocol" }),
    [],
  );
  assert.deepEqual(
    ntpServers({ "@odata.type": "#ManagerNetworkProtocol.v1_11_0.ManagerNetworkProtocol", NTP: {} }),
    [],
  );
  assert.deepEqual(ntpServers({ present: false, resource: "ManagerNetworkProtocol", detail: "x" }), []);
});

Deno.test("ntpServers throws on a payload of the wrong shape", () => {
  const npType = "#ManagerNetworkProtocol.v1_5_0.ManagerNetworkProtocol";
  assert.throws(() => ntpServers(null));
  assert.throws(() => ntpServers([]));
  assert.throws(() => ntpServers("10.0.0.1"));
  assert.throws(() => ntpServers({ "@odata.type": "#ComputerSystem.v1_9_0.ComputerSystem", Id: "X" }));
  assert.throws(() => ntpServers({ NTP: { NTPServers: ["10.0.0.1"] } }), /not a ManagerNetworkProtocol/);
  assert.throws(() => ntpServers({ "@odata.type": npType, NTP: "10.0.0.1" }));
  assert.throws(() => ntpServers({ "@odata.type": npType, NTP: { NTPServers: "10.0.0.1" } }));
  assert.throws(() => ntpServers({ "@odata.type": npType, NTP: { NTPServers: [42] } }));
});

Deno.test("a device answering 503 gives http_error", async () => {
  await using sim = await startSimulatedDevice();
  sim.sim.faults.status = 503;
  await assert.rejects(() => pollFresh(sim), isStatus("http_error", /HTTP 503 from GET \/redfish\/v1\//));
  sim.sim.faults.status = null;
  assert.equal(sim.openSessions(), 0);
});

Deno.test("a 500 on one resource gives http_error with method, path and status, and the session is deleted", async () => {
  await using sim = await startSimulatedDevice();
  sim.failPath("/redfish/v1/Chassis/1/Thermal", 500);
  await assert.rejects(
    () => pollFresh(sim),
    isStatus("http_error", /HTTP 500 from GET \/redfish\/v1\/Chassis\/1\/Thermal \(.*InternalError\)/),
  );
  assert.equal(sim.openSessions(), 0);
});

Deno.test("a failing firmware member stops the collection without opening a second session", async () => {
  await using sim = await startSimulatedDevice();
  sim.failPath("/redfish/v1/UpdateService/FirmwareInventory/BIOS", 500);
  await assert.rejects(() => pollFresh(sim), isStatus("http_error", /FirmwareInventory\/BIOS/));
  assert.equal(sim.sim.requests.filter((r) => r.method === "POST").length, 1);
  assert.equal(sim.peakSessions(), 1);
  assert.equal(sim.openSessions(), 0);
});

Deno.test("a 403 on a data call gives auth_failed: the API user lacks permission", async () => {
  await using sim = await startSimulatedDevice();
  sim.failPath("/redfish/v1/UpdateService", 403);
  await assert.rejects(
    () => pollFresh(sim),
    isStatus("auth_failed", /InsufficientPrivilege.*lacks permission/),
  );
  assert.equal(sim.openSessions(), 0);
});

Deno.test("a device that never answers gives timeout", async () => {
  await using sim = await startSimulatedDevice();
  sim.sim.faults.hang = true;
  await assert.rejects(() => pollFresh(sim), isStatus("timeout"));
});

Deno.test("absent Thermal, Power and UpdateService are stored as payloads saying so", async () => {
  await using sim = await startSimulatedDevice({
    layout: "dmtf-mockup",
    thermalPower: false,
    updateService: false,
  });
  const snaps = await pollFresh(sim);
  assert.equal(snaps.length, 8);
  assert.deepEqual(payloadOf(snaps, "thermal"), {
    present: false,
    resource: "Thermal",
    detail: "/redfish/v1/Chassis/1U links no Thermal resource; it links ThermalSubsystem " +
      "/redfish/v1/Chassis/1U/ThermalSubsystem, which this adapter does not collect",
  });
  assert.equal(payloadOf(snaps, "power").present, false);
  assert.deepEqual(payloadOf(snaps, "firmware_inventory"), {
    present: false,
    resource: "SoftwareInventoryCollection",
    detail: "The service root links no UpdateService",
  });
  assert.equal(sim.openSessions(), 0);
});

Deno.test("a session Location given as an absolute URL is deleted on close", async () => {
  await using sim = await startSimulatedDevice({ absoluteLocation: true });
  await pollFresh(sim);
  const del = sim.sim.requests.find((r) => r.method === "DELETE");
  assert.equal(del?.path, "/redfish/v1/SessionService/Sessions/1");
  assert.equal(sim.openSessions(), 0);
});
