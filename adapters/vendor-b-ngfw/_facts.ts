type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** `results` of one FortiOS envelope; throws when the envelope is not of that shape. */
function results(envelope: unknown, what: string): unknown {
  if (!isObj(envelope) || !("results" in envelope)) {
    throw new Error(`Cannot read ${what}: expected a FortiOS envelope with "results"`);
  }
  return envelope.results;
}

function table(envelope: unknown, what: string): Obj[] {
  const r = results(envelope, what);
  if (!Array.isArray(r) || !r.every(isObj)) throw new Error(`Cannot read ${what}: "results" is not a table`);
  return r;
}

/** Built-in profiles that decrypt; used only when the profile table lacks the named profile. */
const BUILT_IN_DEEP = new Set(["deep-inspection", "custom-deep-inspection"]);

/** Whether an SSL/SSH inspection profile does full SSL (deep) inspection. */
export function profileIsDeep(profile: Obj): boolean {
  const ssl = isObj(profile.ssl) ? profile.ssl : {};
  const https = isObj(profile.https) ? profile.https : {};
  return ssl["inspect-all"] === "deep-inspection" || https.status === "deep-inspection";
}

/** Rows of a table answer, each with the VDOM its envelope names (`vdom=*` answers one envelope per VDOM). */
function vdomTable(answer: unknown, what: string): Array<{ vdom: string; row: Obj }> {
  const envelopes = Array.isArray(answer) ? answer : [answer];
  return envelopes.flatMap((env) => {
    const vdom = isObj(env) && typeof env.vdom === "string" ? env.vdom : "root";
    return table(env, what).map((row) => ({ vdom, row }));
  });
}

/** A policy that decrypts, with the VDOM it lives in. */
export interface DecryptingPolicy {
  vdom: string;
  policyid: unknown;
  profile: string;
}

/**
 * Policies that decrypt TLS, from a `decrypt_policy` payload `{ policies, sslSshProfiles }` (each the
 * `cmdb/firewall/...?vdom=*` answer: one envelope per VDOM, or one envelope from an older poll): `status`
 * `enable`, `action` `accept`, `utm-status` `enable` (a policy without the field counts, as FortiOS
 * applies its profiles), and an `ssl-ssh-profile` of the same VDOM that does deep inspection.
 */
export function decryptingPolicies(payload: unknown): DecryptingPolicy[] {
  if (!isObj(payload) || !("policies" in payload) || !("sslSshProfiles" in payload)) {
    throw new Error("Cannot read decrypt_policy: expected { policies, sslSshProfiles }");
  }
  const policies = vdomTable(payload.policies, "decrypt_policy.policies");
  const profiles = new Map<string, boolean>();
  for (const { vdom, row } of vdomTable(payload.sslSshProfiles, "decrypt_policy.sslSshProfiles")) {
    if (typeof row.name !== "string") throw new Error("Cannot read decrypt_policy: a profile has no name");
    profiles.set(`${vdom}\0${row.name}`, profileIsDeep(row));
  }
  const out: DecryptingPolicy[] = [];
  for (const { vdom, row: p } of policies) {
    const profile = p["ssl-ssh-profile"];
    if (p.status !== "enable" || p.action !== "accept" || typeof profile !== "string" || profile === "") {
      continue;
    }
    if (p["utm-status"] !== undefined && p["utm-status"] !== "enable") continue;
    if (profiles.get(`${vdom}\0${profile}`) ?? BUILT_IN_DEEP.has(profile)) {
      out.push({ vdom, policyid: p.policyid, profile });
    }
  }
  return out;
}

/** Number of policies that decrypt, across every VDOM collected (see `decryptingPolicies`). */
export function decryptRuleCount(payload: unknown): number {
  return decryptingPolicies(payload).length;
}

/**
 * Time sources in use, from an `ntp_config` payload (the `cmdb/system/ntp` answer). `ntpsync` disabled:
 * none. `type` `fortiguard`: the FortiGuard NTP service, reported as `"fortiguard"` (its `ntpserver`
 * list is empty by design). Otherwise the `server` of each `ntpserver` entry.
 */
export function ntpServers(payload: unknown): string[] {
  const r = results(payload, "ntp_config");
  if (!isObj(r) || typeof r.ntpsync !== "string") {
    throw new Error('Cannot read ntp_config: "results.ntpsync" is missing');
  }
  if (r.ntpsync !== "enable") return [];
  if (r.type === "fortiguard") return ["fortiguard"];
  const list = r.ntpserver ?? [];
  if (!Array.isArray(list)) throw new Error('Cannot read ntp_config: "results.ntpserver" is not a list');
  return list
    .map((s) => (isObj(s) && typeof s.server === "string" ? s.server.trim() : ""))
    .filter((s) => s.length > 0);
}

const text = (v: unknown): string | null =>
  typeof v === "string" && v.trim() !== "" ? v.trim() : typeof v === "number" ? String(v) : null;

/**
 * Device inventory from a `system_info` payload (the `monitor/system/status` envelope): serial and version
 * from the envelope (`serial`; `version` plus `build`, e.g. "v7.2.5 build 1517"), model from `results`
 * (`model_name` + `model_number`, e.g. "FortiGate 60F", else `model`). FortiOS 6.2 answers an empty
 * `results`, so the model is null there.
 */
export function inventory(
  payload: unknown,
): { model: string | null; softwareVersion: string | null; serialNumber: string | null } {
  const r = results(payload, "system_info");
  const env = payload as Obj;
  const res = isObj(r) ? r : {};
  const name = text(res.model_name);
  const number = text(res.model_number);
  const version = text(env.version);
  const build = text(env.build);
  return {
    model: name && number ? `${name} ${number}` : name ?? number ?? text(res.model),
    softwareVersion: version && build ? `${version} build ${build}` : version,
    serialNumber: text(env.serial),
  };
}
