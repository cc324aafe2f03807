import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { isUniqueViolation } from "../db/errors.ts";
import { ConflictError } from "../errors.ts";

/** Devices whose host names are one name compared case-insensitively (`FW-UPPER`, `fw-upper`). */
export interface HostnameClash {
  /** The name in lower case. */
  name: string;
  /** The devices, oldest first: the first one holds the name, the others are kept until resolved. */
  devices: Array<{ id: string; hostname: string; managedBy: string | null }>;
}

/**
 * The host name clashes left in the registry (issue 46 point 4, migration 0024): devices registered before
 * host names compared case-insensitively, kept until an operator renames (PATCH `hostname`) or deletes all
 * but one. No new clash can be made; `serve`, `poll` and `migrate` log these at start.
 */
export async function hostnameClashes(db: Kysely<Database>): Promise<HostnameClash[]> {
  const rows = await sql<{ name: string; id: string; hostname: string; managed_by: string | null }>`
    select lower(hostname) as name, id, hostname, managed_by from devices
    where lower(hostname) in (select lower(hostname) from devices group by 1 having count(*) > 1)
    order by 1, created_at, id`.execute(db);
  const out = new Map<string, HostnameClash>();
  for (const r of rows.rows) {
    const c = out.get(r.name) ?? out.set(r.name, { name: r.name, devices: [] }).get(r.name)!;
    c.devices.push({ id: r.id, hostname: r.hostname, managedBy: r.managed_by });
  }
  return [...out.values()];
}

/** One log line per clash: the names and ids, and what resolves it. */
export function clashLines(clashes: HostnameClash[]): string[] {
  return clashes.map((c) =>
    `Devices ${
      c.devices.map((d) => `${JSON.stringify(d.hostname)} (${d.id})`).join(", ")
    } have one host name compared case-insensitively; rename (PATCH hostname) or delete all but one`
  );
}

/**
 * A unique violation (the hostname is taken) as the 409 the API answers, naming the device that holds the
 * hostname (host names compare case-insensitively: `FW1` is taken by `fw1`, migration 0024) and the lab whose
 * file holds it when a lab manages that device; any other error as it is. `db` is read for the holder, so it
 * must not be a transaction the violation aborted.
 */
export async function hostnameConflict(
  db: Kysely<Database>,
  e: unknown,
  hostname: string | undefined,
): Promise<unknown> {
  if (!isUniqueViolation(e)) return e;
  const holder = hostname === undefined ? undefined : await db.selectFrom("devices")
    .select(["id", "hostname", "managed_by"])
    .where(sql<string>`lower(hostname)`, "=", hostname.toLowerCase())
    .orderBy(sql`hostname = ${hostname}`, "desc").orderBy("created_at").executeTakeFirst()
    .catch(() => undefined);
  const lab = holder?.managed_by ?? null;
  const held = lab === null ? "" : `, managed by lab ${JSON.stringify(lab)} (its lab file lists it)`;
  const as = holder && holder.hostname !== hostname
    ? ` as ${JSON.stringify(holder.hostname)} (host names compare case-insensitively)`
    : "";
  const which = holder ? `: device ${holder.id}` : "";
  return new ConflictError(
    `A device with hostname ${JSON.stringify(hostname)} is already registered${as}${held}${which}`,
    {
      cause: e,
      errors: [{
        field: "hostname",
        message: `is already registered${as}` +
          (lab === null ? "" : `, managed by lab ${JSON.stringify(lab)}`),
      }],
    },
  );
}
