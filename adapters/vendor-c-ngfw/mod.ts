/**
 * `vendor-c-ngfw`: a PAN-OS firewall through its XML API (`/api/`).
 *
 * User name `apikey` means the password field already holds an API key; any other user name gets one with
 * `type=keygen` (user and password in a POST body, never in the URL). The key goes in the `X-PAN-KEY`
 * header of every request and is parked between cycles, not generated again each poll (a keygen ends the
 * admin's existing sessions). Every answer is stored as the XML `<response>` converted to JSON.
 * See README.md.
 *
 * @module
 */
import {
  type AdapterContext,
  type AdapterDefinition,
  type AdapterFacts,
  type AdapterSession,
  type CollectedSnapshot,
  type ConnectionTestResult,
  defineAdapter,
  DeviceError,
} from "@dutlab/core";
import { decryptRuleCount, deployState, haState, inventory, ntpServers } from "./_facts.ts";
import { VOLATILE_PATHS } from "./_volatile.ts";
import { isObj, readEnvelope, type XmlEnvelope } from "./_xml.ts";

/** The registered user name that means "the password field is an API key" (no keygen). */
export const KEY_USERNAME = "apikey";

/** The XML API's one endpoint. */
export const API_PATH = "/api/";

/** The device's own configuration root (a firewall, not Panorama). */
export const DEVICE_XPATH = "/config/devices/entry[@name='localhost.localdomain']";

/** One XML API request: an operational command or a configuration read. */
export type Call = { type: "op"; cmd: string } | { type: "config"; action: "get"; xpath: string };

const op = (cmd: string) => ({ type: "op", cmd }) as const satisfies Call;
const configGet = (xpath: string) => ({ type: "config", action: "get", xpath }) as const satisfies Call;

/** Label -> the call (or named calls) whose answers make its payload. */
export const CALLS = {
  system_info: op("<show><system><info></info></system></show>"),
  resource_usage: op("<show><system><resources></resources></system></show>"),
  ntp_config: {
    status: op("<show><ntp></ntp></show>"),
    servers: configGet(`${DEVICE_XPATH}/deviceconfig/system/ntp-servers`),
  },
  // Every vsys: the xpath selects the decryption rulebase of each vsys entry (candidate configuration).
  decrypt_policy: configGet(`${DEVICE_XPATH}/vsys/entry/rulebase/decryption`),
  // The security rulebase of every vsys (vendor-a-ngfw's access rules: what traffic passes, with which profiles).
  access_rules: configGet(`${DEVICE_XPATH}/vsys/entry/rulebase/security`),
  ha_status: op("<show><high-availability><state></state></high-availability></show>"),
  deploy_status: {
    pending: op("<check><pending-changes></pending-changes></check>"),
    jobs: op("<show><jobs><all></all></jobs></show>"),
  },
  interfaces: op("<show><interface>all</interface></show>"),
  license_status: op("<request><license><info></info></license></request>"),
} as const satisfies Record<string, Call | Record<string, Call>>;

/** The labels this adapter collects. */
export const LABELS = [
  "system_info",
  "resource_usage",
  "ntp_config",
  "decrypt_policy",
  "access_rules",
  "ha_status",
  "deploy_status",
  "interfaces",
  "license_status",
] as const satisfies readonly (keyof typeof CALLS)[];

const isCall = (c: Call | Readonly<Record<string, Call>>): c is Call => typeof c.type === "string";

/** A configuration read of a node that does not exist answers code 7 ("object not present"): not a fault. */
const CONFIG_ABSENT = ["7"];

/** How long a generated API key is reused before a new one is generated. */
const KEY_TTL_MS = 12 * 60 * 60_000;

/** What is parked between cycles: the generated API key (never the password). */
export interface ParkedKey {
  /** The API key. */
  key: string;
}

/** The query string of a call, as the XML API takes it (the key is never part of it). */
export function query(call: Call): string {
  const q = call.type === "op"
    ? new URLSearchParams({ type: "op", cmd: call.cmd })
    : new URLSearchParams({ type: "config", action: call.action, xpath: call.xpath });
  return q.toString();
}

/**
 * Management-plane CPU in percent from the `show system resources` answer (the `top` text PAN-OS
 * returns in its result): 100 minus the `%Cpu(s)` idle share, one decimal. Null when the text has no such line.
 */
export function cpuPercent(envelope: unknown): number | null {
  const result = isObj(envelope) && isObj(envelope.response) ? envelope.response.result : undefined;
  if (typeof result !== "string") return null;
  const idle = /%Cpu\(s\):.*?([0-9.]+)\s*id\b/.exec(result)?.[1];
  if (idle === undefined) return null;
  const n = Number(idle);
  return Number.isFinite(n) && n >= 0 && n <= 100 ? Math.round((100 - n) * 10) / 10 : null;
}

class XmlApiSession implements AdapterSession {
  readonly #ctx: AdapterContext;
  /** The registration holds an API key (user name `apikey`). */
  readonly #byKey: boolean;
  #key: string | null = null;
  /** Whether `#key` came from the previous cycle (then a refusal is retried once with a new key). */
  #keyParked = false;

  constructor(ctx: AdapterContext) {
    this.#ctx = ctx;
    this.#byKey = ctx.credentials.username === KEY_USERNAME;
  }

  async testConnection(): Promise<ConnectionTestResult> {
    const answer = await this.#call(CALLS.resource_usage);
    const cpu = cpuPercent(answer);
    if (cpu === null) {
      throw new DeviceError("protocol_error", `show system resources answered no "%Cpu(s)" line`);
    }
    const how = this.#byKey ? "API key" : "key from type=keygen";
    return { cpuDetail: `CPU ${cpu}% from show system resources (${how})`, cpuPercent: cpu };
  }

  async collectAll(): Promise<CollectedSnapshot[]> {
    const out: CollectedSnapshot[] = [];
    for (const label of LABELS) {
      const call: Call | Readonly<Record<string, Call>> = CALLS[label];
      if (isCall(call)) {
        out.push({ label, payload: await this.#call(call) });
      } else {
        const payload: Record<string, unknown> = {};
        for (const [key, c] of Object.entries(call)) payload[key] = await this.#call(c);
        out.push({ label, payload });
      }
    }
    return out;
  }

  close(): Promise<void> {
    // The XML API keeps no login session: a key is parked for the next cycle, nothing to log out.
    this.#key = null;
    return Promise.resolve();
  }

  #secrets(): string[] {
    return [this.#ctx.credentials.password, this.#key ?? ""];
  }

  /** One request with the key; a parked key the device refuses is replaced once by a fresh keygen. */
  async #call(call: Call): Promise<XmlEnvelope> {
    const key = await this.#apiKey();
    try {
      return await this.#send(call, key);
    } catch (e) {
      if (!(e instanceof DeviceError) || e.status !== "auth_failed" || this.#byKey || !this.#keyParked) {
        throw e;
      }
      this.#ctx.log.info("Parked API key refused by {hostname}; generating a new one", {
        hostname: this.#ctx.device.hostname,
      });
      this.#ctx.sessions.clear();
      this.#key = null;
      return await this.#send(call, await this.#apiKey());
    }
  }

  async #send(call: Call, key: string): Promise<XmlEnvelope> {
    const what = call.type === "op" ? `op ${call.cmd}` : `config ${call.action} ${call.xpath}`;
    const res = await this.#ctx.http.request({
      method: "GET",
      path: `${API_PATH}?${query(call)}`,
      headers: { "x-pan-key": key },
    });
    return readEnvelope(res, what, this.#secrets(), call.type === "config" ? CONFIG_ABSENT : []);
  }

  async #apiKey(): Promise<string> {
    if (this.#key !== null) return this.#key;
    if (this.#byKey) return (this.#key = this.#ctx.credentials.password);
    const parked = this.#ctx.sessions.get<ParkedKey>();
    if (parked?.key) {
      this.#keyParked = true;
      return (this.#key = parked.key);
    }
    this.#keyParked = false;
    const key = await this.#keygen();
    this.#ctx.sessions.set<ParkedKey>({ key }, KEY_TTL_MS);
    return (this.#key = key);
  }

  /** `type=keygen` with the user and password in a POST body (never in the URL). */
  async #keygen(): Promise<string> {
    const { username, password } = this.#ctx.credentials;
    const res = await this.#ctx.http.request({
      method: "POST",
      path: API_PATH,
      form: { type: "keygen", user: username, password },
    });
    let env: XmlEnvelope;
    try {
      env = readEnvelope(res, "type=keygen", [password]);
    } catch (e) {
      if (e instanceof DeviceError && e.status === "auth_failed") {
        throw new DeviceError(
          "auth_failed",
          `Key generation refused (type=keygen, HTTP ${res.status}): wrong user name or password, or the ` +
            `admin role has no XML API permission`,
        );
      }
      throw e;
    }
    const result = env.response.result;
    const key = isObj(result) && typeof result.key === "string" ? result.key.trim() : "";
    if (key === "") throw new DeviceError("protocol_error", "type=keygen answered success without a <key>");
    return key;
  }
}

/** The adapter, typed so that its labels and facts are known to callers. */
export type XmlApiAdapter = AdapterDefinition & {
  labels: typeof LABELS;
  facts: Required<
    Pick<AdapterFacts, "decryptRuleCount" | "ntpServers" | "haState" | "deployState" | "inventory">
  >;
};

/** The `vendor-c-ngfw` adapter. */
const adapter: XmlApiAdapter = defineAdapter({
  vendorKey: "vendor-c-ngfw",
  displayName: "Firewall with PAN-OS XML API",
  coreVersion: "^1.0.0",
  deviceRoles: ["ngfw"],
  labels: LABELS,
  facts: { decryptRuleCount, ntpServers, haState, deployState, inventory },
  inventoryLabel: "system_info",
  volatilePaths: VOLATILE_PATHS,
  create: (ctx) => new XmlApiSession(ctx),
  // A parked API key is not a session: the XML API has no logout, so there is nothing to end.
  release: () => Promise.resolve(),
});

export default adapter;
