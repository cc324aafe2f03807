/**
 * The testbeds of a lab plan (issue 52, docs/lab-as-code.md): what an apply does to the testbeds the file
 * declares (create, update, unchanged, or a conflict with another lab's) and to the lab's testbeds the file
 * no longer declares (remove). `dutlab lab diff` prints them beside the devices.
 *
 * @module
 */
import type { Kysely } from "kysely";
import type { Database } from "../db/schema.ts";
import type { LabFile } from "./file.ts";

/** One testbed line of a plan; `changes` lists the fields that differ (description, hostnames, tags, roles). */
export interface TestbedPlanEntry {
  name: string;
  action: "create" | "update" | "remove" | "unchanged" | "conflict";
  changes: Array<{ field: string; old: unknown; new: unknown }>;
  /** Why a conflict is one (another lab declares it); else null. */
  reason: string | null;
}

type Declared = NonNullable<LabFile["testbeds"]>[string];
const SELECTOR_FIELDS = ["hostnames", "tags", "roles"] as const;
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** What the apply would write for a declared testbed, as the fields the plan compares. */
function fieldsOf(t: Declared) {
  return {
    description: t.description ?? null,
    ...Object.fromEntries(SELECTOR_FIELDS.map((f) => [f, t[f] ?? []])),
  } as Record<string, unknown>;
}

/** The plan of the lab `lab`'s testbeds against the registry's, by name. */
export async function planTestbeds(
  db: Kysely<Database>,
  lab: string,
  declared: LabFile["testbeds"],
): Promise<TestbedPlanEntry[]> {
  const rows = await db.selectFrom("testbeds").select(["name", "selector", "description", "managed_by"])
    .execute();
  const byName = new Map(rows.map((r) => [r.name, r]));
  const entries: TestbedPlanEntry[] = [];
  const want = declared ?? {};
  for (const name of Object.keys(want).sort()) {
    const row = byName.get(name);
    const next = fieldsOf(want[name]!);
    if (!row) {
      const changes = Object.entries(next).filter(([, v]) => v !== null && !same(v, []))
        .map(([field, v]) => ({ field, old: null, new: v }));
      entries.push({ name, action: "create", changes, reason: null });
      continue;
    }
    if (row.managed_by !== null && row.managed_by !== lab) {
      entries.push({
        name,
        action: "conflict",
        changes: [],
        reason: `declared by lab ${JSON.stringify(row.managed_by)}`,
      });
      continue;
    }
    const sel = (typeof row.selector === "string" ? JSON.parse(row.selector) : row.selector) as Record<
      string,
      unknown
    >;
    const old: Record<string, unknown> = {
      description: row.description,
      ...Object.fromEntries(SELECTOR_FIELDS.map((f) => [f, sel[f] ?? []])),
    };
    const changes = Object.keys(next).filter((f) => !same(old[f], next[f]))
      .map((field) => ({ field, old: old[field], new: next[field] }));
    // A testbed made through the API: the apply replaces its device ids and takes it over.
    if ((sel.deviceIds as unknown[] | undefined)?.length) {
      changes.push({ field: "deviceIds", old: sel.deviceIds, new: [] });
    }
    if (row.managed_by === null) changes.push({ field: "managedBy", old: null, new: lab });
    entries.push({ name, action: changes.length ? "update" : "unchanged", changes, reason: null });
  }
  for (const r of rows) {
    if (r.managed_by === lab && !(r.name in want)) {
      entries.push({ name: r.name, action: "remove", changes: [], reason: null });
    }
  }
  return entries;
}
