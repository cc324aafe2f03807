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
  membersOf,
  RedfishClient,
  type RedfishLogin,
  type Resource,
  SERVICE_ROOT,
} from "./_redfish.ts";

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
  present: false;
  /** Redfish resource type that is missing, e.g. `Thermal`. */
  resource: string;
  /** Why: which resource does not link it. */
  detail: string;
}

/** Payload of `firmware_inventory`: the collection and each member, keyed by its `@odata.id`. */
export interface FirmwareInventoryPayload {
  collection: Resource;
  members: Record<string, Resource>;
}

const absent = (resource: string, detail: string): AbsentResource => ({ present: false, resource, detail });

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v);

/** Concurrent GETs against one BMC; small, as BMC web servers are slow and single-threaded. */
const MEMBER_CONCURRENCY = 4;
/** Processors looked at for a CPU figure (GPUs, FPGAs and the like are skipped). */
const MAX_PROCESSORS = 8;

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

  async #firstMember(collectionPath: string | null): Promise<string | null> {
    if (!collectionPath) return null;
    return membersOf(await this.#rf.get(collectionPath), collectionPath)[0] ?? null;
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
        try {
          out[i] = await this.#rf.get(paths[i]);
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
    const collection = await this.#rf.get(inventoryPath);
    const paths = membersOf(collection, inventoryPath);
    const bodies = await this.#getAll(paths);
    return { collection, members: Object.fromEntries(paths.map((p, i) => [p, bodies[i]])) };
  }

  async collectAll(): Promise<CollectedSnapshot[]> {
    const t = await this.#topology();
    const system = t.system ??
      absent(
        "ComputerSystem",
        t.systemsPath ? `${t.systemsPath} has no members` : "The service root links no Systems collection",
      );
    const manager = t.manager ?? absent("Manager", "Neither the system nor the service root links a manager");
    const protocolPath = linkOf(t.manager, "NetworkProtocol");
    const ntp = protocolPath ? await this.#rf.get(protocolPath) : absent(
      "ManagerNetworkProtocol",
      t.manager
        ? `${t.managerPath} links no NetworkProtocol resource, so NTP is not reported`
        : "No manager found, so NTP is not reported",
    );

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
      const procs = membersOf(await this.#rf.get(procsPath), procsPath).slice(0, MAX_PROCESSORS);
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
      cpuDetail: `Redfish session created, but the controller reports no CPU load: ` +
        `${t.managerPath ?? "no manager"} offers no ManagerDiagnosticData and ` +
        `${procsPath ?? "no system"} offers no ProcessorMetrics`,
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
}

function isLogin(v: unknown): v is RedfishLogin {
  return isObject(v) && typeof v.token === "string" && typeof v.sessionPath === "string";
}

/**
 * Configured time servers from an `ntp_config` payload (a ManagerNetworkProtocol resource):
 * `NTP.NTPServers` without empty strings and nulls; `[]` when the NTP block is missing or the
 * manager has no NetworkProtocol resource. `NTP.ProtocolEnabled` is not consulted.
 */
export function ntpServers(payload: unknown): string[] {
  if (!isObject(payload)) throw new Error("ntp_config payload is not an object");
  if (payload.present === false && payload.resource === "ManagerNetworkProtocol") return [];
  const type = payload["@odata.type"];
  if (typeof type !== "string" || !type.includes("ManagerNetworkProtocol")) {
    throw new Error(
      `ntp_config payload is not a ManagerNetworkProtocol resource (@odata.type ${JSON.stringify(type)})`,
    );
  }
  const ntp = payload.NTP;
  if (ntp === undefined || ntp === null) return [];
  if (!isObject(ntp)) throw new Error(`"NTP" in ntp_config payload is not an object`);
  const servers = ntp.NTPServers;
  if (servers === undefined || servers === null) return [];
  if (!Array.isArray(servers)) throw new Error(`"NTP.NTPServers" in ntp_config payload is not a list`);
  return servers.flatMap((s) => {
    if (s === null) return [];
    if (typeof s !== "string") {
      throw new Error(`"NTP.NTPServers" holds a non-string entry ${JSON.stringify(s)}`);
    }
    return s.trim() ? [s.trim()] : [];
  });
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

const adapter: AdapterDefinition = defineAdapter({
  kind: "adapter",
  vendorKey: "vendor-a-bmc",
  displayName: "Server management controller (Redfish)",
  coreVersion: "^1.0.0",
  deviceRoles: ["bmc"],
  labels: LABELS,
  facts: { ntpServers, inventory },
  inventoryLabel: "system_info",
  create: (ctx) => new RedfishSession(ctx),
  // Sessions are never parked (one per cycle, deleted in close()); this only guards against a
  // parked login from an older build.
  release: async (ctx, parked) => {
    if (isLogin(parked)) await deleteSession(ctx.http, parked);
  },
});

export default adapter;
