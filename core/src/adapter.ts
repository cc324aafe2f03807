import type { DeviceHttp, TlsVerifyMode } from "./transport/types.ts";
import type { Logger } from "./util/log.ts";

export type { TlsVerifyMode } from "./transport/types.ts";

/** What an adapter knows about the device it talks to. Never includes the password. */
export interface AdapterDevice {
  /** Device id (UUID). */
  id: string;
  /** The device's host name as registered. */
  hostname: string;
  /** Vendor key (the adapter's own `vendorKey`). */
  vendor: string;
  /** The device's role, null when none is recorded. */
  deviceRole: string | null;
  /**
   * Base URL of the device's management API: its origin (`https://host[:port]`, lower-case, no trailing
   * slash), plus a path only for an adapter that declares `baseUrlPath`.
   */
  baseUrl: string;
  /** The login user name (the password comes only in `AdapterContext.credentials`). */
  username: string;
  /** How the transport verifies the device's TLS certificate. */
  tlsVerifyMode: TlsVerifyMode;
}

/** Login state an adapter may park between polls (a token or cookie, never the password). */
export interface SessionStore {
  /** The parked state, or undefined when none is parked or it expired. */
  get<T>(): T | undefined;
  /** Park state for reuse by the next cycle, until `ttlMs` from now. */
  set<T>(value: T, ttlMs: number): void;
  /** Forget the parked state (call it after logging out). */
  clear(): void;
}

/** Everything one adapter session gets from core for one connection or poll cycle. */
export interface AdapterContext {
  /** The device this session talks to. */
  device: AdapterDevice;
  /** Decrypted for this cycle only; dropped by core when the cycle ends. */
  credentials: { readonly username: string; readonly password: string };
  /** The device transport: HTTPS with the device's TLS mode, pinning, timeouts and size limits. */
  http: DeviceHttp;
  /** Session state kept across cycles for this device and credential. */
  sessions: SessionStore;
  /** Logger in the adapter's category (`adapter`, then the vendor key). */
  log: Logger;
  /** Aborted when core gives up on the cycle (device time-out, or the caller cancels); pass it to long waits. */
  signal: AbortSignal;
}

/** One collected data set: a label and the device's JSON for it. */
export interface CollectedSnapshot {
  /** One of the adapter's `labels`. */
  label: string;
  /** The device's JSON for that label, stored as the snapshot payload. */
  payload: unknown;
}

/** Result of an adapter's connection test; core adds the latency and the wording around it. */
export interface ConnectionTestResult {
  /** What was read from the CPU monitor, e.g. `CPU 12% (sys/procsys/syscpusummary)`. */
  cpuDetail: string;
  /** CPU utilisation in percent when the device reports one, else null. */
  cpuPercent: number | null;
}

/** A live adapter session for one device. */
export interface AdapterSession {
  /** Authenticate, then read the vendor's CPU monitor. */
  testConnection(): Promise<ConnectionTestResult>;
  /** Collect every label, one snapshot per label, in the order of `labels`. */
  collectAll(): Promise<CollectedSnapshot[]>;
  /** End of the cycle: log out, or park the login in `ctx.sessions` where the device allows reuse. */
  close(): Promise<void>;
  /**
   * Optional: what the operator should know about this cycle beyond its snapshots (e.g. "the session
   * service refused; this cycle used Basic authentication"). Read after `collectAll`; core appends each
   * note to the poll detail.
   */
  pollNotes?(): string[];
}

/** HA node state in the wording of the check catalog (spec 4.9). */
export type CatalogHaState = "ACTIVE" | "STANDBY_READY" | "NEGOTIATION" | "JOIN";

/**
 * Pure readings of an adapter's own payloads, used by vendor-neutral checks and reports.
 * Each throws when the payload is not of the shape the adapter stores.
 */
export interface AdapterFacts {
  /** Number of rules or policies that decrypt TLS, from a `decrypt_policy` payload. */
  decryptRuleCount?(payload: unknown): number;
  /** Configured time servers, from an `ntp_config` payload. */
  ntpServers?(payload: unknown): string[];
  /** HA state, from an `ha_status` payload: the device's own value and the catalog state it maps to. */
  haState?(payload: unknown): { raw: string; mapped: CatalogHaState | null };
  /** Deployment state and pending change count, from a `deploy_status` payload. */
  deployState?(payload: unknown): { state: string; pendingChanges: number };
  /**
   * Power state of the host a server management controller manages, from a `system_info` payload (the
   * Redfish `PowerState`: `On`, `Off`, `PoweringOn`, `PoweringOff`, `Paused`), null when not reported.
   */
  powerState?(payload: unknown): string | null;
  /**
   * Rolled-up health of the resource in a payload (a server management controller's `system_info`,
   * `chassis_info` or `manager_info`: Redfish `Status.Health`, `OK`, `Warning` or `Critical`), with the
   * resource's name as the device says it; `health` null when not reported.
   */
  resourceHealth?(payload: unknown): { resource: string; health: string | null };
  /**
   * Device inventory from the payload of the adapter's `inventoryLabel`: each member null when the device
   * does not say it.
   */
  inventory?(payload: unknown): DeviceInventory;
}

/** What a device says about itself, for a report's device inventory. */
export interface DeviceInventory {
  /** Hardware model, null when the device does not say. */
  model: string | null;
  /** Running software version, null when the device does not say. */
  softwareVersion: string | null;
  /** Serial number, null when the device does not say. */
  serialNumber: string | null;
}

/** An adapter module: the default export of `adapters/<vendor-key>/mod.ts`. */
export interface AdapterDefinition {
  /** Set by {@link defineAdapter}; the registry refuses a module listed as an adapter without it. */
  kind: "adapter";
  /** Vendor key, e.g. `vendor-a-switch`. */
  vendorKey: string;
  /** Human-readable vendor and product name shown in the UI and reports. */
  displayName: string;
  /** Caret range of `@dutlab/core` versions the adapter is written for, e.g. `^1.0.0`. */
  coreVersion: string;
  /** Device roles this vendor's devices take (first is the default). */
  deviceRoles: readonly string[];
  /** Labels collected on every successful poll, in order. Their count is the snapshot count per poll. */
  labels: readonly string[];
  /**
   * Readings of this vendor's payloads that checks and reports call; a check applies only where its `needs`
   * are offered.
   */
  facts?: AdapterFacts;
  /** The label whose payload `facts.inventory` reads (required when `facts.inventory` is given). */
  inventoryLabel?: string;
  /**
   * Optional: per label, the parts of its payload that change on every poll without meaning a change
   * (uptime, clocks, counters, gauges, session ids). Diffs, the change history and the drift annex ignore
   * them unless asked to include them. Each pattern is a JSON Pointer (RFC 6901: `/a/b`, `~1` for `/` and
   * `~0` for `~` inside a key) in which a segment that is exactly `*` matches any one object key or array
   * index, e.g. `/system/uptime` or `/counters/*` (docs/polling.md "Diffs and change history"). A pattern names a
   * member to leave out with everything under it; it never matches the whole payload (`""` is refused), and
   * a pattern that matches nothing is harmless.
   * Every key must be one of `labels`.
   */
  volatilePaths?: Readonly<Record<string, readonly string[]>>;
  /**
   * Optional: the device's API lives under a path of its origin (`https://host/mgmt`, behind a reverse
   * proxy), so a device's `baseUrl` may carry one; the transport puts it before every relative request path.
   * Without it a `baseUrl` with a path is refused (400 naming `baseUrl`): the adapter's paths are absolute on
   * the device's origin (docs/devices.md "Registering a device").
   */
  baseUrlPath?: boolean;
  /** Open a session for one device (does no I/O until a method is called). */
  create(ctx: AdapterContext): AdapterSession;
  /** Log out a parked session that core evicts (device deleted, credential rotated, shutdown). */
  release?(ctx: Omit<AdapterContext, "credentials">, parked: unknown): Promise<void>;
}

/** What an adapter module writes: its definition without `kind`, which {@link defineAdapter} sets. */
export type AdapterSpec = Omit<AdapterDefinition, "kind">;

/**
 * Declare an adapter: returns the definition with `kind: "adapter"` set, so that the registry can refuse the
 * module when the manifest lists it as something else. Carries the types.
 *
 * @example
 * ```ts
 * export default defineAdapter({
 *   vendorKey: "vendor-x", displayName: "Vendor X", coreVersion: "^1.0.0",
 *   deviceRoles: ["switch"], labels: ["system_info"],
 *   create: (ctx) => ({
 *     testConnection: async () => ({ cpuDetail: "CPU 3% (GET /api/cpu)", cpuPercent: 3 }),
 *     collectAll: async () => [{ label: "system_info", payload: await (await ctx.http.request({ path: "/api/system" })).json() }],
 *     close: () => Promise.resolve(),
 *   }),
 * });
 * ```
 */
export function defineAdapter<const T extends AdapterSpec>(
  def: T & { kind?: "adapter" },
): NoInfer<T> & { kind: "adapter" } {
  return { ...def, kind: "adapter" };
}
