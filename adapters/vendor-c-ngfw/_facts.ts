/**
 * Readings of the payloads `mod.ts` stores: each payload is one XML API `<response>` as JSON (`_xml.ts`
 * conventions: attributes as `@name`, `entry`/`member`/`job`/`line` always arrays), or an object of them
 * for labels read with several calls. Each throws a plain `Error` on a payload of another shape.
 */
import type { CatalogHaState, DeviceInventory } from "@dutlab/core";
import { isObj, type Obj } from "./_xml.ts";

/** `result` of a stored `<response>`; throws when the payload is not one. */
function result(envelope: unknown, what: string): unknown {
  if (!isObj(envelope) || !isObj(envelope.response)) {
    throw new Error(`Cannot read ${what}: expected an XML API <response>`);
  }
  return envelope.response.result;
}

function part(payload: unknown, key: string, what: string): unknown {
  if (!isObj(payload) || !(key in payload)) throw new Error(`Cannot read ${what}: "${key}" is missing`);
  return payload[key];
}

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : v === undefined || v === "" ? [] : [v]);
const text = (v: unknown): string | null => {
  if (typeof v !== "string") return null;
  const t = v.trim();
  return t === "" || t.toLowerCase() === "unknown" ? null : t;
};

/** Actions of a decryption rule that decrypt (`decrypt-and-forward` decrypts for a security chain). */
const DECRYPTING_ACTIONS = new Set(["decrypt", "decrypt-and-forward"]);

/** A decryption rule that decrypts: its name and the position of its vsys rulebase in the answer. */
export interface DecryptingRule {
  rulebase: number;
  name: string;
  action: string;
}

/**
 * Decryption rules that decrypt, from a `decrypt_policy` payload (the `config get` of
 * `vsys/entry/rulebase/decryption`: one `<decryption>` per vsys that has a rulebase): `action` `decrypt`
 * or `decrypt-and-forward`, and not `<disabled>yes</disabled>`. An empty answer (code 7, no rulebase) has none.
 */
export function decryptingRules(payload: unknown): DecryptingRule[] {
  const r = result(payload, "decrypt_policy");
  if (r === undefined || r === "") return [];
  if (!isObj(r)) throw new Error("Cannot read decrypt_policy: <result> is not an element");
  const out: DecryptingRule[] = [];
  list(r.decryption).forEach((rb, i) => {
    if (rb === "") return;
    if (!isObj(rb)) throw new Error("Cannot read decrypt_policy: a <decryption> is not an element");
    const rules = rb.rules === undefined || rb.rules === "" ? {} : rb.rules;
    if (!isObj(rules)) throw new Error("Cannot read decrypt_policy: <rules> is not an element");
    for (const e of list(rules.entry)) {
      if (!isObj(e)) throw new Error("Cannot read decrypt_policy: a rule is not an <entry>");
      const action = typeof e.action === "string" ? e.action.trim() : "";
      if (!DECRYPTING_ACTIONS.has(action) || e.disabled === "yes") continue;
      out.push({ rulebase: i, name: String(e["@name"] ?? ""), action });
    }
  });
  return out;
}

/** Number of enabled decryption rules that decrypt, across every vsys (see `decryptingRules`). */
export function decryptRuleCount(payload: unknown): number {
  return decryptingRules(payload).length;
}

/**
 * Time servers, from an `ntp_config` payload `{ status, servers }`: the configured
 * `primary-ntp-server` and `secondary-ntp-server` addresses (`servers`, the configuration); when the
 * configuration answer has none, the servers `show ntp` (`status`) names (`ntp-server-N.name`). `show ntp`
 * with only `<synched>LOCAL</synched>` and no configured address: none.
 */
export function ntpServers(payload: unknown): string[] {
  const out: string[] = [];
  const add = (v: unknown) => {
    const t = text(v);
    if (t !== null && !out.includes(t)) out.push(t);
  };
  const conf = result(part(payload, "servers", "ntp_config"), "ntp_config.servers");
  if (conf !== undefined && conf !== "") {
    if (!isObj(conf)) throw new Error("Cannot read ntp_config.servers: <result> is not an element");
    const ntp = isObj(conf["ntp-servers"]) ? conf["ntp-servers"] : {};
    for (const k of ["primary-ntp-server", "secondary-ntp-server"]) {
      const s = ntp[k];
      if (isObj(s)) add(s["ntp-server-address"]);
    }
  }
  if (out.length > 0) return out;
  const status = result(part(payload, "status", "ntp_config"), "ntp_config.status");
  if (isObj(status)) {
    for (const [k, v] of Object.entries(status)) if (/^ntp-server-\d+$/.test(k) && isObj(v)) add(v.name);
  }
  return out;
}

/**
 * PAN-OS HA states (`show high-availability state`, `group.local-info.state`) in the catalog's words.
 * `initial` is the state after boot, before the peers agree: NEGOTIATION. Active/active nodes are
 * `active-primary` / `active-secondary`. `non-functional`, `suspended` and `tentative` (an active/active
 * node after a link or path monitoring failure) are not sane and map to null.
 */
export const HA_MAP: Readonly<Record<string, CatalogHaState>> = {
  active: "ACTIVE",
  "active-primary": "ACTIVE",
  "active-secondary": "ACTIVE",
  passive: "STANDBY_READY",
  initial: "NEGOTIATION",
};

/**
 * HA state from an `ha_status` payload: `<enabled>no</enabled>` is a standalone firewall, reported as
 * `standalone` and mapped to ACTIVE (it carries the traffic alone, as `SINGLE_NODE` does for
 * vendor-a-ngfw); otherwise this node's `group.local-info.state`, mapped by `HA_MAP`.
 */
export function haState(payload: unknown): { raw: string; mapped: CatalogHaState | null } {
  const r = result(payload, "ha_status");
  if (!isObj(r) || typeof r.enabled !== "string") {
    throw new Error('Cannot read ha_status: "result.enabled" is missing');
  }
  if (r.enabled !== "yes") return { raw: "standalone", mapped: "ACTIVE" };
  const group = isObj(r.group) ? r.group : {};
  const local = isObj(group["local-info"]) ? group["local-info"] : {};
  const state = text(local.state);
  if (state === null) throw new Error('Cannot read ha_status: "group.local-info.state" is missing');
  return { raw: state, mapped: HA_MAP[state.toLowerCase()] ?? null };
}

/** Job types of a commit (`show jobs all`): a commit by an admin, the auto-commit at boot. */
const COMMIT_JOB = /^(commit|autocom)/i;

/** A commit job's state in the deploy check's words: FIN+OK is DEPLOYED, FIN+FAIL is DEPLOY_FAILED. */
function jobState(job: Obj): string {
  const status = text(job.status)?.toUpperCase() ?? "";
  const res = text(job.result)?.toUpperCase() ?? "";
  if (status === "FIN") return res === "OK" ? "DEPLOYED" : res === "FAIL" ? "DEPLOY_FAILED" : `FIN_${res}`;
  if (status === "ACT") return "DEPLOYING";
  if (status === "PEND" || text(job.queued)?.toUpperCase() === "YES") return "QUEUED";
  return status || "UNKNOWN";
}

/**
 * Deployment state from a `deploy_status` payload `{ pending, jobs }`: the newest commit job of
 * `show jobs all` (highest `id` among types `Commit*`/`AutoCom`; `NO_DEPLOYMENT` when none is listed) and
 * the pending changes of `check pending-changes` (`yes` -> 1: PAN-OS says whether, not how many).
 */
export function deployState(payload: unknown): { state: string; pendingChanges: number } {
  const pending = result(part(payload, "pending", "deploy_status"), "deploy_status.pending");
  if (typeof pending !== "string" || !/^(yes|no)$/.test(pending.trim())) {
    throw new Error('Cannot read deploy_status.pending: expected "yes" or "no"');
  }
  const jobs = result(part(payload, "jobs", "deploy_status"), "deploy_status.jobs");
  if (jobs !== undefined && jobs !== "" && !isObj(jobs)) {
    throw new Error("Cannot read deploy_status.jobs: <result> is not an element");
  }
  let newest: Obj | null = null;
  for (const j of list(isObj(jobs) ? jobs.job : undefined)) {
    if (!isObj(j)) throw new Error("Cannot read deploy_status.jobs: a <job> is not an element");
    if (!COMMIT_JOB.test(text(j.type) ?? "")) continue;
    if (newest === null || Number(j.id) > Number(newest.id)) newest = j;
  }
  return {
    state: newest ? jobState(newest) : "NO_DEPLOYMENT",
    pendingChanges: pending.trim() === "yes" ? 1 : 0,
  };
}

/**
 * Device inventory from a `system_info` payload (`show system info`): `model` (e.g. `PA-VM`,
 * `PA-7050`), `sw-version` (e.g. `10.2.3`, `9.1.12-h3`) and `serial`; `unknown` (an unlicensed VM's serial)
 * is null.
 */
export function inventory(payload: unknown): DeviceInventory {
  const r = result(payload, "system_info");
  if (!isObj(r) || !isObj(r.system)) throw new Error('Cannot read system_info: "result.system" is missing');
  const s = r.system;
  return { model: text(s.model), softwareVersion: text(s["sw-version"]), serialNumber: text(s.serial) };
}
