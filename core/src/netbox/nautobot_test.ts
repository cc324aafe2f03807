// Nautobot (issue 50 point 6): what `from-netbox` supports of Nautobot's API, checked against Nautobot's own
// recorded parts (testdata/nautobot, SOURCE.md): a Nautobot 2.x peer (tools/nautobot_peer.ts) whose status
// members, device members and nested objects come from Nautobot v2.4.36 (StatusView, the Device model, the REST
// API overview's documented answers), and pynautobot's recorded device. The import asks Nautobot 2+ for
// `depth=1` (at depth 0 related objects are bare references), reads names where Nautobot has no slugs,
// `location` for the site and `primary_ip4`, and records `Nautobot <version>`.
import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { NetBoxClient } from "./client.ts";
import { NetBoxMapping } from "./mapping.ts";
import { importFromNetBox } from "./sync.ts";
import { generatedDevices, PEER_TOKEN, startNetBoxPeer } from "../../../tools/netbox_peer.ts";
import { NAUTOBOT_TOKEN, startNautobotPeer } from "../../../tools/nautobot_peer.ts";

const MAPPING = NetBoxMapping.parse({
  ...parseYaml(
    await Deno.readTextFile(new URL("../../../examples/netbox-mapping.yaml", import.meta.url)),
  ) as object,
  managementUrl: { from: "template", template: "https://{name}.lab.example:8443" },
  tags: { netbox: true, site: true, role: false },
});
const RECORDED = JSON.parse(
  await Deno.readTextFile(new URL("./testdata/nautobot/nautobot-2.4.36.json", import.meta.url)),
) as {
  statusMembers: string[];
  deviceFields: string[];
  restApiOverview: { depth1: { status: Record<string, unknown> } };
};
/** What Nautobot's Device serializer answers besides the model's fields. */
const SERIALIZER = [
  "id",
  "object_type",
  "display",
  "url",
  "notes_url",
  "custom_fields",
  "tags",
  "created",
  "last_updated",
];

/** A lab device without the `netbox:<id>` tag (NetBox's id is a number, Nautobot's a UUID). */
const comparable = (d: { tags?: string[] }) => ({
  ...d,
  tags: (d.tags ?? []).filter((t) => !t.startsWith("netbox:")),
});

Deno.test("Nautobot 2.x: the import asks depth=1 and maps the same devices as from NetBox", async () => {
  const devices = generatedDevices(12);
  const nautobot = startNautobotPeer({ devices });
  const netbox = await startNetBoxPeer({ devices });
  try {
    const fromNautobot = await importFromNetBox(
      null,
      new NetBoxClient({ url: nautobot.url, token: NAUTOBOT_TOKEN, pageSize: 5 }),
      MAPPING,
      [["location", "lab-a"], ["role", "firewall"]],
    );
    const fromNetBox = await importFromNetBox(
      null,
      new NetBoxClient({ url: netbox.url, token: PEER_TOKEN }),
      MAPPING,
      [["site", "lab-a"], ["role", "firewall"]],
    );
    assert.equal(fromNautobot.provenance.netboxVersion, "Nautobot 2.4.36");
    assert.deepEqual(fromNautobot.provenance.filters, [["location", "lab-a"], ["role", "firewall"], [
      "depth",
      "1",
    ]]);
    assert.equal(fromNautobot.provenance.pages, 1);
    assert.ok(
      nautobot.requests.filter((r) => r.path === "/api/dcim/devices/").every((r) => /depth=1/.test(r.query)),
    );
    assert.ok(nautobot.requests.every((r) => r.authorization === `Token ${NAUTOBOT_TOKEN}`));
    assert.ok(fromNetBox.lab.devices.length >= 2);
    assert.deepEqual(fromNautobot.lab.devices.map(comparable), fromNetBox.lab.devices.map(comparable));
    assert.deepEqual(fromNautobot.unmapped, []);
    for (const d of fromNautobot.lab.devices) {
      assert.ok(d.tags!.some((t) => /^netbox:[0-9a-f-]{36}$/.test(t)), "the Nautobot UUID is kept");
      assert.ok(d.tags!.includes("site:lab-a"), "location as the site");
    }
  } finally {
    await nautobot.close();
    await netbox.close();
  }
});

Deno.test("the Nautobot peer answers with Nautobot's own members (StatusView, Device fields, nested status)", async () => {
  const nautobot = startNautobotPeer({ devices: generatedDevices(3) });
  try {
    const c = new NetBoxClient({ url: nautobot.url, token: NAUTOBOT_TOKEN });
    const status = (await c.get<Record<string, unknown>>("api/status/", "status")).value;
    assert.deepEqual(Object.keys(status), RECORDED.statusMembers);
    const allowed = new Set([...RECORDED.deviceFields, ...SERIALIZER]);
    for (const depth of ["0", "1"]) {
      const list = await c.list<Record<string, unknown>>("api/dcim/devices/", [["depth", depth]], "devices");
      for (const d of list.results) {
        assert.deepEqual(Object.keys(d).filter((k) => !allowed.has(k)), [], "members Nautobot answers");
        assert.ok(!("site" in d) && !("primary_ip" in d) && !("device_role" in d));
        const st = d.status as Record<string, unknown>;
        if (depth === "0") assert.deepEqual(Object.keys(st).sort(), ["id", "object_type", "url"]);
        else {assert.deepEqual(
            Object.keys(st).sort(),
            Object.keys(RECORDED.restApiOverview.depth1.status).sort(),
          );}
      }
    }
  } finally {
    await nautobot.close();
  }
});

Deno.test("Nautobot at depth 0 (bare references): every device listed unmapped with its reason", async () => {
  const nautobot = startNautobotPeer({ devices: generatedDevices(4) });
  try {
    const r = await importFromNetBox(
      null,
      new NetBoxClient({ url: nautobot.url, token: NAUTOBOT_TOKEN }),
      MAPPING,
      [["depth", "0"]],
    );
    assert.equal(r.lab.devices.length, 0);
    assert.equal(r.unmapped.length, 4);
    assert.ok(r.unmapped.every((u) => /no vendor rule covers it/.test(u.reason)), JSON.stringify(r.unmapped));
  } finally {
    await nautobot.close();
  }
});

Deno.test("pynautobot's recorded device (UUID id, device_role, slugs) maps", async () => {
  const device = JSON.parse(
    await Deno.readTextFile(new URL("./testdata/nautobot/pynautobot_dcim_device.json", import.meta.url)),
  ) as Record<string, unknown>;
  const answers: Record<string, unknown> = {
    "/api/status/": Object.fromEntries(
      RECORDED.statusMembers.map((k) => [k, k === "nautobot-version" ? "2.4.36" : {}]),
    ),
    "/api/dcim/devices/": { count: 1, next: null, previous: null, results: [device] },
  };
  const fetch = (input: RequestInfo | URL) =>
    Promise.resolve(Response.json(answers[new URL(String(input)).pathname] ?? { detail: "Not found." }));
  const mapping = NetBoxMapping.parse({
    ...MAPPING,
    vendor: [{
      match: { platform: "juniper-junos", role: "router", site: "test1" },
      vendor: "vendor-a-ngfw",
    }],
    managementUrl: { from: "primaryIp", port: 443 },
    rules: [{ match: {}, credential: "vendor-a-ngfw" }],
  });
  const r = await importFromNetBox(
    null,
    new NetBoxClient({ url: "http://127.0.0.1:1", token: NAUTOBOT_TOKEN, fetch }),
    mapping,
    [],
  );
  assert.deepEqual(r.unmapped, []);
  const [d] = r.lab.devices;
  assert.equal(d!.hostname, "test1-edge1");
  assert.equal(d!.baseUrl, "https://10.0.255.1:443");
  assert.ok(d!.tags!.includes(`netbox:${device.id}`));
});
