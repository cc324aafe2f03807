/**
 * `@dutlab/adapter-vendor-a-ngfw`: a firewall managed on the box by its device manager, over the FDM-style
 * REST API (`/api/fdm/latest/...`, OAuth2 bearer tokens). See README.md for labels, calls and sources.
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
  DeviceError,
} from "@dutlab/core";
import {
  API_BASE,
  asParkedTokens,
  FdmClient,
  type FdmList,
  isObject,
  parkTtlMs,
  withQuery,
} from "./_client.ts";
import { facts } from "./_facts.ts";
import { VOLATILE_PATHS } from "./_volatile.ts";

/** Labels collected on every poll, in order (7 snapshots per poll). */
export const LABELS = [
  "system_info",
  "deploy_status",
  "decrypt_policy",
  "access_rules",
  "ntp_config",
  "ha_status",
  "interfaces",
] as const;

/**
 * The latest deployment job only: newest `queuedTime` first, one item. The history is never paged (it grows
 * with every deployment).
 */
export const LATEST_DEPLOYMENT_PATH: string = withQuery("/operational/deploy", {
  limit: 1,
  sort: "-queuedTime",
});

/** CPU monitor read by the connection test; `time_duration` is in seconds. */
export const CPU_MONITOR_PATH: string = withQuery("/monitor/trendingreports/cpu", { time_duration: 300 });

function ids(list: FdmList, what: string): string[] {
  return list.items.map((item) => {
    if (!isObject(item) || typeof item.id !== "string" || item.id === "") {
      throw new DeviceError("protocol_error", `An item of ${what} has no "id"`);
    }
    return item.id;
  });
}

class FdmSession implements AdapterSession {
  #client: FdmClient;

  constructor(private readonly ctx: AdapterContext) {
    this.#client = new FdmClient(ctx.http, ctx.credentials, asParkedTokens(ctx.sessions.get()));
  }

  async testConnection(): Promise<ConnectionTestResult> {
    const where = `GET ${API_BASE}${CPU_MONITOR_PATH}`;
    const report = await this.#client.getJson(CPU_MONITOR_PATH);
    if (!Array.isArray(report.items)) {
      throw new DeviceError("protocol_error", `Trending report from ${where} has no "items"`);
    }
    let newest: { timestamp: number; avgUsage: number } | null = null;
    for (const i of report.items) {
      if (!isObject(i) || typeof i.avgUsage !== "number") continue;
      const timestamp = typeof i.timestamp === "number" ? i.timestamp : 0;
      if (!newest || timestamp >= newest.timestamp) newest = { timestamp, avgUsage: i.avgUsage };
    }
    if (!newest) {
      return {
        cpuDetail: `CPU monitor reachable, no sample in the last 300 s, from ${where}`,
        cpuPercent: null,
      };
    }
    const pct = Math.round(newest.avgUsage * 10) / 10;
    return {
      cpuDetail: `CPU ${pct}% (avgUsage, newest sample) from ${where}`,
      cpuPercent: pct >= 0 && pct <= 100 ? pct : null,
    };
  }

  async collectAll(): Promise<CollectedSnapshot[]> {
    const c = this.#client;
    const systemInfo = await c.getJson("/operational/systeminfo/default");
    const deployments = await c.getJson(LATEST_DEPLOYMENT_PATH);
    if (!Array.isArray(deployments.items)) {
      throw new DeviceError(
        "protocol_error",
        `Expected a list with "items" from GET ${API_BASE}${LATEST_DEPLOYMENT_PATH}`,
      );
    }
    const pendingChanges = await c.getList("/operational/pendingchanges");
    const accessPolicies = await c.getList("/policy/accesspolicies");
    const sslPolicies = await c.getList("/policy/sslpolicies");
    const sslRules: Record<string, FdmList> = {};
    for (const id of ids(sslPolicies, "GET /policy/sslpolicies")) {
      sslRules[id] = await c.getList(`/policy/sslpolicies/${encodeURIComponent(id)}/sslrules`);
    }
    const accessRules: Record<string, FdmList> = {};
    for (const id of ids(accessPolicies, "GET /policy/accesspolicies")) {
      accessRules[id] = await c.getList(`/policy/accesspolicies/${encodeURIComponent(id)}/accessrules`);
    }
    const ntp = await c.getList("/devicesettings/default/ntp");
    const ha = await c.getJson("/devices/default/operational/ha/status/default");
    const interfaces = await c.getList("/devices/default/interfaces");
    const payloads: Record<(typeof LABELS)[number], unknown> = {
      system_info: systemInfo,
      deploy_status: { deployments: deployments as unknown as FdmList, pendingChanges },
      decrypt_policy: { accessPolicies, sslPolicies, sslRules },
      access_rules: accessRules,
      ntp_config: ntp,
      ha_status: ha,
      interfaces,
    };
    return LABELS.map((label) => ({ label, payload: payloads[label] }));
  }

  /** Park the tokens for the next cycle (the device allows only 5 sessions, shared with its web UI). */
  close(): Promise<void> {
    const t = this.#client.tokens;
    if (t) this.ctx.sessions.set(t, parkTtlMs(t));
    else this.ctx.sessions.clear();
    return Promise.resolve();
  }
}

/** The `vendor-a-ngfw` adapter. */
const adapter: AdapterDefinition = defineAdapter({
  vendorKey: "vendor-a-ngfw",
  displayName: "Firewall with device-manager API (FDM-style REST)",
  coreVersion: "^1.0.0",
  deviceRoles: ["ngfw"],
  labels: LABELS,
  facts,
  inventoryLabel: "system_info",
  volatilePaths: VOLATILE_PATHS,
  create: (ctx) => new FdmSession(ctx),
  /** Revoke a parked session's refresh and access tokens. */
  async release(ctx, parked) {
    const tokens = asParkedTokens(parked);
    if (!tokens) return;
    await new FdmClient(ctx.http, null, tokens).revoke();
  },
});

export default adapter;
