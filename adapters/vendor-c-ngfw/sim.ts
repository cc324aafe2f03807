/**
 * A PAN-OS firewall's XML API (`/api/`) on loopback HTTPS with its own certificate, for tests and the `lab`
 * task. Speaks `type=keygen` (user and password in the query or a POST body; the same key for a user until
 * the keys are revoked, as without an API key lifetime), `X-PAN-KEY` or `key=` on every other request,
 * `type=op` for the operational commands the adapter sends and `type=config&action=get` for the three
 * configuration nodes it reads. The answers follow the shapes of real devices' answers (testdata/README.md);
 * `state` holds the device data.
 *
 * @module
 */
import { type LabControls, type SimulatedDevice, type Simulator, startSimulator } from "@dutlab/core/testing";
import { XMLBuilder } from "fast-xml-parser";
import { CALLS } from "./mod.ts";

/** A PAN-OS object (parsed XML), as the simulator holds it. */
export type Obj = Record<string, unknown>;

/** A decryption rule (`rulebase/decryption/rules/entry`), in PAN-OS element names. */
export interface SimDecryptRule {
  /** The rule's `name` attribute. */
  name: string;
  /** `decrypt`, `no-decrypt` or `decrypt-and-forward`. */
  action: string;
  /** `<type>`: `ssl-forward-proxy` or `ssl-inbound-inspection`. */
  type?: string;
  /** `<disabled>yes</disabled>`. */
  disabled?: boolean;
}

/** A job of `show jobs all`. */
export interface SimJob {
  /** Job id. */
  id: number;
  /** `Commit`, `AutoCom`, `Downld`, `WildFire`, ... */
  type: string;
  /** `FIN`, `ACT`, `PEND`. */
  status: string;
  /** `OK`, `FAIL`, `PEND`. */
  result: string;
  /** `<details><line>` entries. */
  details?: string[];
}

/** The device data the simulator serves; tests and the lab change it between polls. */
export interface PanSimState {
  /** `show system info` `<system>` fields (strings, as the device sends them). */
  system: Record<string, string>;
  /** When the device booted (ms since the epoch), for `uptime`. */
  bootedAt: number;
  /** `%Cpu(s)` idle share in `show system resources`. */
  cpuIdle: number;
  /** Configured NTP server addresses (primary, secondary), `deviceconfig/system/ntp-servers`. */
  ntpServers: string[];
  /** HA: off (standalone), or this node's state and its peer's. */
  ha: { enabled: boolean; mode: string; localState: string; peerState: string; since: number };
  /** `check pending-changes` answers `yes`. */
  pendingChanges: boolean;
  /** `show jobs all`, oldest first. */
  jobs: SimJob[];
  /** Decryption rules per vsys, in order (`vsys1` first). */
  vsys: Record<string, SimDecryptRule[]>;
  /** Security rules (`rulebase/security/rules/entry`, PAN-OS element names) per vsys. */
  securityRules: Record<string, Obj[]>;
  /** `show interface all`: `<ifnet>` and `<hw>` entries. */
  interfaces: { ifnet: Obj[]; hw: Obj[] };
  /** `request license info` entries. */
  licenses: Obj[];
}

/** Options of {@link startSimulatedDevice}. */
export interface VendorSimOptions {
  /** Port to listen on (default: a free one). */
  port?: number;
  /** `apikey` makes `credentials` the key pair; anything else is the admin user name. */
  username?: string;
  /** Admin password, or the API key when `username` is `apikey`. */
  password?: string;
  /** The pre-generated API key a `apikey` registration holds. */
  apiKey?: string;
}

/** One `type=keygen` or refused request, in order, for tests that prove how the adapter authenticated. */
export interface KeyEvent {
  /** When (ms since the epoch). */
  at: number;
  /** What happened. */
  event: "keygen" | "keygen_refused" | "key_refused";
  /** User name given, if any. */
  username?: string;
}

/** The simulated PAN-OS firewall handed to tests and the lab task. */
export interface VendorSim extends SimulatedDevice {
  /** `https://127.0.0.1:<port>` */
  readonly url: string;
  /** SHA-256 (hex) of the certificate being served. */
  readonly fingerprint: string;
  /** Device state; change it between polls. */
  state: PanSimState;
  /** The key registration: `apikey` + a valid key. */
  keyCredentials: { username: string; password: string };
  /** The password registration: admin user + password. */
  passwordCredentials: { username: string; password: string };
  /** `type=keygen` requests and refused keys, in order. */
  keyEvents: KeyEvent[];
  /** Keys the device accepts now (generated ones and the pre-generated one). */
  validKeys(): string[];
  /**
   * Answers to use instead of the device's for one command or xpath (after authentication), keyed by the
   * `cmd` or `xpath` parameter, e.g. an HTML page or a truncated body.
   */
  overrides: Map<string, () => Response>;
}

const DEFAULT_ADMIN = "admin";
const DEFAULT_PASSWORD = "dutlab-PanOS-2026";
/** A base64 key, as the device gives (any value works: the simulator compares it as a string). */
const DEFAULT_KEY = "LUFRPT1kdXRsYWJTaW1LZXkwMTIzNDU2Nzg5PWRMYjJ1ZzZ3U0E9PQ==";
const KEY_USER = "apikey";

const builder = new XMLBuilder({
  ignoreAttributes: false,
  attributeNamePrefix: "@",
  suppressEmptyNode: true,
});

const xml = (body: string, status = 200) =>
  new Response(body, { status, headers: { "content-type": "application/xml; charset=UTF-8" } });
const envelope = (inner: Obj, attrs: Obj = { "@status": "success" }) =>
  xml(builder.build({ response: { ...attrs, ...inner } }));
/** The device's refusal of a key or a login (PAN-OS answers HTTP 403 with this body). */
const refused = () =>
  xml(
    `<response status = 'error' code = '403'><result><msg>Invalid Credential</msg></result></response>`,
    403,
  );

function randomKey(): string {
  const raw = crypto.getRandomValues(new Uint8Array(36));
  return "LUFRPT" + btoa(String.fromCharCode(...raw)).replace(/=+$/, "") + "==";
}

/** A decryption rule in the simulator's shape. */
export function simDecryptRule(name: string, action = "decrypt", disabled = false): SimDecryptRule {
  return { name, action, type: "ssl-forward-proxy", disabled };
}

/** The device state a fresh simulator starts with. */
export function defaultState(): PanSimState {
  return {
    system: {
      hostname: "pa-lab-1",
      "ip-address": "192.0.2.10",
      netmask: "255.255.255.0",
      "default-gateway": "192.0.2.1",
      "is-dhcp": "no",
      "mac-address": "52:54:00:0d:c8:77",
      devicename: "pa-lab-1",
      family: "vm",
      model: "PA-VM",
      serial: "007954000123456",
      "vm-mode": "KVM",
      "sw-version": "11.1.4-h7",
      "app-version": "8905-9134",
      "av-version": "5021-5539",
      "threat-version": "8905-9134",
      "url-db": "paloaltonetworks",
      "logdb-version": "11.1.2",
      "platform-family": "vm",
      "vpn-disable-mode": "off",
      "multi-vsys": "off",
      "operational-mode": "normal",
      "device-certificate-status": "Valid",
    },
    bootedAt: Date.now() - 3 * 86_400_000,
    cpuIdle: 96.5,
    ntpServers: ["0.pool.ntp.org", "1.pool.ntp.org"],
    ha: {
      enabled: false,
      mode: "Active-Passive",
      localState: "active",
      peerState: "passive",
      since: Date.now(),
    },
    pendingChanges: false,
    jobs: [
      {
        id: 1,
        type: "AutoCom",
        status: "FIN",
        result: "OK",
        details: ["Configuration committed successfully"],
      },
      {
        id: 2,
        type: "Commit",
        status: "FIN",
        result: "OK",
        details: ["Configuration committed successfully"],
      },
    ],
    vsys: {
      vsys1: [
        simDecryptRule("no-decrypt-finance", "no-decrypt"),
        simDecryptRule("lab-decrypt-outbound", "decrypt", true),
      ],
    },
    securityRules: {
      vsys1: [{
        "@name": "lab-throughput-permit",
        from: { member: ["trust"] },
        to: { member: ["untrust"] },
        source: { member: ["any"] },
        destination: { member: ["any"] },
        "source-user": { member: ["any"] },
        application: { member: ["any"] },
        service: { member: ["application-default"] },
        category: { member: ["any"] },
        action: "allow",
        "profile-setting": { group: { member: ["default"] } },
      }],
    },
    interfaces: {
      ifnet: [
        {
          name: "ethernet1/1",
          zone: "untrust",
          fwd: "vr:default",
          vsys: "1",
          tag: "0",
          ip: "198.51.100.1/24",
        },
        { name: "ethernet1/2", zone: "trust", fwd: "vr:default", vsys: "1", tag: "0", ip: "10.0.0.1/24" },
      ],
      hw: [
        { name: "ethernet1/1", duplex: "full", type: "0", state: "up", st: "10000/full/up", speed: "10000" },
        { name: "ethernet1/2", duplex: "full", type: "0", state: "up", st: "10000/full/up", speed: "10000" },
      ],
    },
    licenses: [
      {
        feature: "Threat Prevention",
        description: "Threat Prevention",
        serial: "007954000123456",
        issued: "January 05, 2026",
        expires: "January 05, 2027",
        expired: "no",
        authcode: "",
      },
    ],
  };
}

function uptime(ms: number): string {
  const s = Math.floor(ms / 1000);
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = String(Math.floor((s % 3600) / 60)).padStart(2, "0");
  return `${d} days, ${h}:${m}:${String(s % 60).padStart(2, "0")}`;
}

/** Operational commands, keyed by the `cmd` with its whitespace removed. */
function opAnswer(state: PanSimState, cmd: string): Response | null {
  const now = Date.now();
  switch (cmd.replace(/\s+/g, "")) {
    case "<show><system><info></info></system></show>":
    case "<show><system><info/></system></show>":
      return envelope({
        result: {
          system: {
            ...state.system,
            time: new Date(now).toUTCString().replace(/ GMT$/, ""),
            uptime: uptime(now - state.bootedAt),
          },
        },
      });
    case "<show><system><resources></resources></system></show>": {
      const idle = state.cpuIdle.toFixed(1);
      const busy = (100 - state.cpuIdle).toFixed(1);
      const top = `top - ${new Date(now).toISOString().slice(11, 19)} up ${uptime(now - state.bootedAt)}, ` +
        `0 users,  load average: 0.26, 0.18, 0.19\nTasks: 456 total,   1 running, 452 sleeping\n` +
        `%Cpu(s): ${busy} us,  0.0 sy,  0.0 ni, ${idle} id,  0.0 wa,  0.0 hi,  0.0 si,  0.0 st\n` +
        `MiB Mem :  15739.8 total,   6728.6 free,   6179.2 used,   2832.0 buff/cache\n`;
      return xml(`<response status="success"><result><![CDATA[${top}]]></result></response>`);
    }
    case "<show><ntp></ntp></show>": {
      const result: Obj = {};
      state.ntpServers.forEach((name, i) => {
        result[`ntp-server-${i + 1}`] = {
          "authentication-type": "none",
          name,
          reachable: "yes",
          status: i === 0 ? "synched" : "available",
        };
      });
      result.synched = state.ntpServers[0] ?? "LOCAL";
      return envelope({ result });
    }
    case "<show><high-availability><state></state></high-availability></show>": {
      const h = state.ha;
      if (!h.enabled) return envelope({ result: { enabled: "no" } });
      const duration = String(Math.floor((now - h.since) / 1000));
      return envelope({
        result: {
          enabled: "yes",
          group: {
            mode: h.mode,
            "local-info": {
              version: "1",
              state: h.localState,
              "state-duration": duration,
              mode: h.mode,
              "platform-model": state.system.model,
              priority: "100",
              preemptive: "no",
              "state-sync": "Complete",
            },
            "peer-info": {
              "conn-status": "up",
              state: h.peerState,
              "state-duration": duration,
              mode: h.mode,
              "platform-model": state.system.model,
              priority: "110",
            },
            "running-sync": "synchronized",
            "running-sync-enabled": "yes",
          },
        },
      });
    }
    case "<check><pending-changes></pending-changes></check>":
      return envelope({ result: state.pendingChanges ? "yes" : "no" });
    case "<show><jobs><all></all></jobs></show>": {
      const job = [...state.jobs].sort((a, b) => b.id - a.id).map((j) => ({
        tenq: "2026/11/20 09:00:00",
        tdeq: "09:00:00",
        id: String(j.id),
        user: j.type === "Commit" ? "admin" : "",
        type: j.type,
        status: j.status,
        queued: j.status === "PEND" ? "YES" : "NO",
        stoppable: "no",
        result: j.result,
        tfin: j.status === "FIN" ? "2026/11/20 09:00:30" : "",
        description: "",
        positionInQ: "0",
        progress: j.status === "FIN" ? "100" : "30",
        details: { line: j.details ?? [] },
        warnings: "",
      }));
      return envelope({ result: job.length ? { job } : "" });
    }
    case "<show><interface>all</interface></show>":
      return envelope({
        result: { ifnet: { entry: state.interfaces.ifnet }, hw: { entry: state.interfaces.hw } },
      });
    case "<request><license><info></info></license></request>":
      return envelope({ result: { licenses: { entry: state.licenses } } });
    default:
      return null;
  }
}

const DEVICE = "/config/devices/entry[@name='localhost.localdomain']";

/** `type=config&action=get`: the NTP servers, and the decryption and security rulebases of every vsys. */
function configAnswer(state: PanSimState, xpath: string): Response | null {
  if (xpath === `${DEVICE}/vsys/entry/rulebase/security`) {
    const security = Object.values(state.securityRules).filter((r) => r.length > 0).map((entry) => ({
      rules: { entry: entry.map((e) => ({ ...e, "@uuid": uuidOf(String(e["@name"])) })) },
    }));
    if (security.length === 0) return envelope({ result: "" }, { "@status": "success", "@code": "7" });
    const n = String(security.length);
    return envelope({ result: { "@total-count": n, "@count": n, security } }, {
      "@status": "success",
      "@code": "19",
    });
  }
  if (xpath === `${DEVICE}/deviceconfig/system/ntp-servers`) {
    if (state.ntpServers.length === 0) {
      return envelope({ result: "" }, { "@status": "success", "@code": "7" });
    }
    const node: Obj = {};
    const names = ["primary-ntp-server", "secondary-ntp-server"];
    state.ntpServers.slice(0, 2).forEach((a, i) => {
      node[names[i]!] = { "ntp-server-address": a, "authentication-type": { none: "" } };
    });
    return envelope({ result: { "@total-count": "1", "@count": "1", "ntp-servers": node } }, {
      "@status": "success",
      "@code": "19",
    });
  }
  if (xpath === `${DEVICE}/vsys/entry/rulebase/decryption`) {
    const decryption = Object.values(state.vsys).filter((rules) => rules.length > 0).map((rules) => ({
      rules: {
        entry: rules.map((r) => ({
          "@name": r.name,
          "@uuid": uuidOf(r.name),
          from: { member: ["trust"] },
          to: { member: ["untrust"] },
          source: { member: ["any"] },
          destination: { member: ["any"] },
          service: { member: ["any"] },
          category: { member: ["any"] },
          action: r.action,
          type: { [r.type ?? "ssl-forward-proxy"]: "" },
          ...(r.disabled ? { disabled: "yes" } : {}),
        })),
      },
    }));
    if (decryption.length === 0) return envelope({ result: "" }, { "@status": "success", "@code": "7" });
    const n = String(decryption.length);
    return envelope({ result: { "@total-count": n, "@count": n, decryption } }, {
      "@status": "success",
      "@code": "19",
    });
  }
  return null;
}

/** A stable UUID per rule name (PAN-OS gives each rule a fixed `uuid`). */
function uuidOf(name: string): string {
  let h = 0x811c9dc5;
  for (const c of name) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0;
  const x = h.toString(16).padStart(8, "0");
  return `${x}-0000-4000-8000-${x}0000`;
}

/** Start a simulated PAN-OS firewall on loopback HTTPS. */
export async function startSimulatedDevice(opts: VendorSimOptions = {}): Promise<VendorSim> {
  const admin = opts.username && opts.username !== KEY_USER ? opts.username : DEFAULT_ADMIN;
  const adminPassword = opts.username !== KEY_USER && opts.password ? opts.password : DEFAULT_PASSWORD;
  const preKey = opts.username === KEY_USER && opts.password ? opts.password : opts.apiKey ?? DEFAULT_KEY;
  const state = defaultState();
  /** Generated keys by user: the newest one per user is valid. */
  const generated = new Map<string, string>();
  const keyEvents: KeyEvent[] = [];
  const overrides = new Map<string, () => Response>();

  const valid = (key: string | null) =>
    key !== null && (key === preKey || [...generated.values()].includes(key));

  const sim: Simulator = await startSimulator({
    name: "vendor-c-ngfw",
    handler: (req, body) => {
      const url = new URL(req.url);
      if (url.pathname !== "/api" && url.pathname !== "/api/") {
        return new Response("<html><body>Not Found</body></html>", {
          status: 404,
          headers: { "content-type": "text/html" },
        });
      }
      const params = new URLSearchParams(url.search);
      if (req.method === "POST" && /x-www-form-urlencoded/.test(req.headers.get("content-type") ?? "")) {
        for (const [k, v] of new URLSearchParams(body)) params.set(k, v);
      }
      const type = params.get("type");
      if (type === "keygen") {
        const user = params.get("user") ?? "";
        if (user === admin && params.get("password") === adminPassword) {
          // Without an API key lifetime the device answers the same key for the same credentials; after a
          // revocation (`expireSessions()`) the next keygen gives a new one.
          const key = generated.get(user) ?? randomKey();
          generated.set(user, key);
          keyEvents.push({ at: Date.now(), event: "keygen", username: user });
          return envelope({ result: { key } });
        }
        keyEvents.push({ at: Date.now(), event: "keygen_refused", username: user });
        return refused();
      }
      const key = req.headers.get("x-pan-key") ?? params.get("key");
      if (!valid(key)) {
        keyEvents.push({ at: Date.now(), event: "key_refused" });
        return refused();
      }
      const target = type === "op" ? params.get("cmd") ?? "" : params.get("xpath") ?? "";
      const override = overrides.get(target);
      if (override) return override();
      const answer = type === "op"
        ? opAnswer(state, target)
        : type === "config" && params.get("action") === "get"
        ? configAnswer(state, target)
        : null;
      return answer ??
        xml(
          `<response status="error" code="17"><msg><line><![CDATA[ ${
            type ?? ""
          } -> unexpected here]]></line></msg></response>`,
        );
    },
  });

  const keyCredentials = { username: KEY_USER, password: preKey };
  const passwordCredentials = { username: admin, password: adminPassword };
  return {
    sim,
    get url() {
      return sim.url;
    },
    get fingerprint() {
      return sim.fingerprint;
    },
    state,
    credentials: opts.username === KEY_USER ? keyCredentials : passwordCredentials,
    keyCredentials,
    passwordCredentials,
    keyEvents,
    overrides,
    validKeys: () => [preKey, ...generated.values()],
    // The XML API keeps no login session: a key is valid until replaced or expired, there is nothing to log out.
    openSessions: () => 0,
    // Expire every generated key (PAN-OS API key lifetime, or an admin generating a new key elsewhere).
    expireSessions: () => generated.clear(),
    close: () => sim.close(),
    [Symbol.asyncDispose]: () => sim.close(),
  };
}

/** The lab's settings for this device (`deno task lab set vendor-c-ngfw key=value`; README "Simulator"). */
export function labControls(dev: VendorSim): LabControls {
  const s = dev.state;
  const startNtp = [...s.ntpServers];
  const setDecrypt = (on: boolean) => {
    for (const rules of Object.values(s.vsys)) {
      for (const r of rules) if (r.action !== "no-decrypt") r.disabled = !on;
    }
  };
  const commit = (result: "OK" | "FAIL") => {
    const id = Math.max(0, ...s.jobs.map((j) => j.id)) + 1;
    s.jobs.push({
      id,
      type: "Commit",
      status: "FIN",
      result,
      details: [result === "OK" ? "Configuration committed successfully" : "Commit failed"],
    });
  };
  /** Lab words and PAN-OS's own state names; `off` turns HA off (a standalone firewall). */
  const ha: Record<string, string> = {
    active: "active",
    standby: "passive",
    failed: "non-functional",
    passive: "passive",
    initial: "initial",
    "non-functional": "non-functional",
    suspended: "suspended",
    tentative: "tentative",
  };
  return {
    settings: {
      decrypt: { values: ["on", "off"], apply: (v) => setDecrypt(v === "on") },
      deploy: {
        values: ["ok", "pending", "failed"],
        apply: (v) => {
          if (v === "pending") s.pendingChanges = true;
          else {
            s.pendingChanges = false;
            commit(v === "ok" ? "OK" : "FAIL");
          }
        },
      },
      ha: {
        values: [...Object.keys(ha), "off"],
        apply: (v) => {
          if (v === "off") s.ha.enabled = false;
          else {
            s.ha.enabled = true;
            s.ha.localState = ha[v]!;
            s.ha.peerState = ha[v] === "passive" ? "active" : "passive";
            s.ha.since = Date.now();
          }
        },
      },
      ntp: { values: ["on", "off"], apply: (v) => void (s.ntpServers = v === "on" ? [...startNtp] : []) },
    },
    start: () => setDecrypt(true),
  };
}

/** One way the device answers wrongly, and the poll status the device view then shows. */
export interface ApiFault {
  /** Put the simulator in the faulty state (or back: the last fault clears them). */
  apply(dev: VendorSim): void;
  /** The device view's `lastPollStatus` after the next poll. */
  status: string;
}

/**
 * This adapter's expectations through the service's HTTP API (tests/e2e/adapter_api_test.ts runs it for every
 * enabled adapter whose simulator exports one): the snapshots per poll, the pre-flight under a plan selecting
 * this vendor, and the faults (a refused key, an HTML page, a truncated XML body) with their documented status.
 */
export const apiCase = {
  labels: 9,
  preflight: [
    ["ngfw-decrypt-state-matches-plan", "pass"],
    ["ngfw-deploy-clean", "pass"],
    ["ngfw-ha-state-sane", "pass"],
    ["ntp-source-configured", "pass"],
    ["snapshot-fresh", "pass"],
  ] as Array<[string, string]>,
  credentials: (dev: VendorSim) => dev.passwordCredentials,
  badCredentials: { username: "apikey", password: "LUFRPTwrongKey000000000==" },
  secrets: (
    dev: VendorSim,
  ) => [dev.passwordCredentials.password, ...dev.validKeys(), "LUFRPTwrongKey000000000=="],
  faults: [
    {
      apply: (dev: VendorSim) =>
        dev.overrides.set(
          CALLS.ha_status.cmd,
          () =>
            new Response("<!DOCTYPE html><html><body>Login</body></html>", {
              headers: { "content-type": "text/html" },
            }),
        ),
      status: "protocol_error",
    },
    {
      apply: (dev: VendorSim) =>
        dev.overrides.set(
          CALLS.ha_status.cmd,
          () =>
            new Response('<response status="success"><result><enabled>yes</enabled><gro', {
              headers: { "content-type": "application/xml" },
            }),
        ),
      status: "protocol_error",
    },
    { apply: (dev: VendorSim) => dev.overrides.clear(), status: "ok" },
  ] as ApiFault[],
};
