/**
 * A local Nautobot 2.x API peer (issue 50 point 6) for tests: loopback HTTP only. It answers `/api/status/`
 * with the members of Nautobot's StatusView and `/api/dcim/devices/` (limit/offset pages, absolute `next`) in
 * Nautobot 2.x's shape: UUID ids, `location` (no site), `role`, `status`, `platform` and tags with names and no
 * slugs, `primary_ip4`, and related objects as bare references (`{id, object_type, url}`) unless `?depth=1`
 * asks for nested objects. The nested status and tags are Nautobot's own documented answers
 * (core/src/netbox/testdata/nautobot/nautobot-2.4.36.json, from its REST API overview at v2.4.36), as are the
 * device's members (the Device model's fields at that tag). Filters by name: `location`, `role`, `platform`,
 * `status`, `tag`, `name`, `q`. Tokens: `Token <40 hex>` only. No journal: Nautobot's is `/api/extras/notes/`.
 *
 * @module
 */
import type { DeviceSpec } from "./netbox_peer.ts";

const RECORDED = JSON.parse(
  await Deno.readTextFile(
    new URL("../core/src/netbox/testdata/nautobot/nautobot-2.4.36.json", import.meta.url),
  ),
) as {
  version: string;
  statusMembers: string[];
  deviceFields: string[];
  restApiOverview: { depth1: { status: Record<string, unknown>; tags: Array<Record<string, unknown>> } };
};

/** pynautobot's recorded v1-style token (Nautobot takes `Token <40 hex>`). */
export const NAUTOBOT_TOKEN = "1234567890123456789012345678901234567890";

/** A deterministic UUID for a number (the peer's ids). */
const uuidOf = (kind: string, n: number | string) => {
  const h = [...`${kind}:${n}`].reduce((a, c) => (a * 33 + c.charCodeAt(0)) >>> 0, 5381).toString(16)
    .padStart(8, "0");
  return `${h}-0000-4000-8000-${String(n).replace(/\D/g, "").padStart(12, "0").slice(-12)}`;
};

function related(kind: string, type: string, name: string | null, depth: number, extra = {}) {
  if (name === null) return null;
  const id = uuidOf(type, name);
  const url = `http://nautobot/api/${kind}/${id}/`;
  if (depth === 0) return { id, object_type: type, url };
  // Nautobot's documented nested status (depth 1), with this object's id, url and name.
  const { id: _, url: _u, notes_url: _n, name: _m, display: _d, ...rest } =
    RECORDED.restApiOverview.depth1.status;
  return { id, display: name, url, ...rest, notes_url: `${url}notes/`, name, ...extra };
}

/** A Nautobot 2.x device answer of `spec` at `depth`. */
export function nautobotDevice(s: DeviceSpec, depth: number): Record<string, unknown> {
  const id = uuidOf("dcim.device", s.id);
  const status = (s.status ?? "active").replace(/^./, (c) => c.toUpperCase());
  const ip = s.primaryIp === undefined ? `127.0.${(s.id >> 8) & 255}.${s.id & 255}/32` : s.primaryIp;
  const [tag] = RECORDED.restApiOverview.depth1.tags;
  const fields: Record<string, unknown> = Object.fromEntries(RECORDED.deviceFields.map((f) => [f, null]));
  return {
    id,
    object_type: "dcim.device",
    display: s.name,
    url: `http://nautobot/api/dcim/devices/${id}/`,
    ...fields,
    name: s.name,
    device_type: related("dcim/device-types", "dcim.devicetype", "model-1", depth, {
      model: "model-1",
      // One level only: the device type's manufacturer stays a URL at depth 1.
      manufacturer: `http://nautobot/api/dcim/manufacturers/${
        uuidOf("dcim.manufacturer", s.manufacturer ?? "x")
      }/`,
    }),
    status: related("extras/statuses", "extras.status", status, depth),
    role: related("extras/roles", "extras.role", s.role, depth),
    platform: related("dcim/platforms", "dcim.platform", s.platform, depth, { network_driver: s.platform }),
    location: related("dcim/locations", "dcim.location", s.site, depth),
    primary_ip4: ip === null ? null : depth === 0
      ? {
        id: uuidOf("ipam.ipaddress", s.id),
        object_type: "ipam.ipaddress",
        url: "http://nautobot/api/ipam/",
      }
      : { id: uuidOf("ipam.ipaddress", s.id), display: ip, address: ip, host: ip.replace(/\/\d+$/, "") },
    serial: "",
    face: "",
    comments: "",
    tags: (s.tags ?? []).map((t) =>
      depth === 0
        ? { id: uuidOf("extras.tag", t), object_type: "extras.tag", url: "http://nautobot/api/extras/tags/" }
        : { ...tag, id: uuidOf("extras.tag", t), display: t, name: t }
    ),
    custom_fields: s.customFields ?? {},
    notes_url: `http://nautobot/api/dcim/devices/${id}/notes/`,
    created: "2026-01-05T10:00:00.000000Z",
    last_updated: "2026-01-05T10:00:00.000000Z",
  };
}

function matches(s: DeviceSpec, key: string, values: string[]): boolean | null {
  const status = (s.status ?? "active").replace(/^./, (c) => c.toUpperCase());
  switch (key) {
    case "location":
      return values.includes(s.site);
    case "role":
      return values.includes(s.role);
    case "platform":
      return values.includes(s.platform ?? "null");
    case "status":
      return values.includes(status);
    case "tag":
      return values.every((v) => (s.tags ?? []).includes(v));
    case "name":
      return values.includes(String(s.name));
    case "q":
      return values.some((v) => String(s.name ?? "").toLowerCase().includes(v.toLowerCase()));
  }
  return null;
}

export function startNautobotPeer(o: { devices: DeviceSpec[]; token?: string }) {
  const token = o.token ?? NAUTOBOT_TOKEN;
  const requests: Array<
    { path: string; query: string; authorization: string | null; accept: string | null }
  > = [];
  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (r) => {
    const u = new URL(r.url);
    requests.push({
      path: u.pathname,
      query: u.search,
      authorization: r.headers.get("authorization"),
      accept: r.headers.get("accept"),
    });
    if (r.headers.get("authorization") !== `Token ${token}`) {
      return json(403, { detail: "Authentication credentials were not provided." });
    }
    if (u.pathname === "/api/status/") {
      const values: Record<string, unknown> = {
        "django-version": "4.2.22",
        "installed-apps": { "nautobot.dcim": null },
        "nautobot-version": RECORDED.version,
        "nautobot-apps": {},
        plugins: {},
        "python-version": "3.12.3",
        "celery-workers-running": 1,
      };
      return json(200, Object.fromEntries(RECORDED.statusMembers.map((k) => [k, values[k]])));
    }
    if (u.pathname === "/api/dcim/devices/") {
      const filters = new Map<string, string[]>();
      for (const [k, v] of u.searchParams) {
        if (!["limit", "offset", "depth"].includes(k)) filters.set(k, [...filters.get(k) ?? [], v]);
      }
      const all = o.devices.filter((d) => [...filters].every(([k, v]) => matches(d, k, v) !== false));
      const limit = Math.min(Number(u.searchParams.get("limit") ?? 50) || 1000, 1000);
      const offset = Number(u.searchParams.get("offset") ?? 0);
      const depth = Number(u.searchParams.get("depth") ?? 0);
      const next = new URL(u);
      next.searchParams.set("offset", String(offset + limit));
      return json(200, {
        count: all.length,
        next: offset + limit < all.length ? next.href : null,
        previous: null,
        results: all.slice(offset, offset + limit).map((d) => nautobotDevice(d, depth)),
      });
    }
    return json(404, { detail: "Not found." });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    token,
    requests,
    close: () => server.shutdown(),
  };
}
