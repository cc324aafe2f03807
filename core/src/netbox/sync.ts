/**
 * A NetBox import (`dutlab lab from-netbox`, `POST /api/admin/dut/lab/from-netbox`): NetBox's version from
 * `/api/status/`, every page of `/api/dcim/devices/` under the operator's filters, the mapping applied, and
 * the sync's provenance recorded (`netbox_syncs`): URL, filters, version, time, SHA-256 of the answers. The
 * lab file it returns goes through the existing plan and apply (`lab diff`, `lab apply`); the import itself
 * changes no device.
 *
 * @module
 */
import type { Kysely } from "kysely";
import type { Database } from "../db/schema.ts";
import { sha256Hex } from "../util/hash.ts";
import { type NetBoxClient, NetBoxError } from "./client.ts";
import { mapDevices, type NetBoxDevice, type NetBoxMapping, type Unmapped } from "./mapping.ts";
import type { LabFile } from "../lab/file.ts";

/** Query names the client sets itself (paging, shape): not filters. */
export const RESERVED_FILTERS = new Set(["limit", "offset", "brief", "fields", "omit", "format", "ordering"]);
/** A NetBox filter name: `site`, `role`, `tag`, `cf_owner`, `name__ic`, `q`, … */
export const FILTER_NAME = /^[a-z][a-z0-9_]{0,99}$/;

export interface Provenance {
  id: string;
  netboxUrl: string;
  filters: Array<[string, string]>;
  netboxVersion: string | null;
  fetchedAt: string;
  /** `sha256:` over the SHA-256 of each fetched answer, in order (status, then each device page). */
  answersSha256: string;
  pages: number;
  devices: number;
  mapped: number;
  unmapped: number;
}

export interface Imported {
  lab: LabFile;
  unmapped: Unmapped[];
  provenance: Provenance;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The version `/api/status/` names: NetBox's `netbox-version`, or `Nautobot <nautobot-version>`; else null. */
export function versionOf(status: Record<string, unknown> | null | undefined): string | null {
  const nb = status?.["netbox-version"];
  if (typeof nb === "string") return nb;
  const nautobot = status?.["nautobot-version"];
  return typeof nautobot === "string" ? `Nautobot ${nautobot}` : null;
}

/** Fetches, maps and records one import. Two NetBox devices of one hostname stop it (nothing recorded). */
export async function importFromNetBox(
  db: Kysely<Database> | null,
  client: NetBoxClient,
  mapping: NetBoxMapping,
  filters: Array<[string, string]>,
): Promise<Imported> {
  const status = await client.get<Record<string, unknown>>("api/status/", "status (/api/status/)");
  const version = versionOf(status.value);
  // Nautobot 2+ answers related objects as bare references ({id, object_type, url}) unless asked for depth.
  const query: Array<[string, string]> = /^Nautobot ([2-9]|\d\d)/.test(version ?? "") &&
      !filters.some(([k]) => k === "depth")
    ? [...filters, ["depth", "1"]]
    : filters;
  const list = await client.list<NetBoxDevice>("api/dcim/devices/", query, "devices (/api/dcim/devices/)");
  const fetchedAt = new Date().toISOString();
  for (const d of list.results) {
    if (d === null || typeof d !== "object" || !(typeof d.id === "number" || UUID.test(String(d.id)))) {
      throw new NetBoxError(
        "NetBox's device list holds an entry without a numeric id (NetBox) or a UUID (Nautobot)",
        "devices",
        null,
        false,
      );
    }
  }
  const { lab, unmapped, duplicates } = mapDevices(mapping, list.results);
  if (duplicates.length) {
    const d = duplicates[0]!;
    throw new NetBoxError(
      `NetBox devices ${d.netboxIds.map((i) => `#${i}`).join(" and ")} map to one hostname, ${d.hostname}` +
        (duplicates.length > 1 ? ` (and ${duplicates.length - 1} more hostname(s))` : "") +
        ": rename one in NetBox or narrow the filters; nothing imported",
      `devices ${d.netboxIds.map((i) => `#${i}`).join(", ")}`,
      null,
      false,
    );
  }
  const hashes = await Promise.all([status.bytes, ...list.bodies].map((b) => sha256Hex(b)));
  const provenance: Provenance = {
    id: crypto.randomUUID(),
    netboxUrl: client.base.href.replace(/\/$/, ""),
    filters: query,
    netboxVersion: version,
    fetchedAt,
    answersSha256: `sha256:${await sha256Hex(hashes.join("\n"))}`,
    pages: list.pages,
    devices: list.results.length,
    mapped: lab.devices.length,
    unmapped: unmapped.length,
  };
  if (db) {
    await db.insertInto("netbox_syncs").values({
      id: provenance.id,
      lab: mapping.lab,
      netbox_url: provenance.netboxUrl,
      filters: JSON.stringify(filters),
      netbox_version: provenance.netboxVersion,
      fetched_at: fetchedAt,
      answers_sha256: provenance.answersSha256,
      pages: provenance.pages,
      devices: provenance.devices,
      mapped: provenance.mapped,
      unmapped: provenance.unmapped,
    }).execute();
  }
  return { lab, unmapped, provenance };
}

/** The recorded imports, newest first. */
export async function listSyncs(db: Kysely<Database>, limit = 100): Promise<Provenance[]> {
  const rows = await db.selectFrom("netbox_syncs").selectAll().orderBy("fetched_at", "desc").orderBy("id")
    .limit(limit).execute();
  return rows.map((r) => ({
    id: r.id,
    netboxUrl: r.netbox_url,
    filters: JSON.parse(r.filters),
    netboxVersion: r.netbox_version,
    fetchedAt: new Date(r.fetched_at).toISOString(),
    answersSha256: r.answers_sha256,
    pages: Number(r.pages),
    devices: Number(r.devices),
    mapped: Number(r.mapped),
    unmapped: Number(r.unmapped),
  }));
}
