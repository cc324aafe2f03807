import assert from "node:assert/strict";
import { addressRefusal, type DeviceNetworks, parseDeviceNetworks, parseIp, UNLISTED } from "./networks.ts";

const list = (text: string): DeviceNetworks => {
  const r = parseDeviceNetworks(text);
  if (!("networks" in r)) throw new Error(r.errors.join("; "));
  return r.networks;
};

Deno.test("addresses are parsed in their usual text only", () => {
  assert.deepEqual(parseIp("127.0.0.1"), new Uint8Array([127, 0, 0, 1]));
  assert.deepEqual(parseIp("[::ffff:169.254.169.254]")?.slice(12), new Uint8Array([169, 254, 169, 254]));
  assert.equal(parseIp("fe80::1%eth0")?.[0], 0xfe);
  for (
    const bad of ["2130706433", "127.1", "0x7f.0.0.1", "017.0.0.1", "1.2.3.4.5", "1:2:3", "::1::", "fw1"]
  ) {
    assert.equal(parseIp(bad), null, bad);
  }
});

// Cases as data: list (undefined: unset), address, the host name it was resolved from, refused?
const CASES: Array<[string | undefined, string, string | null, boolean]> = [
  [undefined, "127.0.0.1", null, false], // the simulated lab on loopback, unset
  [undefined, "::1", "localhost", false],
  [undefined, "10.20.1.1", "fw1.lab", false],
  [undefined, "169.254.169.254", null, true], // cloud metadata
  [undefined, "169.254.10.1", null, true], // link-local
  [undefined, "fe80::1", null, true],
  [undefined, "fd00:ec2::254", null, true],
  [undefined, "100.100.100.200", null, true],
  [undefined, "::ffff:169.254.169.254", null, true], // IPv4-mapped
  [undefined, "64:ff9b::a9fe:a9fe", null, true], // NAT64
  [undefined, "0.0.0.0", null, true],
  ["127.0.0.0/8", "127.0.0.1", null, false],
  ["127.0.0.0/8", "::1", null, true], // loopback needs a listed range once a list is set
  ["10.20.0.0/16", "10.20.3.4", "fw1", false],
  ["10.20.0.0/16", "10.21.0.1", "fw1", true],
  ["10.20.0.0/16", "127.0.0.1", null, true],
  ["0.0.0.0/0", "169.254.169.254", null, true], // a wide CIDR does not admit a guarded address
  ["0.0.0.0/0", "127.0.0.1", null, true],
  ["0.0.0.0/0", "192.0.2.1", null, false],
  ["169.254.10.0/24", "169.254.10.7", null, false], // listed inside the link-local range
  ["169.254.169.254", "169.254.169.254", null, false], // listed exactly
  ["*.mgmt.lab", "192.0.2.9", "fw1.MGMT.lab", false], // a host pattern admits the name's address
  ["*.mgmt.lab", "192.0.2.9", "mgmt.lab", true], // a wildcard needs one label more
  ["*.mgmt.lab", "169.254.169.254", "fw1.mgmt.lab", true], // never a guarded one (DNS rebinding)
  ["*.mgmt.lab", "127.0.0.1", "fw1.mgmt.lab", true],
  ["fw1.mgmt.lab", "192.0.2.9", "fw2.mgmt.lab", true],
  ["fw1.mgmt.lab", "192.0.2.9", null, true], // a literal address is not a name
];

Deno.test("an address is refused or admitted by the list and the guarded ranges", () => {
  for (const [text, address, hostname, refused] of CASES) {
    const why = addressRefusal(text === undefined ? UNLISTED : list(text), address, hostname);
    assert.equal(why !== null, refused, `${text ?? "unset"} ${address} ${hostname}: ${why}`);
  }
  assert.match(
    addressRefusal(UNLISTED, "169.254.169.254", null)!,
    /^169\.254\.169\.254 is the cloud metadata service's address; .*DUT_DEVICE_NETWORKS/,
  );
  assert.equal(addressRefusal(list("10.0.0.0/8"), "10.1.1.1", null), null);
});

Deno.test("a bad DUT_DEVICE_NETWORKS entry is named, one message each", () => {
  const errors = (text: string) => {
    const r = parseDeviceNetworks(text);
    return "errors" in r ? r.errors : [];
  };
  assert.deepEqual(errors("10.20.0.0/33, 10.20.0.1/16,fw_1.lab, *, 10.0.0.0/8/1"), [
    '"10.20.0.0/33" is not a CIDR (an address, "/" and a prefix length: 10.20.0.0/16, fd00:1::/64)',
    '"10.20.0.1/16" has bits set after its prefix; the network is 10.20.0.0/16',
    '"*" is neither a CIDR (10.20.0.0/16), an address nor a host pattern (fw1.lab.example, *.lab.example)',
    '"10.0.0.0/8/1" is not a CIDR (an address, "/" and a prefix length: 10.20.0.0/16, fd00:1::/64)',
  ]);
  assert.deepEqual(errors(" , "), ["lists no network or host"]);
  assert.deepEqual(errors("fd00:1::/64, ::1, 127.0.0.0/8, *.lab.example"), []);
});
