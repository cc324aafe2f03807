/**
 * Where the service may connect to devices (issue 46 point 5, docs/security.md "Where the service connects"):
 * the allow-list `DUT_DEVICE_NETWORKS` (CIDRs and host patterns) and the guarded ranges, checked on the
 * address a connection is about to use (transport.ts resolves the name, checks every address, and connects
 * only to those that passed, so a name that changes its answer between two look-ups cannot slip through), and
 * at registration when a device's host is a literal address (devices/base_url.ts).
 *
 * Guarded ranges: unspecified (`0.0.0.0/8`, `::`), link-local (`169.254.0.0/16`, `fe80::/10`, which hold the
 * cloud metadata services at `169.254.169.254`), the metadata addresses outside them (`fd00:ec2::254`,
 * `100.100.100.200`, `168.63.129.16`) and, once a list is set, loopback (`127.0.0.0/8`, `::1`). A guarded
 * address is admitted only by a listed CIDR inside its range (`169.254.10.0/24`, `127.0.0.0/8`), never by a
 * wider one (`0.0.0.0/0`) nor by a host pattern.
 *
 * @module
 */
import dns from "node:dns";

/** An IP address as bytes: 4 for IPv4, 16 for IPv6. */
interface Ip {
  bytes: Uint8Array;
}

/** A listed or guarded range. */
interface Range extends Ip {
  prefix: number;
  text: string;
}

/** A host pattern of the list: an exact name, or `*.` and a suffix (one label or more before it). */
interface HostPattern {
  text: string;
  /** The name, lower-case, without `*.`. */
  name: string;
  wildcard: boolean;
}

/** The parsed `DUT_DEVICE_NETWORKS`: unset (`listed` false) means every address but the guarded ones. */
export interface DeviceNetworks {
  /** True when the variable was set: only listed networks and names are reached. */
  listed: boolean;
  cidrs: readonly Range[];
  hosts: readonly HostPattern[];
}

/** No list (the variable unset): every address except the unspecified, link-local and metadata ones. */
export const UNLISTED: DeviceNetworks = { listed: false, cidrs: [], hosts: [] };

/** An address a name resolved to, as `node:dns` `lookup` gives it. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to its addresses (every one); tests inject a stub so that nothing is resolved. */
export type AddressLookup = (hostname: string) => Promise<ResolvedAddress[]>;

/** The system resolver (`getaddrinfo`: /etc/hosts, then DNS), every address of the name. */
export const systemLookup: AddressLookup = async (hostname) =>
  (await dns.promises.lookup(hostname, { all: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

/** Parse a dotted-quad IPv4 address (exactly four decimal parts, no leading zeros), else null. */
function parseIpv4(text: string): Uint8Array | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const out = new Uint8Array(4);
  for (const [i, p] of parts.entries()) {
    if (!/^(0|[1-9]\d{0,2})$/.test(p) || Number(p) > 255) return null;
    out[i] = Number(p);
  }
  return out;
}

/** Parse an IPv6 address (`::` shorthand and a dotted IPv4 tail allowed; a zone `%eth0` ignored), else null. */
function parseIpv6(text: string): Uint8Array | null {
  const s = text.replace(/%.*$/, "");
  if (!/^[0-9a-fA-F:.]+$/.test(s) || (s.match(/::/g)?.length ?? 0) > 1) return null;
  let tail: Uint8Array | null = null;
  let body = s;
  const lastColon = s.lastIndexOf(":");
  if (s.slice(lastColon + 1).includes(".")) {
    tail = parseIpv4(s.slice(lastColon + 1));
    if (!tail) return null;
    body = s.slice(0, lastColon + 1) + "0:0";
  }
  const [head = "", rest] = body.split("::");
  const groups = (part: string) => part === "" ? [] : part.split(":");
  const h = groups(head);
  const t = rest === undefined ? [] : groups(rest);
  const fill = 8 - h.length - t.length;
  if (rest === undefined ? fill !== 0 : fill < 1) return null;
  const all = [...h, ...Array(rest === undefined ? 0 : fill).fill("0"), ...t];
  const out = new Uint8Array(16);
  for (const [i, g] of all.entries()) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
    const v = parseInt(g, 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 0xff;
  }
  if (tail) out.set(tail, 12);
  return out;
}

/** An IP address in its usual text (brackets allowed around IPv6), or null when the text is no address. */
export function parseIp(text: string): Uint8Array | null {
  const t = text.replace(/^\[(.*)\]$/, "$1");
  return parseIpv4(t) ?? (t.includes(":") ? parseIpv6(t) : null);
}

const range = (text: string): Range => {
  const [a, p] = text.split("/") as [string, string];
  return { bytes: parseIp(a)!, prefix: Number(p), text };
};

/** IPv6 prefixes whose last 32 bits are an IPv4 address the packet goes to: IPv4-mapped and NAT64. */
const EMBEDDING_V4 = [range("::ffff:0:0/96"), range("64:ff9b::/96")];

/** The ranges never reached unless a listed CIDR inside them admits an address, with what each is. */
const GUARDED: ReadonlyArray<{ range: Range; what: string; always: boolean }> = [
  { range: range("169.254.169.254/32"), what: "the cloud metadata service's address", always: true },
  { range: range("fd00:ec2::254/128"), what: "a cloud metadata service's address (AWS, IPv6)", always: true },
  {
    range: range("100.100.100.200/32"),
    what: "a cloud metadata service's address (Alibaba Cloud)",
    always: true,
  },
  { range: range("168.63.129.16/32"), what: "a cloud platform address (Azure WireServer)", always: true },
  { range: range("169.254.0.0/16"), what: "a link-local address", always: true },
  { range: range("fe80::/10"), what: "a link-local address", always: true },
  { range: range("0.0.0.0/8"), what: "an unspecified ('this host') address", always: true },
  { range: range("::/128"), what: "the unspecified address", always: true },
  { range: range("127.0.0.0/8"), what: "a loopback address (the service's own host)", always: false },
  { range: range("::1/128"), what: "the loopback address (the service's own host)", always: false },
];

function inRange(ip: Uint8Array, r: Range): boolean {
  if (ip.length !== r.bytes.length) return false;
  let bits = r.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((ip[i]! & mask) !== (r.bytes[i]! & mask)) return false;
  }
  return true;
}

/** Whether listed range `inner` lies within `outer`. */
const within = (inner: Range, outer: Range) => inner.prefix >= outer.prefix && inRange(inner.bytes, outer);

/** The IPv4 address an IPv4-mapped or NAT64 IPv6 address carries; else the address itself. */
function effective(ip: Uint8Array): Uint8Array {
  return ip.length === 16 && EMBEDDING_V4.some((r) => inRange(ip, r)) ? ip.slice(12) : ip;
}

/**
 * Why the service must not connect to `address` (the text of an IP address), or null when it may.
 * `hostname`: the device's host name when the address was resolved from one (host patterns match it); null
 * for a literal address.
 */
export function addressRefusal(
  networks: DeviceNetworks,
  address: string,
  hostname: string | null,
): string | null {
  const parsed = parseIp(address);
  if (!parsed) return `${address} is not an IP address`;
  const ip = effective(parsed);
  const guard = GUARDED.find((g) => (g.always || networks.listed) && inRange(ip, g.range));
  const listedCidr = networks.cidrs.find((c) => inRange(ip, c));
  if (guard) {
    // A guarded address needs a listed CIDR inside its guarded range: 0.0.0.0/0 does not admit it.
    const own = GUARDED.filter((g) => inRange(ip, g.range));
    if (networks.cidrs.some((c) => inRange(ip, c) && own.some((g) => within(c, g.range)))) return null;
    return `${address} is ${guard.what}; the service connects there only when DUT_DEVICE_NETWORKS lists it ` +
      `(a CIDR within ${guard.range.text})`;
  }
  if (!networks.listed || listedCidr) return null;
  const name = hostname?.toLowerCase().replace(/\.$/, "");
  if (name && networks.hosts.some((h) => hostMatches(h, name))) return null;
  return `${address}${hostname ? ` (${hostname})` : ""} is not in DUT_DEVICE_NETWORKS`;
}

function hostMatches(p: HostPattern, name: string): boolean {
  return p.wildcard ? name.endsWith(`.${p.name}`) : name === p.name;
}

const LABEL = "[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?";
const HOST_PATTERN = new RegExp(`^(\\*\\.)?${LABEL}(\\.${LABEL})*$`);

/**
 * Parse `DUT_DEVICE_NETWORKS`: comma-separated CIDRs (`10.20.0.0/16`, `fd00:1::/64`), single addresses
 * (`192.0.2.7`) and host patterns (`fw1.lab.example`, `*.lab.example`). Returns the policy, or one message
 * per bad entry (naming it; never more of the value than the entry).
 *
 * @example
 * ```ts
 * const r = parseDeviceNetworks("127.0.0.0/8, 10.20.0.0/16, *.mgmt.lab.example");
 * if ("networks" in r) console.log(r.networks.cidrs.length); // 2
 * ```
 */
export function parseDeviceNetworks(text: string): { networks: DeviceNetworks } | { errors: string[] } {
  const errors: string[] = [];
  const cidrs: Range[] = [];
  const hosts: HostPattern[] = [];
  for (const raw of text.split(",")) {
    const entry = raw.trim();
    if (entry === "") continue;
    const q = JSON.stringify(entry);
    if (entry.includes("/")) {
      const [addr = "", prefix = "", more] = entry.split("/");
      const bytes = parseIp(addr);
      const max = bytes?.length === 4 ? 32 : 128;
      if (!bytes || more !== undefined || !/^\d{1,3}$/.test(prefix) || Number(prefix) > max) {
        errors.push(`${q} is not a CIDR (an address, "/" and a prefix length: 10.20.0.0/16, fd00:1::/64)`);
        continue;
      }
      const r: Range = { bytes, prefix: Number(prefix), text: entry };
      const base = bytes.map((b, i) => {
        const bits = Math.min(8, Math.max(0, r.prefix - i * 8));
        return b & ((0xff << (8 - bits)) & 0xff);
      });
      if (base.some((b, i) => b !== bytes[i])) {
        errors.push(`${q} has bits set after its prefix; the network is ${formatIp(base)}/${r.prefix}`);
        continue;
      }
      cidrs.push(r);
    } else if (parseIp(entry)) {
      const bytes = parseIp(entry)!;
      cidrs.push({ bytes, prefix: bytes.length * 8, text: entry });
    } else if (HOST_PATTERN.test(entry.toLowerCase()) && !/^[\d.]+$/.test(entry)) {
      const wildcard = entry.startsWith("*.");
      hosts.push({ text: entry, name: entry.toLowerCase().slice(wildcard ? 2 : 0), wildcard });
    } else {
      errors.push(
        `${q} is neither a CIDR (10.20.0.0/16), an address nor a host pattern (fw1.lab.example, *.lab.example)`,
      );
    }
  }
  if (errors.length) return { errors };
  if (!cidrs.length && !hosts.length) return { errors: ["lists no network or host"] };
  return { networks: { listed: true, cidrs, hosts } };
}

function formatIp(b: Uint8Array): string {
  if (b.length === 4) return [...b].join(".");
  const groups = [];
  for (let i = 0; i < 16; i += 2) groups.push(((b[i]! << 8) | b[i + 1]!).toString(16));
  return groups.join(":").replace(/(^|:)0(:0)+(:|$)/, "::");
}
