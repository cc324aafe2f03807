/**
 * The plan and the apply of a lab file (issue 35, README "The lab as code"): what a lab file would change in
 * the registry (a dry run that changes nothing), and the whole plan applied in one database transaction
 * guarded by the lab's generation.
 *
 * Secrets: the client resolves each credential's reference and sends the passwords beside the file
 * (`secrets`, by credential name). A password is compared only through its keyed fingerprint
 * (`passwordFingerprint`), stored encrypted, and never put in a plan, an error or a log line.
 *
 * @module
 */
import { type Kysely, sql, type Transaction } from "kysely";
import type { Database } from "../db/schema.ts";
import type { Registry } from "../registry.ts";
import type { DeviceRow, KeyRing } from "../devices/store.ts";
import { foldTags } from "../devices/store.ts";
import { isUniqueViolation } from "../db/errors.ts";
import { encryptSecret, fingerprintMatches, passwordFingerprint } from "../devices/credentials.ts";
import { ConflictError, type FieldError, InvalidInputError, PreconditionFailedError } from "../errors.ts";
import { jcsSha256 } from "../util/hash.ts";
import type { LabFile } from "./file.ts";

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
  /** Devices this lab manages that the file does not list and no prune was asked for (left as they are). */
  notInFile: string[];
}

/** A device of the file with `defaults` applied and its built-in defaults filled in. */
interface Desired {
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
 * The file's devices with `defaults` applied, checked against the service's rules (vendor available, role
 * valid, required fields present, credential named and resolved, hostnames unique). Throws one 422 listing
 * every error with its JSON path.
 */
export function resolveLab(registry: Registry, req: LabRequest): Desired[] {
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
    const baseUrl = pick("baseUrl");
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
    const prior = seen.get(d.hostname);
    if (prior) {
      errs.push({ field: `$.devices[${i}].hostname`, message: `is listed twice (also at ${prior})` });
    }
    seen.set(d.hostname, `$.devices[${i}].hostname`);
    (d.movedFrom ?? []).forEach((m, j) => {
      const p = seen.get(m);
      if (p) errs.push({ field: `$.devices[${i}].movedFrom[${j}]`, message: `is also listed at ${p}` });
      seen.set(m, `$.devices[${i}].movedFrom[${j}]`);
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
const FIELDS = [
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
interface Planned {
  plan: LabPlan;
  rows: Map<string, DeviceRow>;
  desired: Map<number, Desired>;
  /** The lab's devices before the plan (for the prune guard). */
  managedCount: number;
}

async function makePlan(
  db: Db,
  registry: Registry,
  keys: KeyRing,
  req: LabRequest,
  lock: boolean,
): Promise<Planned> {
  const name = req.lab.metadata.name;
  const desired = resolveLab(registry, req);
  const labRow = await db.selectFrom("labs").select("generation").where("name", "=", name).executeTakeFirst();
  const generation = labRow ? Number(labRow.generation) : 0;
  let q = db.selectFrom("devices").selectAll().orderBy("hostname");
  if (lock) q = q.forUpdate();
  const all = await q.execute();
  const byHost = new Map(all.map((r) => [r.hostname, r]));
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
      if (!same(old, want[field])) base.changes.push({ field, old, new: want[field] });
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
  const notInFile: string[] = [];
  const managed = all.filter((r) => r.managed_by === name);
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
  const summary = { create: 0, update: 0, remove: 0, unchanged: 0, conflict: 0 };
  for (const e of entries) summary[e.action]++;
  const body = {
    lab: name,
    generation,
    prune: req.prune ?? null,
    adopt: req.adopt ?? false,
    summary,
    devices: entries,
    notInFile,
  };
  const plan: LabPlan = { ...body, planHash: `sha256:${await jcsSha256(body)}` };
  return { plan, rows: new Map(all.map((r) => [r.id, r])), desired: byIndex, managedCount: managed.length };
}

/** The plan of a lab file against the registry: a dry run that changes nothing. */
export async function planLab(db: Kysely<Database>, registry: Registry, keys: KeyRing, req: LabRequest) {
  return (await makePlan(db, registry, keys, req, false)).plan;
}

/** Options of an apply beyond the plan's. */
export interface ApplyOptions {
  /** The generation the client's plan was made on: another one is refused (412). */
  expectedGeneration: number;
  /** The hash of the client's plan: a registry that changed since is refused (412). */
  planHash?: string;
  /** Allow an empty `devices` list and a prune of more than half of the lab. */
  force?: boolean;
}

/** What an apply did. */
export interface ApplyResult {
  plan: LabPlan;
  /** The lab's generation after the apply (raised by one when anything changed). */
  generation: number;
  changed: boolean;
  /** Rows as they were before the apply, of devices it updated or removed (sessions to release). */
  before: DeviceRow[];
  /** Devices it created, updated or removed, for the change events. */
  touched: Array<{ deviceId: string; hostname: string; change: "created" | "updated" | "deleted" }>;
}

/**
 * Apply a lab file in one transaction: the lab's row is locked, the plan recomputed under the lock and
 * refused (412) when the client's generation or plan hash is not the current one, then every create, update
 * and removal is written; any failure rolls everything back, the generation included.
 */
export async function applyLab(
  db: Kysely<Database>,
  registry: Registry,
  keys: KeyRing,
  req: LabRequest,
  opts: ApplyOptions,
): Promise<ApplyResult> {
  const name = req.lab.metadata.name;
  return await db.transaction().execute(async (tx) => {
    await tx.insertInto("labs").values({ name, generation: 0 }).onConflict((oc) =>
      oc.column("name").doNothing()
    )
      .execute();
    const lab = await tx.selectFrom("labs").select("generation").where("name", "=", name).forUpdate()
      .executeTakeFirstOrThrow();
    const current = Number(lab.generation);
    if (current !== opts.expectedGeneration) {
      throw new PreconditionFailedError(
        `The lab ${
          JSON.stringify(name)
        } is at generation ${current}, not ${opts.expectedGeneration}: it changed ` +
          "since the plan (make a new plan)",
        { extra: { generation: current } },
      );
    }
    const { plan, rows, desired, managedCount } = await makePlan(tx, registry, keys, req, true);
    if (opts.planHash !== undefined && opts.planHash !== plan.planHash) {
      throw new PreconditionFailedError(
        "The registry changed since the plan (its hash differs): make a new plan",
        { extra: { generation: current, planHash: plan.planHash } },
      );
    }
    const conflicts = plan.devices.filter((e) => e.action === "conflict");
    if (conflicts.length) {
      throw new ConflictError(`${conflicts.length} device(s) of the lab file conflict with the registry`, {
        errors: conflicts.map((e) => ({ field: e.hostname, message: e.reason ?? "conflict" })),
      });
    }
    if (!opts.force && req.lab.devices.length === 0) {
      throw new InvalidInputError("The lab file lists no device: apply it with --force to empty the lab", {
        errors: [{ field: "$.devices", message: "is empty (force is required)" }],
        unprocessable: true,
      });
    }
    if (!opts.force && plan.summary.remove * 2 > managedCount) {
      throw new InvalidInputError(
        `The prune would remove ${plan.summary.remove} of the lab's ${managedCount} device(s), more than half: ` +
          "apply it with --force",
        {
          errors: [{ field: "prune", message: "removes more than half of the lab (force is required)" }],
          unprocessable: true,
        },
      );
    }
    const before: DeviceRow[] = [];
    const touched: ApplyResult["touched"] = [];
    for (const e of plan.devices) {
      if (e.action === "create") {
        const d = [...desired.values()].find((x) => x.hostname === e.hostname)!;
        const id = crypto.randomUUID();
        await insertDevice(tx, keys, id, d, name);
        touched.push({ deviceId: id, hostname: d.hostname, change: "created" });
      } else if (e.action === "update") {
        const row = rows.get(e.deviceId!)!;
        const d = [...desired.values()].find((x) => x.hostname === e.hostname)!;
        await updateDevice(tx, keys, row, d, e, name);
        before.push(row);
        touched.push({ deviceId: row.id, hostname: d.hostname, change: "updated" });
      }
    }
    for (const e of plan.devices) {
      if (e.action !== "remove") continue;
      const row = rows.get(e.deviceId!)!;
      before.push(row);
      if (req.prune === "delete") {
        await deleteDevice(tx, row);
        touched.push({ deviceId: row.id, hostname: row.hostname, change: "deleted" });
      } else {
        await tx.updateTable("devices").set({ enabled: false, updated_at: sql<Date>`now()` } as never)
          .where("id", "=", row.id).execute();
        touched.push({ deviceId: row.id, hostname: row.hostname, change: "updated" });
      }
    }
    const changed = touched.length > 0;
    if (changed) {
      await tx.updateTable("labs").set({ generation: current + 1, updated_at: sql<Date>`now()` } as never)
        .where("name", "=", name).execute();
    }
    return { plan, generation: changed ? current + 1 : current, changed, before, touched };
  });
}

async function insertDevice(tx: Transaction<Database>, keys: KeyRing, id: string, d: Desired, lab: string) {
  try {
    await tx.insertInto("devices").values({
      id,
      hostname: d.hostname,
      vendor: d.vendor,
      device_role: d.deviceRole,
      base_url: d.baseUrl,
      username: d.username,
      password_enc: await encryptSecret(keys.current, id, d.password),
      password_fp: await passwordFingerprint(keys.current, id, d.password),
      tls_verify_mode: d.tlsVerifyMode,
      poll_interval_seconds: d.pollIntervalSeconds,
      notes: d.notes,
      enabled: d.enabled,
      last_poll_at: null,
      last_poll_status: null,
      last_poll_error: null,
      pinned_cert_sha256: null,
      tags: sql<string[]>`cast(${d.tags} as text[])` as unknown as string[],
      managed_by: lab,
    }).execute();
  } catch (e) {
    throw hostnameTaken(e, d.hostname);
  }
}

async function updateDevice(
  tx: Transaction<Database>,
  keys: KeyRing,
  row: DeviceRow,
  d: Desired,
  e: PlanEntry,
  lab: string,
) {
  const set: Record<string, unknown> = { managed_by: lab, updated_at: sql<Date>`now()` };
  for (const c of e.changes) {
    const col = FIELDS.find(([f]) => f === c.field)?.[1];
    if (!col) continue;
    set[col] = col === "tags" ? sql`cast(${d.tags} as text[])` : c.new;
  }
  if (e.credential === "changed") {
    set.password_enc = await encryptSecret(keys.current, row.id, d.password);
    set.password_fp = await passwordFingerprint(keys.current, row.id, d.password);
  }
  // As a PATCH does: a certificate pinned for another URL or TLS mode is of no use any more.
  if (d.baseUrl !== row.base_url || d.tlsVerifyMode !== row.tls_verify_mode) set.pinned_cert_sha256 = null;
  try {
    await tx.updateTable("devices").set(set as never).where("id", "=", row.id).execute();
  } catch (err) {
    throw hostnameTaken(err, d.hostname);
  }
}

/** A pruned device deleted, as `DELETE /api/admin/dut/devices/{id}` does; refused while a run is active on it. */
async function deleteDevice(tx: Transaction<Database>, row: DeviceRow) {
  const active = await sql<{ execution_id: string }>`select execution_id from test_runs
    where status = 'active' and start_state_json->'devices' @> ${JSON.stringify([{ id: row.id }])}::jsonb`
    .execute(tx);
  if (active.rows.length) {
    throw new ConflictError(
      `${row.hostname} is in the active run ${active.rows[0]!.execution_id}: it cannot be deleted now ` +
        "(finish the run, or prune with disable)",
      { errors: [{ field: row.hostname, message: "is in an active run" }] },
    );
  }
  const hashes = await tx.selectFrom("snapshots").select("payload_sha256").distinct()
    .where("device_id", "=", row.id).execute();
  await tx.deleteFrom("devices").where("id", "=", row.id).execute();
  if (hashes.length) {
    await tx.deleteFrom("snapshot_payloads")
      .where("sha256", "in", hashes.map((h) => h.payload_sha256))
      .where(({ not, exists, selectFrom }) =>
        not(exists(
          selectFrom("snapshots").select(sql`1`.as("one"))
            .whereRef("snapshots.payload_sha256", "=", "snapshot_payloads.sha256"),
        ))
      ).execute();
  }
}

function hostnameTaken(e: unknown, hostname: string): unknown {
  if (!isUniqueViolation(e)) return e;
  return new ConflictError(`A device with hostname "${hostname}" is already registered`, {
    cause: e,
    errors: [{ field: "hostname", message: "is already registered" }],
  });
}
