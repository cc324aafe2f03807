/**
 * The apply of a lab file (issue 35, docs/lab-as-code.md): the plan of `plan.ts` recomputed under the
 * lab's lock and written in one database transaction guarded by the lab's generation.
 *
 * @module
 */
import { type Kysely, sql, type Transaction } from "kysely";
import type { Database } from "../db/schema.ts";
import type { Registry } from "../registry.ts";
import type { DeviceRow, KeyRing } from "../devices/store.ts";
import { hostnameConflict } from "../devices/hostname_clashes.ts";
import { isUniqueViolation } from "../db/errors.ts";
import { deleteUnreferencedPayloads, devicePayloadHashes } from "../db/payloads.ts";
import { encryptSecret, passwordFingerprint } from "../devices/credentials.ts";
import { ConflictError, InvalidInputError, PreconditionFailedError } from "../errors.ts";
import type { DeviceNetworks } from "../transport/networks.ts";
import { sameBaseUrl } from "../devices/base_url.ts";
import { guardReserved, type Hold } from "../reservations/holds.ts";
import { TestbedStore } from "../reservations/testbeds.ts";
import { type Desired, FIELDS, type LabPlan, type LabRequest, makePlan, type PlanEntry } from "./plan.ts";
import { labSynced } from "./notify.ts";

/** Options of an apply beyond the plan's. */
export interface ApplyOptions {
  /** The generation the client's plan was made on: another one is refused (412). */
  expectedGeneration: number;
  /** The hash of the client's plan: a registry that changed since is refused (412). */
  planHash?: string;
  /** Allow an empty `devices` list and a prune of more than half of the lab. */
  force?: boolean;
  /** `DUT_DEVICE_NETWORKS`: a base URL whose literal address it refuses is a 422 (default: unset). */
  networks?: DeviceNetworks;
  /** Modify or prune reserved devices anyway (an admin's override, audited by the route). */
  overrideReservations?: boolean;
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
  /** Reservations the apply overrode (`overrideReservations`), for the audit note. */
  overridden: Hold[];
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
  try {
    return await write(db, registry, keys, req, opts);
  } catch (e) {
    // A hostname taken meanwhile (by a device another writer created after the plan's read): its holder is
    // read once the transaction is over, so the 409 can name the lab that holds it.
    if (e instanceof HostnameTaken) throw await hostnameConflict(db, e.cause, e.hostname);
    throw e;
  }
}

/** A unique violation on a device's hostname inside the apply's transaction. */
class HostnameTaken extends Error {
  constructor(readonly hostname: string, override readonly cause: unknown) {
    super(`The hostname "${hostname}" is taken`);
  }
}

/** The apply's transaction (see {@link applyLab}). */
async function write(
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
    const planned = await makePlan(tx, registry, keys, req, true, opts.networks);
    const { plan, rows, desired, managedCount } = planned;
    if (opts.planHash !== undefined && opts.planHash !== plan.planHash) {
      throw new PreconditionFailedError(
        "The registry changed since the plan (its hash differs): make a new plan",
        { extra: { generation: current, planHash: plan.planHash } },
      );
    }
    const conflicts = plan.devices.filter((e) => e.action === "conflict");
    if (conflicts.length) {
      // The detail names each device and why, so a hostname another lab holds names that lab.
      const each = conflicts.slice(0, 5).map((e) => `${e.hostname} is ${e.reason ?? "in conflict"}`);
      if (conflicts.length > 5) each.push(`${conflicts.length - 5} more`);
      throw new ConflictError(
        `${conflicts.length} device(s) of the lab file conflict with the registry: ${each.join("; ")}`,
        { errors: conflicts.map((e) => ({ field: e.hostname, message: e.reason ?? "conflict" })) },
      );
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
    // A device reserved for a run is neither modified nor pruned under it (issue 52): 409 naming the holder.
    const overridden = await guardReserved(
      tx,
      touchedIds(plan),
      `The lab "${name}" apply`,
      !!opts.overrideReservations,
    );
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
      if (e.action === "remove") await prune(tx, rows.get(e.deviceId!)!, req.prune, before, touched);
    }
    await syncTestbeds(tx, name, req.lab.testbeds ?? {});
    const changed = touched.length > 0 || plan.testbeds.some((t) => t.action !== "unchanged");
    if (changed) {
      await tx.updateTable("labs").set({ generation: current + 1, updated_at: sql<Date>`now()` } as never)
        .where("name", "=", name).execute();
      await labSynced(tx, name, current + 1, touched);
    }
    return { plan, generation: changed ? current + 1 : current, changed, before, touched, overridden };
  });
}

/** The lab's testbeds as the file declares them: created or replaced, and the lab's others removed. */
async function syncTestbeds(
  tx: Transaction<Database>,
  lab: string,
  testbeds: NonNullable<LabRequest["lab"]["testbeds"]>,
) {
  const store = new TestbedStore(tx);
  for (const [name, t] of Object.entries(testbeds)) {
    const selector = { hostnames: t.hostnames, tags: t.tags, roles: t.roles };
    await store.put(name, selector, t.description ?? null, lab, tx);
  }
  await tx.deleteFrom("testbeds").where("managed_by", "=", lab)
    .where("name", "not in", ["", ...Object.keys(testbeds)]).execute();
}

/** A device the lab no longer lists: deleted or disabled, as `prune` says. */
async function prune(
  tx: Transaction<Database>,
  row: DeviceRow,
  how: LabRequest["prune"],
  before: DeviceRow[],
  touched: ApplyResult["touched"],
) {
  before.push(row);
  if (how === "delete") {
    await deleteDevice(tx, row);
    touched.push({ deviceId: row.id, hostname: row.hostname, change: "deleted" });
  } else {
    await tx.updateTable("devices").set({ enabled: false, updated_at: sql<Date>`now()` } as never)
      .where("id", "=", row.id).execute();
    touched.push({ deviceId: row.id, hostname: row.hostname, change: "updated" });
  }
}

/** The devices a plan updates or removes. */
function touchedIds(plan: LabPlan): string[] {
  return plan.devices.filter((e) => e.action === "update" || e.action === "remove").map((e) => e.deviceId!);
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
  if (!sameBaseUrl(row.base_url, d.baseUrl) || d.tlsVerifyMode !== row.tls_verify_mode) {
    set.pinned_cert_sha256 = null;
  }
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
  const hashes = await devicePayloadHashes(tx, row.id);
  await tx.deleteFrom("devices").where("id", "=", row.id).execute();
  await deleteUnreferencedPayloads(tx, hashes);
}

function hostnameTaken(e: unknown, hostname: string): unknown {
  return isUniqueViolation(e) ? new HostnameTaken(hostname, e) : e;
}
