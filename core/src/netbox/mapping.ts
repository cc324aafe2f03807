/**
 * The NetBox mapping (issue 50, docs/netbox.md "The mapping"): how NetBox devices become the devices of a lab
 * file. A NetBox platform, manufacturer or custom field selects the vendor key; the management URL comes from
 * the primary IP, a custom field or a template; rules (by platform, manufacturer, role, site, tag, status or
 * custom field) set the role, TLS mode, tags, poll interval and the credential set. Credentials never come
 * from NetBox: the mapping's `credentials` are the lab file's references (`env:NAME`, `file:path`).
 *
 * A device no rule covers is returned in `unmapped` with its reason, never dropped silently; two NetBox
 * devices of one hostname stop the import (nothing to apply).
 *
 * @module
 */
import { z } from "@hono/zod-openapi";
import { LAB_NAME_PATTERN, LabCredential, type LabDevice, LabFile } from "../lab/file.ts";
import { DEVICE_FIELDS } from "../api/schemas.ts";

const slug = z.string().min(1).max(100);
const Match = z.object({
  platform: slug,
  manufacturer: slug,
  role: slug,
  site: slug,
  tag: slug,
  status: slug,
  customField: z.object({ name: slug, value: z.union([z.string(), z.number(), z.boolean()]) }).strict(),
}).partial().strict().meta({
  description:
    "Every field given must hold (slugs of NetBox's objects); an empty match holds for every device",
});

const VendorRule = z.union([
  z.object({ match: Match, vendor: z.string().min(1).max(100) }).strict(),
  z.object({ customField: slug }).strict().meta({
    description: "The vendor key is this custom field's value",
  }),
]);

const ManagementUrl = z.discriminatedUnion("from", [
  z.object({
    from: z.literal("primaryIp"),
    port: z.number().int().min(1).max(65_535).optional(),
    path: z.string().regex(/^\/\S*$/).optional(),
  }).strict(),
  z.object({ from: z.literal("customField"), field: slug }).strict(),
  z.object({ from: z.literal("template"), template: z.string().min(1).max(500) }).strict().meta({
    description: "https://… with {name}, {id}, {site}, {platform}, {role}, {primaryIp} and {cf.FIELD}",
  }),
]);

const Rule = z.object({
  match: Match,
  deviceRole: DEVICE_FIELDS.deviceRole.optional(),
  tlsVerifyMode: DEVICE_FIELDS.tlsVerifyMode.optional(),
  pollIntervalSeconds: DEVICE_FIELDS.pollInterval.optional(),
  tags: z.array(z.string()).max(32).optional(),
  credential: z.string().min(1).max(64).optional(),
  enabled: z.boolean().optional(),
}).strict();

export const NetBoxMapping = z.object({
  apiVersion: z.literal("dutlab/v1"),
  kind: z.literal("NetBoxMapping"),
  lab: z.string().regex(LAB_NAME_PATTERN, "must be 1-64 characters of a-z, 0-9, '.', '_' or '-'"),
  vendor: z.array(VendorRule).min(1).max(200),
  managementUrl: ManagementUrl,
  rules: z.array(Rule).max(500).optional(),
  credentials: z.record(z.string(), LabCredential),
  tags: z.object({
    netbox: z.boolean().optional().meta({ description: "NetBox's tags become device tags (default true)" }),
    site: z.boolean().optional().meta({ description: "site:<slug> becomes a device tag (default true)" }),
    role: z.boolean().optional().meta({ description: "role:<slug> becomes a device tag (default false)" }),
  }).strict().optional(),
}).strict().openapi("NetBoxMapping", {
  description:
    "How NetBox devices become lab-file devices (docs/netbox.md; example: examples/netbox-mapping.yaml)",
});
export type NetBoxMapping = z.infer<typeof NetBoxMapping>;

/** A related object as NetBox (a slug) or Nautobot 2+ (a name, no slug) answers it. */
type Related = { slug?: string; name?: string } | null;

/**
 * The parts of a NetBox device the mapping reads (NetBox 3.6+ `role`, older `device_role`). Nautobot: `location`
 * for `site`, names where there are no slugs, `status.name`, `primary_ip4`/`primary_ip6`.
 */
export interface NetBoxDevice {
  /** A number in NetBox, a UUID in Nautobot. */
  id: number | string;
  name: string | null;
  device_type?: { manufacturer?: Related } | null;
  role?: Related;
  device_role?: Related;
  platform?: Related;
  site?: Related;
  location?: Related;
  status?: { value?: unknown; name?: unknown } | null;
  primary_ip?: { address?: string } | null;
  primary_ip4?: { address?: string } | null;
  primary_ip6?: { address?: string } | null;
  tags?: Array<{ slug?: string; name?: string }>;
  custom_fields?: Record<string, unknown> | null;
}

export interface Unmapped {
  netboxId: number | string;
  name: string | null;
  reason: string;
}

/** A related object's key: NetBox's slug, else (Nautobot 2+, which has no slugs) its name. */
const key = (o: Related | undefined) =>
  typeof o?.slug === "string" ? o.slug : typeof o?.name === "string" ? o.name : undefined;

const facts = (d: NetBoxDevice) => ({
  platform: key(d.platform),
  manufacturer: key(d.device_type?.manufacturer),
  role: key(d.role ?? d.device_role),
  site: key(d.site ?? d.location),
  status: typeof d.status?.value === "string"
    ? d.status.value
    : typeof d.status?.name === "string"
    ? d.status.name
    : undefined,
  tags: (d.tags ?? []).map(key).filter((s): s is string => typeof s === "string"),
  cf: d.custom_fields ?? {},
});

/** The primary IP: NetBox's `primary_ip`, else (Nautobot) `primary_ip4`, then `primary_ip6`. */
const primaryOf = (d: NetBoxDevice) =>
  d.primary_ip?.address ?? d.primary_ip4?.address ?? d.primary_ip6?.address ?? undefined;

function matches(m: z.infer<typeof Match>, f: ReturnType<typeof facts>): boolean {
  return (m.platform === undefined || m.platform === f.platform) &&
    (m.manufacturer === undefined || m.manufacturer === f.manufacturer) &&
    (m.role === undefined || m.role === f.role) &&
    (m.site === undefined || m.site === f.site) &&
    (m.status === undefined || m.status === f.status) &&
    (m.tag === undefined || f.tags.includes(m.tag)) &&
    (m.customField === undefined || f.cf[m.customField.name] === m.customField.value);
}

const ip = (address: string) => {
  const a = address.replace(/\/\d+$/, "");
  return a.includes(":") ? `[${a}]` : a;
};

function managementUrl(map: NetBoxMapping, d: NetBoxDevice, f: ReturnType<typeof facts>): string | Unmapped {
  const miss = (reason: string): Unmapped => ({ netboxId: d.id, name: d.name, reason });
  const m = map.managementUrl;
  if (m.from === "primaryIp") {
    const primary = primaryOf(d);
    if (!primary) return miss("it has no primary IP (managementUrl.from: primaryIp)");
    return `https://${ip(primary)}${m.port ? `:${m.port}` : ""}${m.path ?? ""}`;
  }
  if (m.from === "customField") {
    const v = f.cf[m.field];
    return typeof v === "string" && v ? v : miss(`its custom field ${m.field} (the management URL) is empty`);
  }
  let missing: string | null = null;
  const out = m.template.replace(/\{(cf\.)?([A-Za-z0-9_]+)\}/g, (_, cf: string | undefined, k: string) => {
    const v = cf
      ? f.cf[k]
      : k === "name"
      ? d.name
      : k === "id"
      ? d.id
      : k === "primaryIp"
      ? (primaryOf(d) ? ip(primaryOf(d)!) : undefined)
      : (f as Record<string, unknown>)[k];
    if (v === undefined || v === null || v === "" || typeof v === "object") {
      missing ??= cf ? `custom field ${k}` : k === "primaryIp" ? "primary IP" : k;
      return "";
    }
    return encodeURI(String(v));
  });
  return missing ? miss(`the management URL template needs its ${missing}, which is empty`) : out;
}

/**
 * Maps NetBox devices to a lab file. Devices the mapping does not cover are in `unmapped` with their reason;
 * `duplicates` lists hostnames two NetBox devices map to (the import then stops: nothing to apply).
 */
export function mapDevices(
  map: NetBoxMapping,
  devices: NetBoxDevice[],
): {
  lab: LabFile;
  unmapped: Unmapped[];
  duplicates: Array<{ hostname: string; netboxIds: Array<number | string> }>;
} {
  const unmapped: Unmapped[] = [];
  const out: Array<LabDevice & { netboxId: number | string }> = [];
  for (const d of devices) {
    const miss = (reason: string) => unmapped.push({ netboxId: d.id, name: d.name, reason });
    if (!d.name) {
      miss("it has no name");
      continue;
    }
    const f = facts(d);
    let vendor: string | undefined;
    for (const v of map.vendor) {
      if ("customField" in v) {
        const val = f.cf[v.customField];
        if (typeof val === "string" && val) vendor = val;
      } else if (matches(v.match, f)) vendor = v.vendor;
      if (vendor) break;
    }
    if (!vendor) {
      miss(
        `no vendor rule covers it (platform ${f.platform ?? "none"}, manufacturer ${
          f.manufacturer ?? "none"
        })`,
      );
      continue;
    }
    const url = managementUrl(map, d, f);
    if (typeof url !== "string") {
      unmapped.push(url);
      continue;
    }
    const dev: LabDevice & { netboxId: number | string } = {
      hostname: d.name,
      vendor,
      baseUrl: url,
      netboxId: d.id,
    };
    const tags = new Set<string>([`netbox:${d.id}`]);
    if (map.tags?.netbox ?? true) { for (const t of f.tags) tags.add(t); }
    if ((map.tags?.site ?? true) && f.site) tags.add(`site:${f.site}`);
    if ((map.tags?.role ?? false) && f.role) tags.add(`role:${f.role}`);
    for (const r of map.rules ?? []) {
      if (!matches(r.match, f)) continue;
      if (r.deviceRole !== undefined) dev.deviceRole = r.deviceRole;
      if (r.tlsVerifyMode !== undefined) dev.tlsVerifyMode = r.tlsVerifyMode;
      if (r.pollIntervalSeconds !== undefined) dev.pollIntervalSeconds = r.pollIntervalSeconds;
      if (r.credential !== undefined) dev.credential = r.credential;
      if (r.enabled !== undefined) dev.enabled = r.enabled;
      for (const t of r.tags ?? []) tags.add(t);
    }
    if (!dev.credential) {
      miss("no rule chooses its credential set (credentials never come from NetBox)");
      continue;
    }
    if (!map.credentials[dev.credential]) {
      miss(`its rule names credential set ${dev.credential}, which the mapping's credentials lack`);
      continue;
    }
    dev.tags = [...tags].sort();
    const check = LabFile.shape.devices.element.safeParse(
      Object.fromEntries(Object.entries(dev).filter(([k]) => k !== "netboxId")),
    );
    if (!check.success) {
      const i = check.error.issues[0]!;
      miss(`its ${i.path.join(".") || "entry"} would be refused: ${i.message}`);
      continue;
    }
    out.push(dev);
  }
  const byHost = new Map<string, Array<number | string>>();
  for (const d of out) {
    const k = d.hostname.toLowerCase();
    byHost.set(k, [...byHost.get(k) ?? [], d.netboxId]);
  }
  const duplicates = [...byHost].filter(([, ids]) => ids.length > 1).map(([hostname, netboxIds]) => ({
    hostname,
    netboxIds,
  }));
  out.sort((a, b) => a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : 0);
  const used = new Set(out.map((d) => d.credential!));
  const lab: LabFile = {
    apiVersion: "dutlab/v1",
    kind: "Lab",
    metadata: { name: map.lab },
    credentials: Object.fromEntries(Object.entries(map.credentials).filter(([k]) => used.has(k))),
    devices: out.map(({ netboxId: _, ...d }) => d),
  };
  return { lab, unmapped, duplicates };
}
