/**
 * `vendor-a-bmc`: server management controllers that speak DMTF Redfish (DSP0266), such as a rack
 * server's integrated management controller. Session login with `X-Auth-Token`, one session per
 * cycle, deleted in `close()`. Every resource is found from the service root and the `@odata.id`
 * links of other resources; no member id is assumed.
 *
 * @module
 */
import {
  type AdapterContext,
  type AdapterDefinition,
  type AdapterSession,
  type CollectedSnapshot,
  type ConnectionTestResult,
  defineAdapter,
  type DeviceInventory,
} from "@dutlab/core";
import {
  deleteSession,
  linkOf,
  readCollection,
  RedfishClient,
  type RedfishLogin,
  type Resource,
  SERVICE_ROOT,
} from "./_redfish.ts";
import { VOLATILE_PATHS } from "./_volatile.ts";

export type { Resource } from "./_redfish.ts";

/** Labels collected on every poll, in order (spec 1.2: 8 snapshots per poll). */
export const LABELS = [
  "service_root",
  "system_info",
  "manager_info",
  "ntp_config",
  "chassis_info",
  "thermal",
  "power",
  "firmware_inventory",
] as const;

/** Payload stored for a resource the device legitimately does not offer (not a failed poll). */
export interface AbsentResource {
  /** Always false: the marker of an absent resource. */
  present: false;
  /** Redfish resource type that is missing, e.g. `Thermal`. */
  resource: string;
  /** Why: which resource does not link it. */
  detail: string;
}

/** Payload of `firmware_inventory`: the collection and each member, keyed by its `@odata.id`. */
export interface FirmwareInventoryPayload {
  /** The collection's first page as returned. */
  collection: Resource;
  /** Later pages (`Members@odata.nextLink` followed), present only when there were any. */
  pages?: Resource[];
  /** Present only when the page or member bound cut the reading: what was left unread. */
  truncated?: { nextLink: string | null; membersNotRead: number; detail: string };
  /** Every member read, keyed by its `@odata.id`. */
  members: Record<string, Resource>;
}

/** Where one manager keeps its time settings, as read from the device. */
export interface ManagerTimeSettings {
  /** The Manager's `@odata.id`. */
  manager: string;
  /** Its ManagerNetworkProtocol resource, or the absent marker when it links none. */
  networkProtocol: Resource | AbsentResource;
  /** An OEM date/time resource the manager links (`Oem.<vendor>.Links.DateTimeService`), when it does. */
  dateTime?: Resource;
}

/** Payload of `ntp_config`: the time settings of every manager of the service, in collection order. */
export interface NtpConfigPayload {
  /** Each manager's time settings. */
  managers: ManagerTimeSettings[];
  /** Present only when the manager bound cut the Managers collection. */
  truncated?: { detail: string };
}

const absent = (resource: string, detail: string): AbsentResource => ({ present: false, resource, detail });

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v);

/** Concurrent GETs against one BMC; small, as BMC web servers are slow and single-threaded. */
const MEMBER_CONCURRENCY = 4;
/** Processors looked at for a CPU figure (GPUs, FPGAs and the like are skipped). */
const MAX_PROCESSORS = 8;
/** Managers whose time settings are read (a chassis with many blades lists one per blade). */
const MAX_MANAGERS = 16;
/** Firmware inventory members read (each is one GET). */
const MAX_FIRMWARE_MEMBERS = 256;

interface Topology {
  root: Resource;
  systemsPath: string | null;
  systemPath: string | null;
  system: Resource | null;
  managerPath: string | null;
  manager: Resource | null;
}

function percent(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? Math.min(100, Math.max(0, v)) : null;
}

/** Busy percentage from `KernelPercent` + `UserPercent` (ProcessorStatistics / ProcessorMetrics). */
function busyPercent(stats: unknown): number | null {
  if (!isObject(stats)) return null;
  const k = percent(stats.KernelPercent);
  const u = percent(stats.UserPercent);
  if (k === null && u === null) return null;
  return Math.min(100, Math.round(((k ?? 0) + (u ?? 0)) * 10) / 10);
}

class RedfishSession implements AdapterSession {
  #rf: RedfishClient;

  constructor(ctx: AdapterContext) {
    this.#rf = new RedfishClient(ctx);
  }

  #get = (path: string) => this.#rf.get(path);

  async #firstMember(collectionPath: string | null): Promise<string | null> {
    if (!collectionPath) return null;
    return (await readCollection(this.#get, collectionPath, 1)).members[0] ?? null;
  }

  /** Service root, the first computer system, and the manager that manages it. */
  async #topology(): Promise<Topology> {
    const root = await this.#rf.get(SERVICE_ROOT);
    const systemsPath = linkOf(root, "Systems");
    const systemPath = await this.#firstMember(systemsPath);
    const system = systemPath ? await this.#rf.get(systemPath) : null;
    // The system's own link names its manager; the Managers collection is the fallback.
    const managerPath = linkOf(system, "Links", "ManagedBy") ??
      await this.#firstMember(linkOf(root, "Managers"));
    const manager = managerPath ? await this.#rf.get(managerPath) : null;
    return { root, systemsPath, systemPath, system, managerPath, manager };
  }

  /** GET each path, a few at a time; on the first failure stop, let requests in flight settle, rethrow. */
  async #getAll(paths: string[]): Promise<Resource[]> {
    const out: Resource[] = new Array(paths.length);
    let next = 0;
    let failed = false;
    const worker = async () => {
      while (!failed && next < paths.length) {
        const i = next++;
        // In range: the loop condition checked next < paths.length just before the increment.
        const path = paths[i]!;
        try {
          out[i] = await this.#rf.get(path);
        } catch (e) {
          failed = true;
          throw e;
        }
      }
    };
    const settled = await Promise.allSettled(
      Array.from({ length: Math.min(MEMBER_CONCURRENCY, paths.length) }, worker),
    );
    const failure = settled.find((r) => r.status === "rejected");
    if (failure) throw failure.reason;
    return out;
  }

  /** Chassis `Thermal` or `Power` (followed from the chassis' own link); absent when not linked. */
  async #chassisPart(chassis: Resource | null, chassisPath: string | null, key: "Thermal" | "Power") {
    if (!chassis) return absent(key, "Neither the system nor the service root links a chassis");
    const path = linkOf(chassis, key);
    if (path) return await this.#rf.get(path);
    const successor = linkOf(chassis, `${key}Subsystem`);
    return absent(
      key,
      `${chassisPath} links no ${key} resource` +
        (successor ? `; it links ${key}Subsystem ${successor}, which this adapter does not collect` : ""),
    );
  }

  async #firmwareInventory(root: Resource): Promise<FirmwareInventoryPayload | AbsentResource> {
    const updatePath = linkOf(root, "UpdateService");
    if (!updatePath) return absent("SoftwareInventoryCollection", "The service root links no UpdateService");
    const update = await this.#rf.get(updatePath);
    const inventoryPath = linkOf(update, "FirmwareInventory");
    if (!inventoryPath) {
      return absent("SoftwareInventoryCollection", `${updatePath} links no FirmwareInventory collection`);
    }
    const paged = await readCollection(this.#get, inventoryPath);
    const paths = paged.members.slice(0, MAX_FIRMWARE_MEMBERS);
    const bodies = await this.#getAll(paths);
    const out: FirmwareInventoryPayload = { collection: paged.first, members: {} };
    if (paged.pages.length > 0) out.pages = paged.pages;
    const skipped = paged.members.length - paths.length;
    if (paged.truncatedAt !== null || skipped > 0) {
      out.truncated = {
        nextLink: paged.truncatedAt,
        membersNotRead: skipped,
        detail: (paged.truncatedAt !== null
          ? `stopped after ${paged.pages.length + 1} pages of ${inventoryPath}; ${paged.truncatedAt} not read`
          : `read ${paths.length} of ${paged.members.length} members of ${inventoryPath}`) +
          ` (bounds: pages and ${MAX_FIRMWARE_MEMBERS} members)`,
      };
    }
    // #getAll returns one body per path, in order, so bodies[i] exists for every i.
    out.members = Object.fromEntries(paths.map((p, i) => [p, bodies[i]!]));
    return out;
  }

  /**
   * Time settings of every manager: the Managers collection (all pages, up to MAX_MANAGERS), else the
   * system's own manager; for each, its NetworkProtocol and any OEM DateTime resource it links.
   */
  async #timeSettings(t: Topology): Promise<NtpConfigPayload | AbsentResource> {
    const collectionPath = linkOf(t.root, "Managers");
    let paths: string[] = [];
    let truncated: NtpConfigPayload["truncated"];
    if (collectionPath) {
      const paged = await readCollection(this.#get, collectionPath);
      paths = paged.members.slice(0, MAX_MANAGERS);
      if (paged.truncatedAt !== null || paged.members.length > MAX_MANAGERS) {
        truncated = {
          detail: `read the first ${paths.length} managers of ${collectionPath}` +
            (paged.truncatedAt !== null ? `; ${paged.truncatedAt} not read` : ""),
        };
      }
    }
    if (t.managerPath && !paths.includes(t.managerPath)) paths.unshift(t.managerPath);
    if (paths.length === 0) return absent("Manager", "The service root links no Managers collection");
    const managers: ManagerTimeSettings[] = [];
    for (const path of paths) {
      const manager = path === t.managerPath && t.manager ? t.manager : await this.#rf.get(path);
      const protocolPath = linkOf(manager, "NetworkProtocol");
      const entry: ManagerTimeSettings = {
        manager: path,
        networkProtocol: protocolPath
          ? await this.#rf.get(protocolPath)
          : absent("ManagerNetworkProtocol", `${path} links no NetworkProtocol resource`),
      };
      const dateTimePath = oemDateTimeLink(manager);
      if (dateTimePath) entry.dateTime = await this.#rf.get(dateTimePath);
      managers.push(entry);
    }
    return truncated ? { managers, truncated } : { managers };
  }

  async collectAll(): Promise<CollectedSnapshot[]> {
    const t = await this.#topology();
    const system = t.system ??
      absent(
        "ComputerSystem",
        t.systemsPath ? `${t.systemsPath} has no members` : "The service root links no Systems collection",
      );
    const manager = t.manager ?? absent("Manager", "Neither the system nor the service root links a manager");
    const ntp = await this.#timeSettings(t);

    const chassisPath = linkOf(t.system, "Links", "Chassis") ??
      await this.#firstMember(linkOf(t.root, "Chassis"));
    const chassis = chassisPath ? await this.#rf.get(chassisPath) : null;
    const thermal = await this.#chassisPart(chassis, chassisPath, "Thermal");
    const power = await this.#chassisPart(chassis, chassisPath, "Power");
    const payloads: Record<(typeof LABELS)[number], unknown> = {
      service_root: t.root,
      system_info: system,
      manager_info: manager,
      ntp_config: ntp,
      chassis_info: chassis ?? absent("Chassis", "Neither the system nor the service root links a chassis"),
      thermal,
      power,
      firmware_inventory: await this.#firmwareInventory(t.root),
    };
    return LABELS.map((label) => ({ label, payload: payloads[label] }));
  }

  /** The BMC's own CPU (ManagerDiagnosticData), else the host's first CPU (ProcessorMetrics), else none. */
  async #readCpu(t: Topology): Promise<ConnectionTestResult> {
    const diagPath = linkOf(t.manager, "ManagerDiagnosticData");
    if (diagPath) {
      const diag = await this.#rf.get(diagPath);
      const pct = busyPercent(diag.ProcessorStatistics);
      if (pct !== null) {
        return { cpuPercent: pct, cpuDetail: `BMC CPU ${pct}% (kernel + user) from GET ${diagPath}` };
      }
    }
    const procsPath = linkOf(t.system, "Processors");
    if (procsPath) {
      const procs = (await readCollection(this.#get, procsPath)).members.slice(0, MAX_PROCESSORS);
      for (const p of procs) {
        const proc = await this.#rf.get(p);
        if (proc.ProcessorType !== undefined && proc.ProcessorType !== "CPU") continue;
        const metricsPath = linkOf(proc, "Metrics");
        if (!metricsPath) continue;
        const metrics = await this.#rf.get(metricsPath);
        const pct = busyPercent(metrics) ?? percent(metrics.BandwidthPercent);
        if (pct !== null) {
          const name = typeof proc.Id === "string" ? proc.Id : p;
          return { cpuPercent: pct, cpuDetail: `Host CPU ${name} ${pct}% busy from GET ${metricsPath}` };
        }
      }
    }
    return {
      cpuPercent: null,
      cpuDetail: `the controller exposes no CPU figure: ` +
        `${t.managerPath ?? "no manager"} links no ManagerDiagnosticData with ProcessorStatistics and ` +
        `no CPU of ${procsPath ?? "(no system)"} links ProcessorMetrics with a load`,
    };
  }

  async testConnection(): Promise<ConnectionTestResult> {
    await this.#rf.login();
    const result = await this.#readCpu(await this.#topology());
    await this.#rf.logout();
    return result;
  }

  async close(): Promise<void> {
    await this.#rf.close();
  }

  pollNotes(): string[] {
    return this.#rf.fallbackNote ? [this.#rf.fallbackNote] : [];
  }
}

/** `Oem.<vendor>.Links.DateTimeService` of a Manager (HPE iLO: `/redfish/v1/Managers/1/DateTime`). */
function oemDateTimeLink(manager: Resource): string | null {
  const oem = manager.Oem;
  if (!isObject(oem)) return null;
  for (const vendor of Object.values(oem)) {
    const link = linkOf(vendor, "Links", "DateTimeService");
    if (link) return link;
  }
  return null;
}

function isLogin(v: unknown): v is RedfishLogin {
  return isObject(v) && typeof v.token === "string" && typeof v.sessionPath === "string";
}

/** One place a manager keeps time servers, as `timeSources` reads it. */
export interface TimeSource {
  /** The Manager's `@odata.id` (or the resource's own, for a payload stored before every manager was read). */
  manager: string;
  /** Which resource and property: `NetworkProtocol.NTP.NTPServers` or `DateTime.NTPServers` / `DateTime.StaticNTPServers`. */
  property: string;
  /** The servers that property lists. */
  servers: string[];
  /** False when the resource says NTP is off (`NTP.ProtocolEnabled: false`); its servers are then no source. */
  enabled: boolean;
}

function serverList(v: unknown, what: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new Error(`"${what}" in ntp_config payload is not a list`);
  return v.flatMap((s) => {
    if (s === null) return [];
    if (typeof s !== "string") throw new Error(`"${what}" holds a non-string entry ${JSON.stringify(s)}`);
    return s.trim() ? [s.trim()] : [];
  });
}

function protocolSources(manager: string, protocol: unknown): TimeSource[] {
  if (!isObject(protocol)) throw new Error("a NetworkProtocol in the ntp_config payload is not an object");
  if (protocol.present === false) return [];
  const type = protocol["@odata.type"];
  if (typeof type !== "string" || !type.includes("ManagerNetworkProtocol")) {
    throw new Error(`not a ManagerNetworkProtocol resource (@odata.type ${JSON.stringify(type)})`);
  }
  const ntp = protocol.NTP;
  if (ntp === undefined || ntp === null) return [];
  if (!isObject(ntp)) throw new Error(`"NTP" in ntp_config payload is not an object`);
  const servers = serverList(ntp.NTPServers, "NTP.NTPServers");
  if (servers.length === 0) return [];
  return [{
    manager,
    property: "NetworkProtocol.NTP.NTPServers",
    servers,
    enabled: ntp.ProtocolEnabled !== false,
  }];
}

function dateTimeSources(manager: string, dt: unknown): TimeSource[] {
  if (dt === undefined) return [];
  if (!isObject(dt)) throw new Error("a DateTime resource in the ntp_config payload is not an object");
  // HPE iLO: NTPServers are the servers in use (static or from DHCP); StaticNTPServers the configured ones.
  for (const key of ["NTPServers", "StaticNTPServers"]) {
    const servers = serverList(dt[key], `DateTime.${key}`);
    if (servers.length > 0) return [{ manager, property: `DateTime.${key}`, servers, enabled: true }];
  }
  return [];
}

/**
 * Every place the service keeps time servers, from an `ntp_config` payload: per manager, the
 * NetworkProtocol's `NTP.NTPServers` (with `NTP.ProtocolEnabled`) and an OEM DateTime resource's
 * `NTPServers` (else `StaticNTPServers`). Also reads a payload stored before every manager was read (a
 * single ManagerNetworkProtocol resource, or the absent marker).
 */
export function timeSources(payload: unknown): TimeSource[] {
  if (!isObject(payload)) throw new Error("ntp_config payload is not an object");
  if (payload.present === false) return [];
  if (Array.isArray(payload.managers)) {
    return payload.managers.flatMap((m) => {
      if (!isObject(m) || typeof m.manager !== "string") {
        throw new Error(`an entry of "managers" in ntp_config payload has no "manager"`);
      }
      return [...protocolSources(m.manager, m.networkProtocol), ...dateTimeSources(m.manager, m.dateTime)];
    });
  }
  const id = typeof payload["@odata.id"] === "string" ? payload["@odata.id"] : "(unknown manager)";
  return protocolSources(id.replace(/\/NetworkProtocol\/?$/, ""), payload);
}

/**
 * Time servers in effect, from an `ntp_config` payload: the servers of every enabled source of
 * `timeSources`, trimmed and de-duplicated, in manager order. Servers listed while the manager says NTP
 * is off (`NTP.ProtocolEnabled: false`) are no time source and are left out. Throws when the payload is
 * not of the shape the adapter stores.
 */
export function ntpServers(payload: unknown): string[] {
  const out: string[] = [];
  for (const s of timeSources(payload)) {
    if (!s.enabled) continue;
    for (const server of s.servers) if (!out.includes(server)) out.push(server);
  }
  return out;
}

const text = (v: unknown): string | null => (typeof v === "string" && v.trim() !== "" ? v.trim() : null);

/**
 * Device inventory from a `system_info` payload (the ComputerSystem the controller manages): `Model`,
 * `BiosVersion` as the software version (the host firmware; the controller's own firmware is
 * `manager_info.FirmwareVersion` and every component's is in `firmware_inventory`), and `SerialNumber`.
 * All null when the service has no system (the absent marker).
 */
export function inventory(payload: unknown): DeviceInventory {
  if (!isObject(payload)) throw new Error("system_info payload is not an object");
  if (payload.present === false && payload.resource === "ComputerSystem") {
    return { model: null, softwareVersion: null, serialNumber: null };
  }
  const type = payload["@odata.type"];
  if (typeof type !== "string" || !type.includes("ComputerSystem")) {
    throw new Error(`system_info payload is not a ComputerSystem (@odata.type ${JSON.stringify(type)})`);
  }
  return {
    model: text(payload.Model),
    softwareVersion: text(payload.BiosVersion),
    serialNumber: text(payload.SerialNumber),
  };
}

/** The Redfish resource type of a payload (`#Chassis.v1_28_0.Chassis` → `Chassis`), or null. */
function resourceType(payload: Record<string, unknown>): string | null {
  const t = payload["@odata.type"];
  return typeof t === "string" ? (t.replace(/^#/, "").split(".")[0] || null) : null;
}

/**
 * Power state of the managed host, from a `system_info` payload: the ComputerSystem's `PowerState`
 * (`On`, `Off`, `PoweringOn`, `PoweringOff`, `Paused`), null when the system does not report it or the
 * service has no system (the absent marker). Throws when the payload is no ComputerSystem.
 */
export function powerState(payload: unknown): string | null {
  if (!isObject(payload)) throw new Error("system_info payload is not an object");
  if (payload.present === false) return null;
  if (resourceType(payload) !== "ComputerSystem") {
    throw new Error(
      `system_info payload is not a ComputerSystem (@odata.type ${JSON.stringify(payload["@odata.type"])})`,
    );
  }
  return text(payload.PowerState);
}

/**
 * Health of the resource in a `system_info` (ComputerSystem), `chassis_info` (Chassis) or `manager_info`
 * (Manager) payload: its `Status.Health` (`OK`, `Warning`, `Critical`; the resource's own health, not
 * `HealthRollup`), null when not reported or when the service does not offer the resource (the absent
 * marker). `resource` names it as `<type> <Id>`, e.g. `Chassis 1U`. Throws on any other payload.
 */
export function resourceHealth(payload: unknown): { resource: string; health: string | null } {
  if (!isObject(payload)) throw new Error("payload is not an object");
  if (payload.present === false && typeof payload.resource === "string") {
    return { resource: `${payload.resource} (not offered)`, health: null };
  }
  const type = resourceType(payload);
  if (type !== "ComputerSystem" && type !== "Chassis" && type !== "Manager") {
    throw new Error(
      `payload is not a ComputerSystem, Chassis or Manager (@odata.type ${
        JSON.stringify(payload["@odata.type"])
      })`,
    );
  }
  const id = text(payload.Id) ?? text(payload["@odata.id"]) ?? "(no Id)";
  const status = payload.Status;
  return { resource: `${type} ${id}`, health: isObject(status) ? text(status.Health) : null };
}

/** The `vendor-a-bmc` adapter: a Redfish server management controller. */
const adapter: AdapterDefinition = defineAdapter({
  vendorKey: "vendor-a-bmc",
  displayName: "Server management controller (Redfish)",
  coreVersion: "^1.0.0",
  deviceRoles: ["bmc"],
  labels: LABELS,
  facts: { ntpServers, inventory, powerState, resourceHealth },
  inventoryLabel: "system_info",
  volatilePaths: VOLATILE_PATHS,
  create: (ctx) => new RedfishSession(ctx),
  // Sessions are never parked (one per cycle, deleted in close()); this only guards against a
  // parked login from an older build.
  release: async (ctx, parked) => {
    if (isLogin(parked)) await deleteSession(ctx.http, parked);
  },
});

export default adapter;
