/** The NX-API REST (DME) answer envelope: `{"totalCount":"1","imdata":[{"<class>":{...}}]}`. */
export interface DmeEnvelope {
  totalCount?: string;
  imdata: unknown[];
}

/** One managed object as the DME renders it: `{"attributes":{...strings...},"children":[...]}`. */
export interface DmeObject {
  attributes: Record<string, string>;
  children?: Array<Record<string, DmeObject>>;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

export function isEnvelope(v: unknown): v is DmeEnvelope {
  return isRecord(v) && Array.isArray(v.imdata);
}

/** The device's own error in an envelope (`imdata[0].error.attributes`), if it carries one. */
export function dmeError(v: unknown): { code: string; text: string } | null {
  if (!isEnvelope(v)) return null;
  const first = v.imdata[0];
  if (!isRecord(first) || !isRecord(first.error) || !isRecord(first.error.attributes)) return null;
  const a = first.error.attributes;
  return { code: String(a.code ?? ""), text: String(a.text ?? "") };
}

/** The objects of class `cls` in an envelope's `imdata`, in order. Throws on a malformed entry. */
export function objectsOf(v: DmeEnvelope, cls: string): DmeObject[] {
  const out: DmeObject[] = [];
  for (const item of v.imdata) {
    if (!isRecord(item)) throw new Error(`imdata entry is not an object`);
    const mo = item[cls];
    if (mo === undefined) continue;
    if (!isRecord(mo) || !isRecord(mo.attributes)) throw new Error(`"${cls}" has no attributes object`);
    out.push(mo as unknown as DmeObject);
  }
  return out;
}

/** The children of class `cls` of one object (none when it has no `children`). */
export function childrenOf(mo: DmeObject, cls: string): DmeObject[] {
  if (mo.children === undefined) return [];
  if (!Array.isArray(mo.children)) throw new Error(`"children" is not an array`);
  const out: DmeObject[] = [];
  for (const child of mo.children) {
    if (!isRecord(child)) throw new Error(`A child entry is not an object`);
    const c = child[cls];
    if (c === undefined) continue;
    if (!isRecord(c) || !isRecord(c.attributes)) throw new Error(`Child "${cls}" has no attributes object`);
    out.push(c as unknown as DmeObject);
  }
  return out;
}

/**
 * Configured NTP providers from an `ntp_config` payload (the answer to
 * `GET /api/mo/sys/time.json?rsp-subtree=full`): the `name` of every `datetimeNtpProvider` child of
 * `datetimeClkPol`, servers and peers alike. No provider children means none configured. A clock policy
 * whose `adminSt` is `disabled` has NTP switched off: its providers are no time source and are left out.
 */
export function ntpServers(payload: unknown): string[] {
  if (!isEnvelope(payload)) {
    throw new Error(`Not an ntp_config payload: expected a DME envelope with an "imdata" array`);
  }
  const nonEmpty = payload.imdata.filter((i) => isRecord(i) && Object.keys(i).length > 0);
  const policies = objectsOf(payload, "datetimeClkPol");
  if (nonEmpty.length > 0 && policies.length === 0) {
    throw new Error(`Not an ntp_config payload: "imdata" holds no "datetimeClkPol" object`);
  }
  const names: string[] = [];
  for (const pol of policies) {
    if (pol.attributes.adminSt === "disabled") continue;
    for (const prov of childrenOf(pol, "datetimeNtpProvider")) {
      const name = prov.attributes.name;
      if (typeof name !== "string" || name === "") {
        throw new Error(`A "datetimeNtpProvider" has no "name" attribute`);
      }
      names.push(name);
    }
  }
  return names;
}

const attr = (env: unknown, cls: string, name: string): string | null => {
  if (!isEnvelope(env)) return null;
  const v = objectsOf(env, cls)[0]?.attributes[name];
  return typeof v === "string" && v.trim() !== "" ? v.trim() : null;
};

/**
 * Device inventory from a `system_info` payload `{ topSystem, showVersion, chassis }`: model from the
 * chassis object `eqptCh` (`model`, else `descr`), software version `sysmgrShowVersion.nxosVersion`, serial
 * `topSystem.serial` (else `eqptCh.ser`). A member is null when the switch does not say it (e.g. a payload
 * stored before `chassis` was collected).
 */
export function inventory(
  payload: unknown,
): { model: string | null; softwareVersion: string | null; serialNumber: string | null } {
  if (!isRecord(payload) || !isEnvelope(payload.topSystem) || !isEnvelope(payload.showVersion)) {
    throw new Error(`Not a system_info payload: expected { topSystem, showVersion } DME envelopes`);
  }
  return {
    model: attr(payload.chassis, "eqptCh", "model") ?? attr(payload.chassis, "eqptCh", "descr"),
    softwareVersion: attr(payload.showVersion, "sysmgrShowVersion", "nxosVersion"),
    serialNumber: attr(payload.topSystem, "topSystem", "serial") ?? attr(payload.chassis, "eqptCh", "ser"),
  };
}
