import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import type { Registry } from "../registry.ts";
import { type FieldError, InvalidInputError } from "../errors.ts";
import { isUuid } from "../util/ids.ts";
import type { Selection } from "./types.ts";

/** A pre-flight request's filters as sent (docs/preflight.md). */
export interface SelectionRequest {
  /** Device ids or hostnames. */
  devices?: string[];
  /** Check ids. */
  checks?: string[];
  /** Device tags: a device is selected when it carries every one (AND). */
  tags?: string[];
}

/**
 * Resolve a pre-flight request's filters: undefined when it gives none. Every name must be known: a device id
 * or hostname of a registered, enabled device (pre-flight reads enabled devices only), a check id of an
 * enabled check, a tag some registered device carries; otherwise an {@link InvalidInputError} naming each
 * unknown one (`devices.1`, `checks.0`, `tags.2`: the dotted paths of validation problems). One SELECT, only when devices or tags are given.
 */
export async function resolveSelection(
  db: Kysely<Database>,
  registry: Registry,
  req: SelectionRequest,
): Promise<Selection | undefined> {
  const { devices, checks, tags } = req;
  if (devices === undefined && checks === undefined && tags === undefined) return undefined;
  const errors: FieldError[] = [];
  let checkIds: Set<string> | null = null;
  if (checks !== undefined) {
    const known = new Set(registry.checks.map((c) => c.check.id));
    checks.forEach((id, i) => {
      if (!known.has(id)) {
        errors.push({
          field: `checks.${i}`,
          message: `unknown check "${id}"; enabled checks: ${[...known].join(", ")}`,
        });
      }
    });
    checkIds = new Set(checks);
  }
  let deviceIds: Set<string> | null = null;
  if (devices !== undefined || tags !== undefined) {
    const names = devices ?? [];
    const uuids = names.filter(isUuid);
    const rows = await db.selectFrom("devices").select(["id", "hostname", "enabled", "tags"])
      .where((eb) => {
        const or = [eb("hostname", "in", names.length ? names : [""])];
        if (uuids.length) or.push(eb("id", "in", uuids));
        if (tags?.length) or.push(eb(sql<boolean>`tags && cast(${[...tags]} as text[])`, "=", true));
        return eb.or(or);
      }).execute();
    const byName = new Map<string, (typeof rows)[number]>();
    for (const r of rows) byName.set(r.hostname, r).set(r.id, r);
    if (devices !== undefined) {
      deviceIds = new Set();
      devices.forEach((name, i) => {
        const r = byName.get(name);
        if (!r) {
          errors.push({
            field: `devices.${i}`,
            message: `unknown device "${name}" (no such id or hostname)`,
          });
        } else if (!r.enabled) {
          errors.push({
            field: `devices.${i}`,
            message: `device "${name}" is disabled; pre-flight reads enabled devices only`,
          });
        } else deviceIds!.add(r.id);
      });
    }
    if (tags !== undefined) {
      const carried = new Set(rows.flatMap((r) => r.tags ?? []));
      tags.forEach((t, i) => {
        if (!carried.has(t)) {
          errors.push({ field: `tags.${i}`, message: `unknown tag "${t}": no device carries it` });
        }
      });
      const tagged = new Set(
        rows.filter((r) => r.enabled && tags.every((t) => (r.tags ?? []).includes(t))).map((r) => r.id),
      );
      deviceIds = deviceIds ? new Set([...deviceIds].filter((id) => tagged.has(id))) : tagged;
    }
  }
  if (errors.length) {
    throw new InvalidInputError(errors.map((e) => `"${e.field}": ${e.message}`).join("; "), { errors });
  }
  return {
    deviceIds,
    checkIds,
    given: { devices: devices ?? null, checks: checks ?? null, tags: tags ?? null },
  };
}
