/**
 * Testbeds (issue 52): a named set of devices, kept as a selector and resolved when it is reserved, so a
 * device added to a tag or role later belongs to it. A device belongs to the testbed when it matches any
 * listed id, hostname (case-insensitively), tag or role.
 *
 * @module
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { ConflictError, InvalidInputError, NotFoundError } from "../errors.ts";

/** What a testbed selects: the union of its lists. */
export interface TestbedSelector {
  deviceIds?: string[];
  hostnames?: string[];
  tags?: string[];
  roles?: string[];
}

/** A testbed as the API shows it. */
export interface TestbedView {
  name: string;
  description: string | null;
  selector: TestbedSelector;
  /** The lab file that declares it, null when made through the API. */
  managedBy: string | null;
  /** The devices it selects now, by hostname. */
  devices: Array<{ id: string; hostname: string }>;
}

/** The devices a selector picks, by hostname; an id or hostname that names no device is a 422. */
export async function resolveSelector(
  db: Kysely<Database>,
  s: TestbedSelector,
): Promise<Array<{ id: string; hostname: string }>> {
  const ids = s.deviceIds ?? [];
  const hosts = (s.hostnames ?? []).map((h) => h.toLowerCase());
  const tags = s.tags ?? [];
  const roles = s.roles ?? [];
  const r = await sql<{ id: string; hostname: string }>`select id::text, hostname from devices
    where id = any(${ids}::uuid[]) or lower(hostname) = any(${hosts}::text[])
      or tags && ${tags}::text[] or device_role = any(${roles}::text[])
    order by hostname, id`.execute(db);
  const missing = [
    ...ids.filter((id) => !r.rows.some((d) => d.id === id)).map((id) => `device id ${id}`),
    ...hosts.filter((h) => !r.rows.some((d) => d.hostname.toLowerCase() === h)).map((h) => `hostname ${h}`),
  ];
  if (missing.length) {
    throw new InvalidInputError(`No device has ${missing.join(", ")}`, {
      errors: missing.map((m) => ({ field: "selector", message: `no device has ${m}` })),
      unprocessable: true,
    });
  }
  return r.rows;
}

type Row = { name: string; selector: unknown; description: string | null; managed_by: string | null };

/** Testbeds in the database. */
export class TestbedStore {
  constructor(private db: Kysely<Database>) {}

  async #view(db: Kysely<Database>, r: Row): Promise<TestbedView> {
    const selector =
      (typeof r.selector === "string" ? JSON.parse(r.selector) : r.selector) as TestbedSelector;
    let devices: TestbedView["devices"] = [];
    try {
      devices = await resolveSelector(db, selector);
    } catch (e) {
      if (!(e instanceof InvalidInputError)) throw e; // a device deleted since: the others are listed
      devices = await resolveSelector(db, { ...selector, deviceIds: [], hostnames: [] });
    }
    return { name: r.name, description: r.description, selector, managedBy: r.managed_by, devices };
  }

  /** Every testbed, by name. */
  async list(): Promise<TestbedView[]> {
    const rows = await this.db.selectFrom("testbeds").select([
      "name",
      "selector",
      "description",
      "managed_by",
    ])
      .orderBy("name").execute();
    return await Promise.all(rows.map((r) => this.#view(this.db, r)));
  }

  /** One testbed, or 404. */
  async get(name: string, db: Kysely<Database> = this.db): Promise<TestbedView> {
    const r = await db.selectFrom("testbeds").select(["name", "selector", "description", "managed_by"])
      .where("name", "=", name).executeTakeFirst();
    if (!r) throw new NotFoundError(`No testbed named ${JSON.stringify(name)}`);
    return await this.#view(db, r);
  }

  /**
   * Create or replace a testbed (its selector must name existing devices). A testbed a lab file declares is
   * changed only by that lab's apply (`managedBy` given): through the API it is a 409.
   */
  async put(
    name: string,
    selector: TestbedSelector,
    description: string | null,
    managedBy: string | null = null,
    db: Kysely<Database> = this.db,
  ): Promise<TestbedView> {
    await resolveSelector(db, selector);
    const cur = await db.selectFrom("testbeds").select("managed_by").where("name", "=", name)
      .executeTakeFirst();
    if (cur && cur.managed_by !== managedBy && cur.managed_by !== null) {
      throw new ConflictError(`The testbed ${JSON.stringify(name)} is declared by the lab ${cur.managed_by}`);
    }
    await db.insertInto("testbeds").values({
      name,
      selector: JSON.stringify(selector),
      description,
      managed_by: managedBy,
    }).onConflict((oc) =>
      oc.column("name").doUpdateSet({
        selector: JSON.stringify(selector),
        description,
        managed_by: managedBy,
        updated_at: sql<Date>`now()` as never,
      })
    ).execute();
    return await this.get(name, db);
  }

  /** Delete a testbed (its reservations keep its name as history). */
  async delete(name: string): Promise<void> {
    const r = await this.db.deleteFrom("testbeds").where("name", "=", name).executeTakeFirst();
    if (Number(r.numDeletedRows) === 0) throw new NotFoundError(`No testbed named ${JSON.stringify(name)}`);
  }
}
