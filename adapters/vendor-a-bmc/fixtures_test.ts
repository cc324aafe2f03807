/**
 * Fixture tests: the adapter polls captured Redfish answers (DMTF mockups, and cases derived from them or
 * built from vendor documentation; see testdata/README.md) through the replay server, and the facts are
 * compared with each case's expected.json.
 */
import assert from "node:assert/strict";
import { connectTo, replayCase, startReplayServer } from "@dutlab/core/testing";
import adapter, { timeSources } from "./mod.ts";
import { readCollection } from "./_redfish.ts";
import { DeviceError } from "@dutlab/core";

const CASES = [
  "dmtf-public-rackmount1",
  "dmtf-public-telemetry",
  "dmtf-public-bladed",
  "chassis-manager-ntp",
  "ntp-protocol-disabled",
  "oem-datetime",
  "paged-firmware-inventory",
  "basic-auth-only",
];
const dir = (c: string) => new URL(`./testdata/${c}`, import.meta.url);
// deno-lint-ignore no-explicit-any
const payloadOf = (snaps: Array<{ label: string; payload: unknown }>, label: string): any =>
  snaps.find((s) => s.label === label)?.payload;

for (const c of CASES) {
  Deno.test(`fixture ${c}: facts match expected.json`, async () => {
    const { snaps, notes, expected, replay } = await replayCase(adapter, dir(c));
    assert.deepEqual(replay.unmatched, [], "every request had a captured answer");
    assert.deepEqual(notes, expected.pollNotes ?? []);
    if (expected.firmwareMembers) {
      const fw = payloadOf(snaps, "firmware_inventory");
      assert.deepEqual(Object.keys(fw.members), expected.firmwareMembers);
      assert.equal(fw.truncated, undefined);
    }
  });
}

Deno.test("fixture chassis-manager-ntp: the fact says which manager and property held the servers", async () => {
  const { snaps } = await replayCase(adapter, dir("chassis-manager-ntp"));
  const sources = timeSources(payloadOf(snaps, "ntp_config"));
  assert.deepEqual(sources, [{
    manager: "/redfish/v1/Managers/MultiBladeBMC",
    property: "NetworkProtocol.NTP.NTPServers",
    servers: ["192.0.2.10", "192.0.2.11"],
    enabled: true,
  }]);
  assert.equal(payloadOf(snaps, "ntp_config").managers.length, 5, "every manager of the service was read");
});

Deno.test("fixture oem-datetime: time servers found in the manager's DateTime resource", async () => {
  const { snaps } = await replayCase(adapter, dir("oem-datetime"));
  assert.deepEqual(timeSources(payloadOf(snaps, "ntp_config")).map((s) => [s.manager, s.property]), [
    ["/redfish/v1/Managers/BMC", "DateTime.NTPServers"],
  ]);
});

Deno.test("fixture ntp-protocol-disabled: listed servers with NTP off are reported as disabled", async () => {
  const { snaps } = await replayCase(adapter, dir("ntp-protocol-disabled"));
  const [source] = timeSources(payloadOf(snaps, "ntp_config"));
  assert.ok(source, "no time source reported");
  assert.equal(source.enabled, false);
  assert.equal(source.servers.length, 3);
});

Deno.test("fixture basic-auth-only: every data call used Basic and no session was created", async () => {
  const { replay } = await replayCase(adapter, dir("basic-auth-only"));
  const gets = replay.sim.requests.filter((r) => r.method === "GET" && r.path !== "/redfish/v1/");
  assert.ok(gets.length > 5 && gets.every((r) => r.authStyle === "basic"));
  assert.equal(replay.sim.requests.filter((r) => r.method === "DELETE").length, 0);
});

Deno.test("fixture dmtf-public-rackmount1: the connection test says the controller exposes no CPU figure", async () => {
  await using replay = await startReplayServer(dir("dmtf-public-rackmount1"));
  await using conn = await connectTo(adapter, replay, { credentials: { username: "admin", password: "x" } });
  const r = await conn.session.testConnection();
  assert.equal(r.cpuPercent, null);
  assert.match(r.cpuDetail, /^the controller exposes no CPU figure: /);
  assert.doesNotMatch(r.cpuDetail, /reachable/);
});

Deno.test("collections follow Members@odata.nextLink up to the bound, and say where it cut", async () => {
  const pages: Record<string, Record<string, unknown>> = {};
  for (let i = 0; i < 5; i++) {
    pages[i === 0 ? "/c" : `/c?$skip=${i}`] = {
      Members: [{ "@odata.id": `/c/${i}` }],
      ...(i < 4 ? { "Members@odata.nextLink": `https://bmc.example/c?$skip=${i + 1}` } : {}),
    };
  }
  const get = (p: string) => {
    const page = pages[p];
    return page ? Promise.resolve(page) : Promise.reject(new Error(`test bug: no page ${p}`));
  };
  const all = await readCollection(get, "/c");
  assert.deepEqual(all.members, ["/c/0", "/c/1", "/c/2", "/c/3", "/c/4"]);
  assert.equal(all.truncatedAt, null);
  const cut = await readCollection(get, "/c", 3);
  assert.deepEqual(cut.members, ["/c/0", "/c/1", "/c/2"]);
  assert.equal(cut.truncatedAt, "/c?$skip=3");
  pages["/c?$skip=4"]!["Members@odata.nextLink"] = "/c?$skip=2";
  await assert.rejects(
    () => readCollection(get, "/c"),
    (e) => e instanceof DeviceError && /twice/.test(e.message),
  );
});

Deno.test("a collection longer than the page bound is cut, and the payload says where", async () => {
  const tmp = await Deno.makeTempDir();
  try {
    const base = JSON.parse(
      await Deno.readTextFile(new URL("./testdata/dmtf-public-rackmount1/replay.json", import.meta.url)),
    );
    const tree = new URL("./testdata/dmtf-public-rackmount1/mockup", import.meta.url).pathname;
    const path = "/redfish/v1/UpdateService/FirmwareInventory";
    const pages = Array.from({ length: 40 }, (_, i) => ({
      path: i === 0 ? path : `${path}?$skip=${i}`,
      body: {
        "@odata.id": path,
        Members: [{ "@odata.id": `${path}/BMC` }],
        "Members@odata.nextLink": `${path}?$skip=${i + 1}`,
      },
    }));
    await Deno.symlink(tree, `${tmp}/mockup`);
    await Deno.writeTextFile(
      `${tmp}/replay.json`,
      JSON.stringify({ tree: { prefix: "/redfish/v1", dir: "mockup" }, routes: [...base.routes, ...pages] }),
    );
    await using replay = await startReplayServer(tmp);
    await using conn = await connectTo(adapter, replay, {
      credentials: { username: "admin", password: "x" },
    });
    const fw = payloadOf(await conn.session.collectAll(), "firmware_inventory");
    assert.equal(fw.pages.length, 31);
    assert.equal(fw.truncated.nextLink, `${path}?$skip=32`);
    assert.match(fw.truncated.detail, /stopped after 32 pages/);
    assert.deepEqual(Object.keys(fw.members), [`${path}/BMC`]);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
