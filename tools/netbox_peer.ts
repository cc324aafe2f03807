/**
 * A local NetBox API peer (issue 50) for tests, the docs and the benchmark: loopback HTTP(S) only. It serves
 * `/api/status/`, `/api/dcim/devices/` (NetBox's filters, `limit`/`offset` pagination with absolute `next`
 * links, MAX_PAGE_SIZE 1000) and `POST /api/extras/journal-entries/`, each answer shaped like NetBox's: the
 * devices are pynetbox's recorded device (core/src/netbox/testdata/pynetbox/dcim_device.json, Apache-2.0)
 * with their own id, name, role, platform, site, status, primary IP, tags and custom fields, in NetBox 4.x
 * form (status `{value: "active"}`). Every request's `Authorization` header is checked and recorded.
 *
 * - `deno task netbox:peer [--sim] [--count N] [--port P] [--ready-file F] [--lifetime SECONDS]
 *   [--netbox-version 3.7.7|4.2.2|4.5.2]`: `--sim`
 *   makes one NetBox device per running `deno task lab` simulator (`lab-<vendor>`, its URL in custom field
 *   `dutlab_url`) plus two devices no mapping covers; `--ready-file` gets `export NETBOX_URL=… NETBOX_TOKEN=… NETBOX_PEER_PID=…`.
 *
 * @module
 */
const FIXTURE = JSON.parse(
  await Deno.readTextFile(new URL("../core/src/netbox/testdata/pynetbox/dcim_device.json", import.meta.url)),
) as Record<string, unknown>;

/** The v2 token the peer accepts unless told otherwise (pynetbox's recorded v2 key and token). */
export const PEER_TOKEN = "nbt_shortkey1234567.plaintexttoken7890abcdef1234567890abcdef";
export const PEER_VERSION = "4.5.2";
/** pynetbox's recorded v1 (legacy) token: what a NetBox before 4.5 accepts, as `Token <40 hex>`. */
export const PEER_V1_TOKEN = "1234567890123456789012345678901234567890";

/**
 * What differs between the NetBox releases the peer can be (`PeerOptions.version`), each from NetBox's own
 * code or published schema (core/src/netbox/testdata/SOURCE.md): the `/api/status/` members (StatusView at
 * the release tag), the Authorization keywords (`Bearer` with v2 `nbt_` tokens from 4.5), and the device's
 * members (3.7 answers the deprecated `device_role` beside `role` and has no `display_url`; the cooling
 * counts are newer than 4.2).
 */
export function releaseOf(version: string) {
  const [major, minor] = version.split(".").map(Number) as [number, number];
  const at = (ma: number, mi: number) => major > ma || (major === ma && minor >= mi);
  return {
    v2Tokens: at(4, 5),
    statusMembers: at(4, 5) ? "4.5" as const : "3.7" as const,
    deviceRole: !at(4, 0),
    displayUrl: at(4, 0),
    coolingCounts: at(4, 5),
  };
}

export interface DeviceSpec {
  id: number;
  name: string | null;
  site: string;
  role: string;
  platform: string | null;
  manufacturer?: string;
  status?: string;
  primaryIp?: string | null;
  tags?: string[];
  customFields?: Record<string, unknown>;
}

const ref = (kind: string, id: number, slug: string) => ({
  id,
  url: `http://localhost:8000/api/dcim/${kind}/${id}/`,
  display: slug,
  name: slug,
  slug,
});
const idOf = (s: string) => [...s].reduce((a, c) => (a * 31 + c.charCodeAt(0)) % 9973, 7) + 1;

/** A NetBox device object: pynetbox's recorded device with the spec's values. */
export function deviceObject(s: DeviceSpec): Record<string, unknown> {
  const ip = s.primaryIp === undefined ? `127.0.${(s.id >> 8) & 255}.${s.id & 255}/32` : s.primaryIp;
  const addr = ip === null
    ? null
    : { id: s.id, url: `http://localhost:8000/api/ipam/ip-addresses/${s.id}/`, family: 4, address: ip };
  return {
    ...FIXTURE,
    id: s.id,
    url: `http://localhost:8000/api/dcim/devices/${s.id}/`,
    name: s.name,
    display_name: s.name,
    display: s.name,
    device_type: {
      ...(FIXTURE.device_type as object),
      manufacturer: ref("manufacturers", idOf(s.manufacturer ?? "dutlab"), s.manufacturer ?? "dutlab"),
    },
    role: ref("device-roles", idOf(s.role), s.role),
    platform: s.platform === null ? null : ref("platforms", idOf(s.platform), s.platform),
    site: ref("sites", idOf(s.site), s.site),
    status: {
      value: s.status ?? "active",
      label: (s.status ?? "active").replace(/^./, (c) => c.toUpperCase()),
    },
    primary_ip: addr,
    primary_ip4: addr,
    tags: (s.tags ?? []).map((t) => ({
      id: idOf(t),
      url: `http://localhost:8000/api/extras/tags/${idOf(t)}/`,
      name: t,
      slug: t,
    })),
    custom_fields: s.customFields ?? {},
    // pynetbox's recorded face is NetBox 2.x's integer; NetBox 3.x and 4.x answer the choice's string.
    face: { value: "front", label: "Front" },
    // The members NetBox 4.x answers beside the recorded ones (required by its OpenAPI document's Device).
    display_url: `http://localhost:8000/dcim/devices/${s.id}/`,
    parent_device: null,
    created: "2026-01-05T10:00:00.000000Z",
    last_updated: "2026-01-05T10:00:00.000000Z",
    ...Object.fromEntries(COUNTS.map((k) => [k, 0])),
  };
}

const COUNTS = [
  "console_port_count",
  "console_server_port_count",
  "power_port_count",
  "power_outlet_count",
  "cooling_intake_count",
  "cooling_outflow_count",
  "interface_count",
  "front_port_count",
  "rear_port_count",
  "device_bay_count",
  "module_bay_count",
  "inventory_item_count",
];

/** `count` devices over 3 sites, 3 roles, 5 platforms and 4 tags (deterministic). */
export function generatedDevices(count: number): DeviceSpec[] {
  const plat = [["vendor-a-ngfw", "firewall"], ["vendor-b-ngfw", "firewall"], ["vendor-c-ngfw", "firewall"], [
    "vendor-a-switch",
    "switch",
  ], ["vendor-a-bmc", "bmc"]] as const;
  return Array.from({ length: count }, (_, i) => {
    const [platform, role] = plat[i % plat.length]!;
    return {
      id: i + 1,
      name: `nb-${platform}-${String(i + 1).padStart(5, "0")}`,
      site: ["lab-a", "lab-b", "lab-c"][i % 3]!,
      role,
      platform,
      manufacturer: platform.replace(/-(ngfw|switch|bmc)$/, ""),
      tags: [["dut"], ["dut", "ha"], ["dut", "perf"], ["spare"]][i % 4]!,
      customFields: { owner: i % 2 ? "team-red" : "team-blue" },
    };
  });
}

export interface Request {
  method: string;
  path: string;
  query: string;
  authorization: string | null;
}

export interface PeerOptions {
  devices?: DeviceSpec[];
  /** The token the peer accepts (default: PEER_TOKEN, or PEER_V1_TOKEN before NetBox 4.5). */
  token?: string;
  /** The NetBox release the peer answers as (default PEER_VERSION): 3.7.x, 4.2.x, 4.5+ (see releaseOf). */
  version?: string;
  port?: number;
  cert?: { certPem: string; keyPem: string };
}

/** Faults the peer can be told to answer with (tests of the bad-input cases). */
export type Fault =
  | "not-json"
  | "repeat-page"
  | "endless-next"
  | "foreign-next"
  | "429-once"
  | "forbid-journal"
  | "journal-missing-object"
  | "journal-500-once"
  | "journal-429-once";

/** The device filters the peer applies as NetBox does (any other query parameter is ignored, as NetBox does). */
export const PEER_FILTERS = [
  "site",
  "role",
  "platform",
  "manufacturer",
  "status",
  "tag",
  "name",
  "id",
  "q",
  "has_primary_ip",
] as const;

function matches(d: Record<string, unknown>, key: string, values: string[]): boolean | null {
  const slug = (o: unknown) => (o as { slug?: string } | null)?.slug;
  switch (key) {
    case "site":
    case "role":
    case "platform":
      return values.includes(slug(d[key]) ?? "null");
    case "manufacturer":
      return values.includes(slug((d.device_type as { manufacturer: unknown }).manufacturer) ?? "");
    case "status":
      return values.includes((d.status as { value: string }).value);
    case "tag": // NetBox's tag filter is conjoined: every tag named
      return values.every((v) => (d.tags as Array<{ slug: string }>).some((t) => t.slug === v));
    case "name":
      return values.includes(String(d.name));
    case "id":
      return values.includes(String(d.id));
    case "q":
      return values.some((v) => String(d.name ?? "").toLowerCase().includes(v.toLowerCase()));
    case "has_primary_ip":
      return values.includes(String(d.primary_ip !== null));
  }
  if (key.startsWith("cf_")) {
    return values.includes(String((d.custom_fields as Record<string, unknown>)[key.slice(3)]));
  }
  return null; // NetBox ignores a query parameter that is no filter
}

/** A device object as the release answers it (`deviceObject` is the 4.5+ form). */
function asRelease(d: Record<string, unknown>, r: ReturnType<typeof releaseOf>): Record<string, unknown> {
  const out = { ...d };
  if (r.deviceRole) out.device_role = out.role;
  if (!r.displayUrl) delete out.display_url;
  if (!r.coolingCounts) { for (const k of ["cooling_intake_count", "cooling_outflow_count"]) delete out[k]; }
  return out;
}

/** The `/api/status/` answer of the release: StatusView's members at its tag. */
function statusOf(version: string, r: ReturnType<typeof releaseOf>): Record<string, unknown> {
  const apps = { django_filters: "25.1", django_tables2: "2.7.5", rest_framework: "3.16.0" };
  return r.statusMembers === "4.5"
    ? {
      "django-version": "5.2.8",
      hostname: "netbox",
      installed_apps: apps,
      "netbox-version": version,
      "netbox-full-version": `${version}-Docker-3.4.1`,
      plugins: {},
      "python-version": "3.12.3",
      "rq-workers-running": 1,
    }
    : {
      "django-version": "4.2.11",
      "installed-apps": apps,
      "netbox-version": version,
      plugins: {},
      "python-version": "3.11.4",
      "rq-workers-running": 1,
    };
}

export function startNetBoxPeer(o: PeerOptions = {}) {
  const version = o.version ?? PEER_VERSION;
  const release = releaseOf(version);
  const token = o.token ?? (release.v2Tokens ? PEER_TOKEN : PEER_V1_TOKEN);
  const expected = /^nbt_/.test(token) ? `Bearer ${token}` : `Token ${token}`;
  const requests: Request[] = [];
  const journal: Array<Record<string, unknown>> = [];
  const faults = new Set<Fault>();
  const objects = (specs: DeviceSpec[]) => specs.map((d) => asRelease(deviceObject(d), release));
  let devices = objects(o.devices ?? generatedDevices(12));
  const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
    new Response(JSON.stringify(body), {
      status,
      headers: { "content-type": "application/json", ...headers },
    });
  const handler = async (req: Request | globalThis.Request): Promise<Response> => {
    const r = req as globalThis.Request;
    const u = new URL(r.url);
    requests.push({
      method: r.method,
      path: u.pathname,
      query: u.search,
      authorization: r.headers.get("authorization"),
    });
    const auth = r.headers.get("authorization") ?? "";
    // Before 4.5 NetBox knows only the `Token` keyword: another one is no authentication at all.
    if (!release.v2Tokens && !/^Token /i.test(auth)) {
      return json(403, { detail: "Authentication credentials were not provided." });
    }
    if (auth !== expected) {
      return json(403, { detail: release.v2Tokens ? "Invalid v2 token" : "Invalid token" });
    }
    if (faults.has("429-once")) {
      faults.delete("429-once");
      return json(429, { detail: "Request was throttled." }, { "retry-after": "1" });
    }
    if (u.pathname === "/api/status/" && r.method === "GET") return json(200, statusOf(version, release));
    if (u.pathname === "/api/dcim/devices/" && r.method === "GET") {
      if (faults.has("not-json")) {
        return new Response("<html>502 Bad Gateway</html>", {
          status: 200,
          headers: { "content-type": "text/html" },
        });
      }
      const filters = new Map<string, string[]>();
      for (const [k, v] of u.searchParams) {
        if (["limit", "offset", "brief", "fields", "omit", "exclude", "ordering", "format"].includes(k)) {
          continue;
        }
        filters.set(k, [...filters.get(k) ?? [], v]);
      }
      const all = devices.filter((d) => [...filters].every(([k, v]) => matches(d, k, v) !== false));
      const limit = Math.min(Number(u.searchParams.get("limit") ?? 50) || 1000, 1000);
      let offset = Number(u.searchParams.get("offset") ?? 0);
      if (faults.has("repeat-page")) offset = 0;
      const page = all.slice(offset, offset + limit);
      const nextUrl = new URL(u);
      nextUrl.searchParams.set("offset", String(offset + limit));
      if (faults.has("foreign-next")) nextUrl.hostname = "netbox.example.com";
      const more = offset + limit < all.length || faults.has("endless-next");
      return json(200, {
        count: all.length,
        next: more ? nextUrl.href : null,
        previous: offset > 0 ? u.href : null,
        results: faults.has("endless-next") ? [] : page,
      });
    }
    if (u.pathname === "/api/extras/journal-entries/" && r.method === "POST") {
      if (faults.has("journal-500-once")) {
        faults.delete("journal-500-once");
        return new Response("<h1>Server Error (500)</h1>", {
          status: 500,
          headers: { "content-type": "text/html" },
        });
      }
      if (faults.has("journal-429-once")) {
        faults.delete("journal-429-once");
        return json(429, { detail: "Request was throttled. Expected available in 7 seconds." }, {
          "retry-after": "7",
        });
      }
      if (faults.has("forbid-journal")) {
        return json(403, { detail: "You do not have permission to perform this action." });
      }
      const body = await r.json() as Record<string, unknown>;
      const target = devices.find((d) => d.id === body.assigned_object_id);
      if (faults.has("journal-missing-object") || !target) {
        return json(400, {
          assigned_object_id: [
            `Related object not found using the provided numeric ID: ${body.assigned_object_id}`,
          ],
        });
      }
      const entry = {
        id: journal.length + 1,
        url: `http://localhost:8000/api/extras/journal-entries/${journal.length + 1}/`,
        display_url: `http://localhost:8000/extras/journal-entries/${journal.length + 1}/`,
        display: new Date().toISOString(),
        assigned_object_type: body.assigned_object_type,
        assigned_object_id: body.assigned_object_id,
        assigned_object: { id: target.id, url: target.url, display: target.name, name: target.name },
        created: new Date().toISOString(),
        created_by: 1,
        kind: { value: body.kind, label: String(body.kind).replace(/^./, (c) => c.toUpperCase()) },
        comments: body.comments,
        tags: [],
        custom_fields: {},
        last_updated: new Date().toISOString(),
      };
      journal.push(entry);
      return json(201, entry);
    }
    return json(404, { detail: "Not found." });
  };
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: o.port ?? 0,
    onListen: () => {},
    ...(o.cert ? { cert: o.cert.certPem, key: o.cert.keyPem } : {}),
  }, handler);
  const url = `${o.cert ? "https" : "http"}://127.0.0.1:${server.addr.port}`;
  return {
    url,
    token,
    requests,
    journal,
    faults,
    setDevices(d: DeviceSpec[]) {
      devices = objects(d);
    },
    get devices() {
      return devices;
    },
    close: () => server.shutdown(),
  };
}

/**
 * The running `deno task lab` as NetBox would hold it: one device per simulator under the name the tour
 * registered (`lab-<vendor>`, its URL in custom field `dutlab_url`), plus two devices no mapping covers.
 */
async function simDevices(): Promise<DeviceSpec[]> {
  const dataDir = Deno.env.get("DUT_DATA_DIR") || "./.data";
  const state = JSON.parse(await Deno.readTextFile(`${dataDir}/lab/state.json`)) as {
    devices: Record<string, { port: number }>;
  };
  const role = (v: string) => v.endsWith("-bmc") ? "bmc" : v.endsWith("-switch") ? "switch" : "firewall";
  const out: DeviceSpec[] = Object.entries(state.devices).sort().map(([vendor, s], i) => ({
    id: 101 + i,
    name: `lab-${vendor}`,
    site: i % 2 ? "lab-b" : "lab-a",
    role: role(vendor),
    platform: vendor,
    manufacturer: vendor.replace(/-(ngfw|switch|bmc)$/, ""),
    tags: ["dut"],
    customFields: { dutlab_url: `https://127.0.0.1:${s.port}` },
  }));
  out.push({
    id: 201,
    name: "nb-unknown-router",
    site: "lab-a",
    role: "router",
    platform: "vendor-z-os",
    tags: ["dut"],
  });
  out.push({
    id: 202,
    name: "nb-spare-switch",
    site: "lab-b",
    role: "switch",
    platform: null,
    tags: ["spare"],
  });
  return out;
}

if (import.meta.main) {
  const { parseArgs } = await import("node:util");
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      sim: { type: "boolean" },
      count: { type: "string" },
      port: { type: "string" },
      "ready-file": { type: "string" },
      lifetime: { type: "string" },
      "netbox-version": { type: "string" },
    },
  });
  const devices = values.sim ? await simDevices() : generatedDevices(Number(values.count ?? 12));
  const peer = await startNetBoxPeer({
    devices,
    port: values.port ? Number(values.port) : 0,
    version: values["netbox-version"],
  });
  const env = `export NETBOX_URL=${peer.url} NETBOX_TOKEN=${peer.token} NETBOX_PEER_PID=${Deno.pid}\n`;
  if (values["ready-file"]) await Deno.writeTextFile(values["ready-file"], env);
  console.log(`NetBox peer on ${peer.url} (${devices.length} devices; token ${peer.token.slice(0, 8)}…)`);
  const lifetime = Number(values.lifetime ?? 0);
  if (lifetime > 0) setTimeout(() => Deno.exit(0), lifetime * 1000);
}
