// The NetBox client and mapping against the local NetBox peer (issue 50): pagination to the end with the
// token on every page, NetBox's filters several at once, both token schemes, TLS with a CA file, 429
// Retry-After, 401/403/404 naming the object, and the bad-input cases (not JSON, a repeating page, an endless
// next chain, a next link to another host, no primary IP, no mapping, two devices of one hostname).
import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { certificates } from "@dutlab/core/testing";
import { authorization, NetBoxClient, NetBoxError } from "./client.ts";
import { mapDevices, NetBoxMapping } from "./mapping.ts";
import { importFromNetBox } from "./sync.ts";
import { deviceObject, generatedDevices, PEER_TOKEN, startNetBoxPeer } from "../../../tools/netbox_peer.ts";

const EXAMPLE = NetBoxMapping.parse(
  parseYaml(await Deno.readTextFile(new URL("../../../examples/netbox-mapping.yaml", import.meta.url))),
);
/** The example with a template URL (the generated devices have no `dutlab_url`). */
const MAPPING = NetBoxMapping.parse({
  ...EXAMPLE,
  managementUrl: { from: "template", template: "https://{name}.lab.example:8443" },
});

async function expectNetBoxError(p: Promise<unknown>, re: RegExp, object?: RegExp) {
  const e = await p.then(() => null, (e) => e);
  assert.ok(e instanceof NetBoxError, `expected a NetBoxError, got ${e}`);
  assert.match(e.message, re);
  if (object) assert.match(e.object, object);
  assert.ok(!e.message.includes(PEER_TOKEN.slice(4)), "the token is not in the message");
  return e;
}

Deno.test("token schemes: v2 as Bearer nbt_<key>.<token>, v1 as Token <40 hex>, anything else refused", () => {
  assert.equal(authorization(PEER_TOKEN), `Bearer ${PEER_TOKEN}`);
  assert.equal(authorization(`Bearer ${PEER_TOKEN}`), `Bearer ${PEER_TOKEN}`);
  const v1 = "1234567890123456789012345678901234567890"; // pynetbox's recorded v1 key
  assert.equal(authorization(v1), `Token ${v1}`);
  assert.throws(() => authorization("hunter2"), /neither a v2 token .* nor a v1 token/);
});

Deno.test("every page is read, the token sent on each; two filters at once select exactly the peer's own answer", async () => {
  const peer = await startNetBoxPeer({ devices: generatedDevices(2_345) });
  try {
    const c = new NetBoxClient({ url: peer.url, token: PEER_TOKEN, pageSize: 1000 });
    const all = await c.list("api/dcim/devices/", [], "devices");
    assert.equal(all.results.length, 2_345);
    assert.equal(all.pages, 3);
    const gets = peer.requests.filter((r) => r.path === "/api/dcim/devices/");
    assert.equal(gets.length, 3);
    for (const r of gets) assert.equal(r.authorization, `Bearer ${PEER_TOKEN}`);
    const q: Array<[string, string]> = [["site", "lab-b"], ["role", "firewall"], ["tag", "dut"]];
    const some = await c.list<{ id: number }>("api/dcim/devices/", q, "devices");
    const expected = peer.devices.filter((d) =>
      (d.site as { slug: string }).slug === "lab-b" && (d.role as { slug: string }).slug === "firewall" &&
      (d.tags as Array<{ slug: string }>).some((t) => t.slug === "dut")
    ).map((d) => d.id);
    assert.ok(expected.length > 0 && expected.length < 2_345);
    assert.deepEqual(some.results.map((d) => d.id), expected);
    // A custom-field filter and a role at once, and q: NetBox's own answer again.
    const cf = await c.list<{ id: number }>("api/dcim/devices/", [["cf_owner", "team-red"], [
      "role",
      "switch",
    ]], "devices");
    const cfOwn = peer.devices.filter((d) =>
      (d.custom_fields as { owner: string }).owner === "team-red" &&
      (d.role as { slug: string }).slug === "switch"
    ).map((d) => d.id);
    assert.ok(cfOwn.length > 0);
    assert.deepEqual(cf.results.map((d) => d.id), cfOwn);
    const byQ = await c.list<{ id: number; name: string }>("api/dcim/devices/", [["q", "00042"]], "devices");
    assert.deepEqual(byQ.results.map((d) => d.name), ["nb-vendor-b-ngfw-00042"]);
    const last = peer.requests.at(-3)!;
    assert.match(last.query, /site=lab-b&role=firewall&tag=dut&limit=1000/);
    c.close();
  } finally {
    await peer.close();
  }
});

Deno.test("a v1 token is sent as Token; a wrong token is a 403 naming the object", async () => {
  const v1 = "1234567890123456789012345678901234567890";
  const peer = await startNetBoxPeer({ token: v1 });
  try {
    const c = new NetBoxClient({ url: peer.url, token: v1 });
    assert.equal((await c.list("api/dcim/devices/", [], "devices")).results.length, 12);
    assert.equal(peer.requests.at(-1)!.authorization, `Token ${v1}`);
    const bad = new NetBoxClient({ url: peer.url, token: PEER_TOKEN });
    await expectNetBoxError(
      bad.get("api/status/", "status (/api/status/)"),
      /may not read status .*403.*Invalid v2 token/,
      /status/,
    );
    await expectNetBoxError(
      c.get("api/dcim/devices/99999/", "device #99999"),
      /NetBox has no device #99999 \(404/,
    );
  } finally {
    await peer.close();
  }
});

Deno.test("429 is retried after Retry-After; bad answers stop the import naming the NetBox object", async () => {
  const peer = await startNetBoxPeer();
  try {
    const c = new NetBoxClient({ url: peer.url, token: PEER_TOKEN, pageSize: 5, maxPages: 20 });
    peer.faults.add("429-once");
    const t0 = performance.now();
    assert.equal((await c.list("api/dcim/devices/", [], "devices")).results.length, 12);
    assert.ok(performance.now() - t0 >= 900, "waited the Retry-After second");
    peer.faults.add("not-json");
    await expectNetBoxError(
      c.list("api/dcim/devices/", [], "devices"),
      /answer for devices .* is not JSON/,
      /^devices$/,
    );
    peer.faults.clear();
    peer.faults.add("repeat-page");
    await expectNetBoxError(
      c.list("api/dcim/devices/", [], "devices"),
      /repeats object id 1/,
      /devices id 1/,
    );
    peer.faults.clear();
    peer.faults.add("endless-next");
    await expectNetBoxError(
      c.list("api/dcim/devices/", [], "devices"),
      /more than 20 pages \(an endless next chain/,
    );
    peer.faults.clear();
    peer.faults.add("foreign-next");
    const before = peer.requests.length;
    await expectNetBoxError(
      c.list("api/dcim/devices/", [], "devices"),
      /links to https?:\/\/netbox\.example\.com.*not followed/,
    );
    assert.equal(peer.requests.length, before + 1, "nothing sent to the other host");
  } finally {
    await peer.close();
  }
});

Deno.test("TLS: a NetBox certificate is verified against the CA file; without it the import fails", async () => {
  const ca = await certificates.authority("netbox test CA");
  const leaf = await certificates.issue(ca, ["127.0.0.1"]);
  const peer = await startNetBoxPeer({ cert: leaf });
  try {
    assert.match(peer.url, /^https:/);
    const ok = new NetBoxClient({ url: peer.url, token: PEER_TOKEN, caPem: ca.certPem });
    assert.equal((await ok.list("api/dcim/devices/", [], "devices")).results.length, 12);
    ok.close();
    const untrusted = new NetBoxClient({ url: peer.url, token: PEER_TOKEN });
    await expectNetBoxError(untrusted.get("api/status/", "status"), /could not be reached for status/);
  } finally {
    await peer.close();
  }
});

Deno.test("a timeout names the request", async () => {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async () => {
    await new Promise((r) => setTimeout(r, 1_000));
    return new Response("{}");
  });
  try {
    const c = new NetBoxClient({
      url: `http://127.0.0.1:${server.addr.port}`,
      token: PEER_TOKEN,
      timeoutMs: 200,
    });
    await expectNetBoxError(
      c.get("api/status/", "status"),
      /did not answer GET \/api\/status\/ \(status\) within 200 ms/,
    );
  } finally {
    await server.shutdown();
  }
});

Deno.test("the mapping: vendor by platform, manufacturer or custom field; URL by primary IP, field or template; rules", () => {
  const base = { site: "lab-a", role: "firewall", tags: ["dut"] };
  const devs = [
    deviceObject({
      id: 1,
      name: "fw1",
      platform: "vendor-a-ngfw",
      ...base,
      customFields: { dutlab_url: "https://127.0.0.1:9001" },
    }),
    deviceObject({ id: 2, name: "fw2", platform: "vendor-z-os", ...base }),
    deviceObject({ id: 3, name: "fw3", platform: "vendor-b-ngfw", ...base, customFields: {} }),
    deviceObject({ id: 4, name: null, platform: "vendor-a-ngfw", ...base }),
  ];
  const r = mapDevices(EXAMPLE, devs as never);
  assert.deepEqual(r.lab.devices.map((d) => d.hostname), ["fw1"]);
  const fw1 = r.lab.devices[0]!;
  assert.equal(fw1.vendor, "vendor-a-ngfw");
  assert.equal(fw1.baseUrl, "https://127.0.0.1:9001");
  assert.equal(fw1.credential, "vendor-a-ngfw");
  assert.equal(fw1.deviceRole, "ngfw");
  assert.deepEqual(fw1.tags, ["dut", "lab:sim", "netbox:1", "site:lab-a"]);
  assert.deepEqual(r.unmapped.map((u) => [u.netboxId, u.reason]), [
    [2, "no vendor rule covers it (platform vendor-z-os, manufacturer dutlab)"],
    [3, "its custom field dutlab_url (the management URL) is empty"],
    [4, "it has no name"],
  ]);
  assert.ok(
    Object.values(r.lab.credentials!).every((c) => /^env:/.test(c.password)),
    "credentials are references",
  );

  const byIp = NetBoxMapping.parse({ ...EXAMPLE, managementUrl: { from: "primaryIp", port: 8443 } });
  const ip = mapDevices(byIp, [
    deviceObject({
      id: 5,
      name: "sw1",
      platform: "vendor-a-switch",
      ...base,
      role: "switch",
      primaryIp: "127.0.0.5/24",
    }),
    deviceObject({
      id: 6,
      name: "sw2",
      platform: "vendor-a-switch",
      ...base,
      role: "switch",
      primaryIp: null,
    }),
  ] as never);
  assert.equal(ip.lab.devices[0]!.baseUrl, "https://127.0.0.5:8443");
  assert.deepEqual(ip.unmapped.map((u) => u.reason), [
    "it has no primary IP (managementUrl.from: primaryIp)",
  ]);

  const byCf = NetBoxMapping.parse({
    ...MAPPING,
    vendor: [{ customField: "dutlab_vendor" }, ...MAPPING.vendor],
    rules: [...(MAPPING.rules ?? []), {
      match: { customField: { name: "dutlab_vendor", value: "vendor-c-ngfw" } },
      credential: "vendor-c-ngfw",
    }],
  });
  const cf = mapDevices(byCf, [
    deviceObject({
      id: 7,
      name: "x1",
      platform: "vendor-z-os",
      ...base,
      customFields: { dutlab_vendor: "vendor-c-ngfw" },
    }),
  ] as never);
  assert.equal(cf.lab.devices[0]!.vendor, "vendor-c-ngfw");
  assert.equal(cf.lab.devices[0]!.baseUrl, "https://x1.lab.example:8443");

  const dup = mapDevices(MAPPING, [
    deviceObject({ id: 8, name: "Twin", platform: "vendor-a-ngfw", ...base }),
    deviceObject({ id: 9, name: "twin", platform: "vendor-a-ngfw", ...base }),
  ] as never);
  assert.deepEqual(dup.duplicates, [{ hostname: "twin", netboxIds: [8, 9] }]);
});

Deno.test("an import records its provenance; two NetBox devices of one hostname stop it", async () => {
  const peer = await startNetBoxPeer();
  try {
    const c = new NetBoxClient({ url: peer.url, token: PEER_TOKEN });
    const r = await importFromNetBox(null, c, MAPPING, [["site", "lab-a"]]);
    assert.equal(r.provenance.netboxVersion, "4.5.2");
    assert.deepEqual(r.provenance.filters, [["site", "lab-a"]]);
    assert.match(r.provenance.answersSha256, /^sha256:[0-9a-f]{64}$/);
    assert.equal(r.provenance.devices, 4);
    assert.equal(r.lab.devices.length + r.unmapped.length, 4);
    const again = await importFromNetBox(null, c, MAPPING, [["site", "lab-a"]]);
    assert.equal(again.provenance.answersSha256, r.provenance.answersSha256, "same answers, same digest");
    peer.setDevices([
      { id: 1, name: "twin", site: "lab-a", role: "firewall", platform: "vendor-a-ngfw" },
      { id: 2, name: "TWIN", site: "lab-a", role: "firewall", platform: "vendor-a-ngfw" },
    ]);
    await expectNetBoxError(
      importFromNetBox(null, c, MAPPING, []),
      /NetBox devices #1 and #2 map to one hostname, twin/,
    );
  } finally {
    await peer.close();
  }
});
