/**
 * A device's `baseUrl` in one form (issue 46 point 4, docs/devices.md "Registering a device"): the URL's
 * origin as WHATWG URL serialises it (lower-case scheme and host, IDN as punycode, port 443 left out, no
 * trailing slash), refused when it holds what a management URL cannot: port 0, a query, a fragment, a path
 * (unless the adapter declares `baseUrlPath`), an IPv4 address spelled other than in dotted decimal, or a
 * literal address the service must not connect to (transport/networks.ts). Every way a base URL enters the
 * registry goes through here: POST and PATCH of a device, and the lab file's plan and apply.
 *
 * @module
 */
import { addressRefusal, type DeviceNetworks, parseIp, UNLISTED } from "../transport/networks.ts";

/** What decides whether a base URL is accepted: the adapter's declaration and the allow-list. */
export interface BaseUrlRules {
  /** The adapter declares `baseUrlPath`: a path is kept (without its trailing slash). */
  pathAllowed: boolean;
  /** `DUT_DEVICE_NETWORKS` (a literal address is checked against it). */
  networks: DeviceNetworks;
}

/** The host as written in `input` (between `//` and the port, path, query or fragment), lower-case. */
function writtenHost(input: string): string | null {
  const m = /^[a-z][a-z0-9+.-]*:[/\\]*([^/?#\\]*)/i.exec(input);
  if (!m) return null;
  const authority = m[1]!.slice(m[1]!.lastIndexOf("@") + 1);
  const host = authority.startsWith("[") ? authority.slice(0, authority.indexOf("]") + 1) : authority
    .replace(/:[^:]*$/, "");
  return host.toLowerCase();
}

/**
 * The stored form of a base URL, or what is wrong with it (a message naming the part, for a problem's field
 * `baseUrl`). The URL's shape (https, no credentials) is the wire schema's (api/schemas.ts); this is the rest.
 *
 * @example
 * ```ts
 * import { UNLISTED } from "../transport/networks.ts";
 * normaliseBaseUrl("HTTPS://FW1.Lab:443/", { pathAllowed: false, networks: UNLISTED }); // { url: "https://fw1.lab" }
 * ```
 */
export function normaliseBaseUrl(input: string, rules: BaseUrlRules): { url: string } | { error: string } {
  const text = input.trim();
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return { error: "must be an https:// URL" };
  }
  if (u.protocol !== "https:") return { error: `must use https:// (not ${u.protocol}//)` };
  if (u.username || u.password) return { error: "must not carry credentials (user:password@)" };
  if (u.port === "0") return { error: "has port 0, which no device listens on; leave the port out for 443" };
  if (text.includes("#")) return { error: `must have no fragment (${JSON.stringify(u.hash || "#")})` };
  if (text.includes("?")) return { error: `must have no query (${JSON.stringify(u.search || "?")})` };
  const path = u.pathname.replace(/\/+$/, "");
  if (path !== "" && !rules.pathAllowed) {
    return {
      error: `must have no path (${JSON.stringify(u.pathname)}): the adapter's requests name their own ` +
        "paths on the device's origin (https://host[:port])",
    };
  }
  const host = u.hostname.replace(/^\[(.*)\]$/, "$1");
  const ip = parseIp(host);
  if (ip?.length === 4 && writtenHost(text) !== host) {
    return {
      error: `has host ${JSON.stringify(writtenHost(text) ?? "")}, an IPv4 address not in dotted decimal ` +
        `(URL parsers read it as ${host}); write ${host}`,
    };
  }
  if (ip) {
    const why = addressRefusal(rules.networks, host, null);
    if (why) return { error: `host ${why}` };
  }
  return { url: u.origin + (rules.pathAllowed ? path : "") };
}

/**
 * Whether two stored base URLs name the same place: equal, or equal once normalised (a URL stored as typed
 * before issue 46, like `https://FW1:443/`, is the same device address as `https://fw1`). A pin or a parked
 * session survives only a change that is no change.
 */
export function sameBaseUrl(stored: string, next: string): boolean {
  if (stored === next) return true;
  const a = normaliseBaseUrl(stored, { pathAllowed: true, networks: UNLISTED });
  const b = normaliseBaseUrl(next, { pathAllowed: true, networks: UNLISTED });
  return "url" in a && "url" in b && a.url === b.url;
}
