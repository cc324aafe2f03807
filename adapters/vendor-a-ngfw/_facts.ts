import type { AdapterFacts, CatalogHaState, DeviceInventory } from "@dutlab/core";

type Json = Record<string, unknown>;

function obj(v: unknown, what: string): Json {
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw new Error(`Expected ${what} to be an object`);
  }
  return v as Json;
}

function items(v: unknown, what: string): unknown[] {
  const list = obj(v, what);
  if (!Array.isArray(list.items)) throw new Error(`Expected ${what} to be an FDM list with "items"`);
  return list.items;
}

/** When a deployment job was queued (or started, or ended): its place in history. */
function jobTime(job: Json): number {
  for (const k of ["queuedTime", "startTime", "endTime"]) {
    const v = job[k];
    if (typeof v === "number" && v >= 0) return v;
  }
  return -1;
}

/**
 * `deploy_status` → state of the newest deployment job (`QUEUED`, `DEPLOYING`, `DEPLOYED`,
 * `DEPLOY_FAILED`, ...; `NO_DEPLOYMENT` when the device lists none) and the number of pending changes.
 */
export function deployState(payload: unknown): { state: string; pendingChanges: number } {
  const p = obj(payload, "the deploy_status payload");
  const jobs = items(p.deployments, "deploy_status.deployments");
  const pending = items(p.pendingChanges, "deploy_status.pendingChanges");
  let newest: Json | null = null;
  for (const j of jobs) {
    const job = obj(j, "a deployment job");
    if (typeof job.state !== "string") throw new Error(`Expected a deployment job to have a string "state"`);
    if (newest === null || jobTime(job) >= jobTime(newest)) newest = job;
  }
  return { state: newest ? newest.state as string : "NO_DEPLOYMENT", pendingChanges: pending.length };
}

/**
 * `decrypt_policy` → number of SSL rules whose `ruleAction` starts with `DECRYPT_`, counted only in SSL
 * policies attached to an access policy (`accessPolicy.sslPolicy`); a detached SSL policy decrypts nothing.
 * An attached SSL policy whose `defaultAction.policyAction` starts with `DECRYPT_` decrypts the traffic no
 * rule matches, so it counts as one more (decryption is on even with zero rules).
 */
export function decryptRuleCount(payload: unknown): number {
  const p = obj(payload, "the decrypt_policy payload");
  const attached = new Set<string>();
  for (const a of items(p.accessPolicies, "decrypt_policy.accessPolicies")) {
    const ref = obj(a, "an access policy").sslPolicy;
    if (ref === null || ref === undefined) continue;
    const id = obj(ref, "accessPolicy.sslPolicy").id;
    if (typeof id !== "string") throw new Error(`Expected accessPolicy.sslPolicy to have a string "id"`);
    attached.add(id);
  }
  const defaults = new Map<string, unknown>();
  for (const sp of items(p.sslPolicies, "decrypt_policy.sslPolicies")) {
    const policy = obj(sp, "an SSL policy");
    const action = policy.defaultAction === null || policy.defaultAction === undefined
      ? undefined
      : obj(policy.defaultAction, "sslPolicy.defaultAction").policyAction;
    if (typeof policy.id === "string") defaults.set(policy.id, action);
  }
  const rulesByPolicy = obj(p.sslRules, "decrypt_policy.sslRules");
  let n = 0;
  for (const id of attached) {
    const fallback = defaults.get(id);
    if (typeof fallback === "string" && fallback.startsWith("DECRYPT_")) n++;
    if (!Object.hasOwn(rulesByPolicy, id)) {
      throw new Error(`Expected decrypt_policy.sslRules to hold the rules of "${id}"`);
    }
    for (const r of items(rulesByPolicy[id], `decrypt_policy.sslRules["${id}"]`)) {
      const action = obj(r, "an SSL rule").ruleAction;
      if (typeof action === "string" && action.startsWith("DECRYPT_")) n++;
    }
  }
  return n;
}

/**
 * The NTP object in effect, from an `ntp_config` list: the first object with `enabled: true`; when none
 * says `enabled`, the first without the field (releases without the switch); none when every object is
 * disabled. Recent releases list more than one NTP object; only one is in effect.
 */
export function ntpObjectInEffect(payload: unknown): Json | null {
  const objects = items(payload, "the ntp_config payload").map((i) => {
    const ntp = obj(i, "an NTP object");
    if (!Array.isArray(ntp.ntpServers)) {
      throw new Error(`Expected an NTP object to have an "ntpServers" array`);
    }
    return ntp;
  });
  return objects.find((o) => o.enabled === true) ?? objects.find((o) => o.enabled === undefined) ?? null;
}

/** `ntp_config` → the NTP servers of the object in effect (see `ntpObjectInEffect`), trimmed, de-duplicated. */
export function ntpServers(payload: unknown): string[] {
  const ntp = ntpObjectInEffect(payload);
  const out: string[] = [];
  for (const s of (ntp?.ntpServers ?? []) as unknown[]) {
    if (typeof s !== "string") throw new Error(`Expected "ntpServers" to hold strings`);
    const t = s.trim();
    if (t && !out.includes(t)) out.push(t);
  }
  return out;
}

const HA_MAP: Record<string, CatalogHaState> = {
  HA_ACTIVE_NODE: "ACTIVE",
  // A standalone firewall is a sane state for a throughput test: it carries the traffic on its own.
  SINGLE_NODE: "ACTIVE",
  HA_STANDBY_NODE: "STANDBY_READY",
  HA_NEGOTIATING_NODE: "NEGOTIATION",
  HA_CONFIGURATION_SYNC: "NEGOTIATION",
};

/**
 * `ha_status` → this node's `nodeState` and its catalog state. `HA_FAILED_NODE`, `HA_SUSPENDED_NODE`,
 * `HA_DISABLED_NODE`, `HA_UNKNOWN_NODE` and anything new map to null (not sane).
 */
export function haState(payload: unknown): { raw: string; mapped: CatalogHaState | null } {
  const p = obj(payload, "the ha_status payload");
  if (typeof p.nodeState !== "string") {
    throw new Error(`Expected the ha_status payload to have a string "nodeState"`);
  }
  return { raw: p.nodeState, mapped: HA_MAP[p.nodeState] ?? null };
}

const text = (v: unknown): string | null => (typeof v === "string" && v.trim() !== "" ? v.trim() : null);

/**
 * `system_info` (`GET /operational/systeminfo/default`) → `platformModel` (e.g. "Cisco Firepower Threat
 * Defense for KVM"), `softwareVersion` (e.g. "6.6.1-91") and `serialNumber`.
 */
export function inventory(payload: unknown): DeviceInventory {
  const p = obj(payload, "the system_info payload");
  if (p.type !== undefined && p.type !== "systeminformation") {
    throw new Error(`Expected the system_info payload to be of type "systeminformation"`);
  }
  return {
    model: text(p.platformModel),
    softwareVersion: text(p.softwareVersion),
    serialNumber: text(p.serialNumber),
  };
}

export const facts: AdapterFacts = { deployState, decryptRuleCount, ntpServers, haState, inventory };
