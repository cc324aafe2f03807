/**
 * The plan and the apply of a lab file (issue 35, docs/lab-as-code.md): what a lab file would change in
 * the registry (a dry run that changes nothing), and the whole plan applied in one database transaction
 * guarded by the lab's generation.
 *
 * Secrets: the client resolves each credential's reference and sends the passwords beside the file
 * (`secrets`, by credential name). A password is compared only through its keyed fingerprint
 * (`passwordFingerprint`), stored encrypted, and never put in a plan, an error or a log line.
 *
 * @module
 */
import type { Kysely, Transaction } from "kysely";
import type { Database } from "../db/schema.ts";
import type { Registry } from "../registry.ts";
import type { DeviceRow, KeyRing } from "../devices/store.ts";
import { foldTags } from "../devices/store.ts";
import { normaliseBaseUrl, sameBaseUrl } from "../devices/base_url.ts";
import { type DeviceNetworks, UNLISTED } from "../transport/networks.ts";
import { fingerprintMatches } from "../devices/credentials.ts";
import { type FieldError, InvalidInputError } from "../errors.ts";
import { jcsSha256 } from "../util/hash.ts";
import type { LabFile } from "./file.ts";
import { planTestbeds, type TestbedPlanEntry } from "./plan_testbeds.ts";

/** What a prune does to a device this lab manages that the file no longer lists. */
export type PruneMode = "disable" | "delete";

/** A lab file with its resolved secrets and the apply's options (the body of the plan and apply routes). */
export interface LabRequest {
  lab: LabFile;
  /** Passwords by credential name, resolved by the client from the file's references. */
  secrets: Record<string, string>;
  prune?: PruneMode;
  adopt?: boolean;
}

/** One device field that changes: its old and new value (never a credential). */
export interface FieldChange {
  field: string;
  old: unknown;
  new: unknown;
}

/** One line of a plan. */
export interface PlanEntry {
  hostname: string;
  action: "create" | "update" | "remove" | "unchanged" | "conflict";
  /** The registered device, null for a create. */
  deviceId: string | null;
  /** The hostname the device is renamed from (`movedFrom`), else null. */
  movedFrom: string | null;
  changes: FieldChange[];
  /** `set` for a create, `changed`/`unchanged` for a listed device, null for a removal or a conflict. */
  credential: "set" | "changed" | "unchanged" | null;
  /** Why a conflict is one, or what a removal does (`disable`, `delete`); else null. */
  reason: string | null;
}

/** A plan: the stable form `dutlab lab diff --json` prints. */
export interface LabPlan {
  lab: string;
  /** The lab's generation the plan was made on (0 for a lab never applied). */
  generation: number;
  /** `sha256:` + SHA-256 of the plan's canonical JSON (RFC 8785) without this member. */
  planHash: string;
  prune: PruneMode | null;
  adopt: boolean;
  summary: { create: number; update: number; remove: number; unchanged: number; conflict: number };
  devices: PlanEntry[];
  /** The testbeds the file declares, and the lab's testbeds it no longer declares (removed by the apply). */
  testbeds: TestbedPlanEntry[];
  /** Devices this lab manages that the file does not list and no prune was asked for (left as they are). */
  notInFile: string[];
}

/** A device of the file with `defaults` applied and its built-in defaults filled in. */
export interface Desired {
  index: number;
  hostname: string;
  vendor: string;
  deviceRole: string;
  baseUrl: string;
  username: string;
  password: string;
  tlsVerifyMode: string;
  pollIntervalSeconds: number;
  notes: string | null;
  enabled: boolean;
  tags: string[];
  movedFrom: string[];
}

/**
 * A lab device's base URL in the form the registry stores (devices/base_url.ts), so that plans compare like with
 * like; when it is refused, `fail` gets the message and the URL is returned as written.
 */
function labBaseUrl(
  registry: Registry,
  vendor: string | undefined,
  baseUrl: string | undefined,
  networks: DeviceNetworks,
  fail: (message: string) => void,
): string | undefined {
  if (baseUrl === undefined) return undefined;
  const pathAllowed = vendor !== undefined && registry.adapters.get(vendor)?.adapter.baseUrlPath === true;
  const r = normaliseBaseUrl(baseUrl, { pathAllowed, networks });
  if ("url" in r) return r.url;
  fail(r.error);
  return baseUrl;
}

/**
 * The file's devices with `defaults` applied, checked against the service's rules (vendor available, role
 * valid, required fields present, credential named and resolved, hostnames unique, compared
 * case-insensitively, base URLs in the registry's form). Throws one 422 listing
 * every error with its JSON path.
 */
export function resolveLab(
  registry: Registry,
  req: LabRequest,
  networks: DeviceNetworks = UNLISTED,
): Desired[] {
  const errors: FieldError[] = [];
  const { lab, secrets } = req;
  const defaults = lab.defaults ?? {};
  const seen = new Map<string, string>();
  const out: Desired[] = [];
  const unresolved = new Set<string>();
  lab.devices.forEach((d, i) => {
    const at = (f: string) =>
      (d as Record<string, unknown>)[f] !== undefined ? `$.devices[${i}].${f}` : `$.defaults.${f}`;
    const pick = <K extends keyof typeof defaults>(k: K) => (d[k] ?? defaults[k]) as (typeof defaults)[K];
    const errs: FieldError[] = [];
    const vendor = pick("vendor");
    const urlError = (message: string) => errs.push({ field: at("baseUrl"), message });
    const baseUrl = labBaseUrl(registry, vendor, pick("baseUrl"), networks, urlError);
    const credential = pick("credential");
    for (const [f, v] of [["vendor", vendor], ["baseUrl", baseUrl], ["credential", credential]] as const) {
      if (v === undefined) {
        errs.push({ field: `$.devices[${i}].${f}`, message: "is required (here or in defaults)" });
      }
    }
    if (vendor !== undefined) {
      const v = registry.vendors.find((x) => x.key === vendor);
      if (!v) {
        errs.push({
          field: at("vendor"),
          message: `unknown vendor ${JSON.stringify(vendor)}; known: ${
            registry.vendors.map((x) => x.key).join(", ")
          }`,
        });
      } else if (!v.available) errs.push({ field: at("vendor"), message: `${vendor} has no adapter yet` });
    }
    const role = pick("deviceRole") ??
      (vendor !== undefined ? registry.adapters.get(vendor)?.adapter.deviceRoles[0] : undefined);
    if (pick("deviceRole") !== undefined && !registry.deviceRoles.includes(role!)) {
      errs.push({
        field: at("deviceRole"),
        message: `unknown role ${JSON.stringify(role)}; the enabled adapters' roles are: ${
          registry.deviceRoles.join(", ")
        }`,
      });
    }
    const cred = credential !== undefined ? lab.credentials?.[credential] : undefined;
    if (credential !== undefined && !cred) {
      errs.push({
        field: at("credential"),
        message: `names no entry of credentials (${JSON.stringify(credential)})`,
      });
    }
    const password = credential !== undefined ? secrets[credential] : undefined;
    if (cred && password === undefined) unresolved.add(credential!);
    const prior = seen.get(d.hostname.toLowerCase());
    if (prior) {
      errs.push({ field: `$.devices[${i}].hostname`, message: `is listed twice (also at ${prior})` });
    }
    seen.set(d.hostname.toLowerCase(), `$.devices[${i}].hostname`);
    (d.movedFrom ?? []).forEach((m, j) => {
      const p = seen.get(m.toLowerCase());
      if (p) errs.push({ field: `$.devices[${i}].movedFrom[${j}]`, message: `is also listed at ${p}` });
      seen.set(m.toLowerCase(), `$.devices[${i}].movedFrom[${j}]`);
    });
    errors.push(...errs);
    if (errs.length || !cred || password === undefined) return;
    out.push({
      index: i,
      hostname: d.hostname,
      vendor: vendor!,
      deviceRole: role!,
      baseUrl: baseUrl!,
      username: cred.username,
      password,
      tlsVerifyMode: pick("tlsVerifyMode") ?? "strict",
      pollIntervalSeconds: pick("pollIntervalSeconds") ?? 300,
      notes: pick("notes") ?? null,
      enabled: pick("enabled") ?? true,
      tags: foldTags(pick("tags") ?? []),
      movedFrom: d.movedFrom ?? [],
    });
  });
  for (const name of unresolved) {
    errors.push({
      field: `$.credentials[${JSON.stringify(name)}].password`.replace(
        /\["([A-Za-z_][A-Za-z0-9_]*)"\]/,
        ".$1",
      ),
      message: "was not resolved (the client sends the referenced password in `secrets`)",
    });
  }
  if (errors.length) {
    throw new InvalidInputError(`The lab file breaks ${errors.length} rule(s) of the service`, {
      errors,
      unprocessable: true,
    });
  }
  return out;
}

type Db = Kysely<Database> | Transaction<Database>;

/** The compared fields: plan field name → device row column. */
export const FIELDS = [
  ["hostname", "hostname"],
  ["deviceRole", "device_role"],
  ["baseUrl", "base_url"],
  ["username", "username"],
  ["tlsVerifyMode", "tls_verify_mode"],
  ["pollIntervalSeconds", "poll_interval_seconds"],
  ["notes", "notes"],
  ["enabled", "enabled"],
  ["tags", "tags"],
] as const;

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** A plan with the rows and desired devices it was made from (what the apply executes). */
export interface Planned {
  plan: LabPlan;
  rows: Map<string, DeviceRow>;
  desired: Map<number, Desired>;
  /** The lab's devices before the plan (for the prune guard). */
  managedCount: number;
}

/** The plan of `req` against the device rows of `db` (locked `FOR UPDATE` when `lock`). */
export async function makePlan(
  db: Db,
  registry: Registry,
  keys: KeyRing,
  req: LabRequest,
  lock: boolean,
  networks: DeviceNetworks = UNLISTED,
): Promise<Planned> {
  const name = req.lab.metadata.name;
  const desired = resolveLab(registry, req, networks);
  const labRow = await db.selectFrom("labs").select("generation").where("name", "=", name).executeTakeFirst();
  const generation = labRow ? Number(labRow.generation) : 0;
  let q = db.selectFrom("devices").selectAll().orderBy("hostname");
  if (lock) q = q.forUpdate();
  const all = await q.execute();
  // A row by its exact host name first, else by the name in lower case (host names compare
  // case-insensitively; of two rows kept from an old clash, the exact spelling wins).
  const exact = new Map(all.map((r) => [r.hostname, r]));
  const folded = new Map<string, DeviceRow>();
  for (const r of all) if (!folded.has(r.hostname.toLowerCase())) folded.set(r.hostname.toLowerCase(), r);
  const byHost = { get: (h: string) => exact.get(h) ?? folded.get(h.toLowerCase()) };
  const matched = new Set<string>();
  const entries: PlanEntry[] = [];
  const byIndex = new Map<number, Desired>();
  const ownerProblem = (r: DeviceRow) =>
    r.managed_by !== null && r.managed_by !== name
      ? `managed by lab ${JSON.stringify(r.managed_by)}`
      : r.managed_by === null && !req.adopt
      ? "registered outside any lab (apply --adopt takes it over)"
      : null;
  for (const d of desired) {
    byIndex.set(d.index, d);
    let row = byHost.get(d.hostname);
    let from: string | null = null;
    if (!row) {
      for (const m of d.movedFrom) {
        const r = byHost.get(m);
        if (r && !matched.has(r.id)) {
          row = r;
          from = m;
          break;
        }
      }
    }
    const base = { hostname: d.hostname, movedFrom: from, changes: [] as FieldChange[] };
    if (!row) {
      entries.push({ ...base, action: "create", deviceId: null, credential: "set", reason: null });
      continue;
    }
    matched.add(row.id);
    const owner = ownerProblem(row);
    if (owner || row.vendor !== d.vendor) {
      entries.push({
        ...base,
        action: "conflict",
        deviceId: row.id,
        credential: null,
        reason: owner ??
          `registered with vendor ${JSON.stringify(row.vendor)}; a device's vendor cannot change ` +
            "(remove it from the file, apply --prune=delete, then add it again)",
      });
      continue;
    }
    const want: Record<string, unknown> = { ...d };
    for (const [field, col] of FIELDS) {
      const old = col === "tags" ? row.tags ?? [] : row[col];
      // A URL stored as typed before issue 46 (`https://FW1:443/`) is no change from its normal form.
      const unchanged = field === "baseUrl"
        ? sameBaseUrl(String(old), String(want[field]))
        : same(old, want[field]);
      if (!unchanged) base.changes.push({ field, old, new: want[field] });
    }
    if (row.managed_by !== name) base.changes.push({ field: "managedBy", old: row.managed_by, new: name });
    const credOk = await fingerprintMatches(keys.all, row.id, d.password, row.password_fp);
    entries.push({
      ...base,
      action: base.changes.length || !credOk ? "update" : "unchanged",
      deviceId: row.id,
      credential: credOk ? "unchanged" : "changed",
      reason: null,
    });
  }
  const managed = all.filter((r) => r.managed_by === name);
  const notInFile = pruneEntries(managed, matched, req, entries);
  const summary = { create: 0, update: 0, remove: 0, unchanged: 0, conflict: 0 };
  for (const e of entries) summary[e.action]++;
  const body = {
    lab: name,
    generation,
    prune: req.prune ?? null,
    adopt: req.adopt ?? false,
    summary,
    devices: entries,
    testbeds: await planTestbeds(db, name, req.lab.testbeds),
    notInFile,
  };
  const plan: LabPlan = { ...body, planHash: `sha256:${await jcsSha256(body)}` };
  return { plan, rows: new Map(all.map((r) => [r.id, r])), desired: byIndex, managedCount: managed.length };
}

/** The plan of a lab file against the registry: a dry run that changes nothing. */
export async function planLab(
  db: Kysely<Database>,
  registry: Registry,
  keys: KeyRing,
  req: LabRequest,
  networks: DeviceNetworks = UNLISTED,
) {
  return (await makePlan(db, registry, keys, req, false, networks)).plan;
}

/**
 * The lab's devices the file no longer lists: removal entries (appended to `entries`) under `req.prune`,
 * else their hostnames (returned, the plan's `notInFile`).
 */
function pruneEntries(
  managed: DeviceRow[],
  matched: ReadonlySet<string>,
  req: LabRequest,
  entries: PlanEntry[],
): string[] {
  const notInFile: string[] = [];
  for (const r of managed) {
    if (matched.has(r.id)) continue;
    if (!req.prune) {
      notInFile.push(r.hostname);
      continue;
    }
    const entry = {
      hostname: r.hostname,
      deviceId: r.id,
      movedFrom: null,
      credential: null,
      reason: req.prune,
    };
    if (req.prune === "disable" && !r.enabled) {
      entries.push({ ...entry, action: "unchanged", changes: [], reason: "disabled, not in the file" });
    } else {
      entries.push({
        ...entry,
        action: "remove",
        changes: req.prune === "disable" ? [{ field: "enabled", old: true, new: false }] : [],
      });
    }
  }
  return notInFile;
}
