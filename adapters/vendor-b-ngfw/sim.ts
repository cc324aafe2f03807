/**
 * A FortiOS-style REST API v2 device on loopback, for tests and the `lab` task.
 *
 * Speaks `/api/v2/cmdb/...` and `/api/v2/monitor/...` with the FortiOS envelope, bearer API tokens,
 * and both admin login styles: `POST /api/v2/authentication` (firmware mode `7.6.3+`) and the classic
 * `POST /logincheck` form login (firmware mode `legacy`, FortiOS 7.6.2 and older). Payload shapes follow
 * the fortigate_exporter fixtures (see README "Sources").
 *
 * @module
 */
import { type LabControls, type SimulatedDevice, type Simulator, startSimulator } from "@dutlab/core/testing";

/** `7.6.3+`: only `/api/v2/authentication` logs in; `legacy`: that path is absent (404), `/logincheck` works. */
export type FirmwareMode = "7.6.3+" | "legacy";

/** A FortiOS object (JSON), as the API answers it. */
export type Obj = Record<string, unknown>;

/** The device data the simulator serves; tests change it between polls. Objects use FortiOS field names. */
export interface FortiSimState {
  /** The firmware generation answered as (`7.6.3+` or `legacy`), which picks the auth styles accepted. */
  firmware: FirmwareMode;
  /** `hostname` of `monitor/system/status`. */
  hostname: string;
  /** Serial number. */
  serial: string;
  /** Envelope `version` and `build`; set from `firmware` at start. */
  version: string;
  /** Envelope `build`. */
  build: number;
  /** Current CPU, memory and disk use in percent, and the current session count. */
  cpu: number;
  /** Memory use, percent. */
  mem: number;
  /** Disk use, percent. */
  disk: number;
  /** Current session count. */
  session: number;
  /** `results` of `GET /api/v2/cmdb/system/ntp`. */
  ntp: Obj;
  /** `results` of `GET /api/v2/cmdb/system/ha`. */
  ha: Obj;
  /** `results` of `GET /api/v2/cmdb/firewall/policy?vdom=root`. */
  policies: Obj[];
  /** `results` of `GET /api/v2/cmdb/firewall/ssl-ssh-profile?vdom=root`. */
  sslSshProfiles: Obj[];
  /** `results` of `GET /api/v2/monitor/system/interface?vdom=root`, keyed by interface name. */
  interfaces: Record<string, Obj>;
  /** `results` of `GET /api/v2/monitor/license/status`. */
  license: Obj;
  /**
   * Further VDOMs (multi-VDOM mode), by name, with their own policies, profiles and interfaces. `vdom=*`
   * answers one envelope per VDOM, root first; `vdom=<name>` answers that VDOM.
   */
  vdoms: Record<string, { policies: Obj[]; sslSshProfiles: Obj[]; interfaces: Record<string, Obj> }>;
  /** API paths (e.g. `/api/v2/cmdb/firewall/policy`) the admin profile may not read: answered 403. */
  deniedPaths: string[];
  /** Admin idle timeout (`config system global` `admintimeout`, default 5 minutes). */
  idleTimeoutMs: number;
}

/** One admin login session held by the simulated device. */
export interface SimSession {
  /** Session id (cookie value). */
  id: string;
  /** The session's CSRF token. */
  csrf: string;
  /** How the session logged in. */
  style: "api-auth" | "logincheck";
  /** Admin user name. */
  username: string;
  /** Last use (ms since the epoch), for the idle timeout. */
  lastUsed: number;
}

/** Login and logout events, in order, for tests that prove which auth style was used. */
export interface AuthEvent {
  /** When (ms since the epoch). */
  at: number;
  /** What happened. */
  event: "login" | "login_refused" | "logout" | "expired";
  /** Which auth style. */
  style: "api-auth" | "logincheck";
  /** User name given. */
  username: string;
  /** Why a login was refused or a session ended. */
  reason?: string;
}

/** Options of {@link startSimulatedDevice}. */
export interface VendorSimOptions {
  /** Port to listen on (default: a free one). */
  port?: number;
  /** `apitoken` makes `credentials` the token pair; anything else is the admin user name. */
  username?: string;
  /** Admin password, or the API token when `username` is `apitoken`. */
  password?: string;
  /** Concurrent admin sessions allowed (`admin-login-max`, FortiOS default 100). */
  sessionCap?: number;
  /** Firmware generation to answer as (default `7.6.3+`). */
  firmware?: FirmwareMode;
  /** The REST API admin's token (when `username` is not `apitoken`). */
  apiToken?: string;
}

/** The simulated FortiGate handed to tests and the lab task. */
export interface VendorSim extends SimulatedDevice {
  /** `https://127.0.0.1:<port>` (same as `sim.url`). */
  readonly url: string;
  /** SHA-256 of the served certificate (same as `sim.fingerprint`). */
  readonly fingerprint: string;
  /** Mutable device data. */
  state: FortiSimState;
  /** `admin-login-max`; a login beyond it is refused like a failed login. */
  sessionCap: number;
  /** The token registration: `apitoken` + the device's API key. */
  tokenCredentials: { username: string; password: string };
  /** The session registration: admin user + password. */
  sessionCredentials: { username: string; password: string };
  /** Login/logout history. */
  authEvents: AuthEvent[];
  /** Live admin sessions. */
  sessions(): SimSession[];
  /** Expire every session on its next data call (mid-cycle), answering 401 as FortiOS does. */
  expireSessionsOnNextCall(): void;
  /** Answers to use instead of the device's for an API path (after auth), e.g. a malformed body. */
  overrides: Map<string, () => Response>;
}

const DEFAULT_ADMIN = "admin";
const DEFAULT_PASSWORD = "dutlab-Forti-2026";
/** FortiOS REST API keys are 30 alphanumeric characters. */
const DEFAULT_TOKEN = "q8Hn3kTzr5Wm0cYxb7Lg2dVf9sJp4N";
const TOKEN_USER = "apitoken";

const FIRMWARE: Record<FirmwareMode, { version: string; build: number }> = {
  "7.6.3+": { version: "v7.6.7", build: 3704 },
  legacy: { version: "v7.4.4", build: 2662 },
};

function hex(bytes: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/** A firewall policy in `cmdb/firewall/policy` shape (fortigate_exporter fixture field names). */
export function simPolicy(
  policyid: number,
  name: string,
  overrides: Obj = {},
): Obj {
  const intf = (n: string) => [{ name: n, q_origin_key: n }];
  return {
    policyid,
    q_origin_key: policyid,
    name,
    uuid: crypto.randomUUID(),
    srcintf: intf("port2"),
    dstintf: intf("port1"),
    srcaddr: intf("all"),
    dstaddr: intf("all"),
    action: "accept",
    status: "enable",
    schedule: "always",
    service: intf("ALL"),
    "utm-status": "enable",
    "inspection-mode": "flow",
    "profile-type": "single",
    "profile-protocol-options": "default",
    "ssl-ssh-profile": "certificate-inspection",
    "av-profile": "default",
    "webfilter-profile": "",
    "ips-sensor": "",
    "application-list": "",
    logtraffic: "all",
    nat: "enable",
    comments: "",
    ...overrides,
  };
}

/** An SSL/SSH inspection profile in `cmdb/firewall/ssl-ssh-profile` shape. */
export function simSslSshProfile(
  name: string,
  mode: "deep-inspection" | "certificate-inspection" | "disable",
  comment = "",
): Obj {
  return {
    name,
    q_origin_key: name,
    comment,
    ssl: { "inspect-all": "disable", "client-certificate": "bypass", "unsupported-ssl-version": "block" },
    https: {
      ports: 443,
      status: mode,
      "quic": "inspect",
      "proxy-after-tcp-handshake": "disable",
      "client-certificate": "bypass",
      "unsupported-ssl-version": "block",
      "cert-validation-timeout": "allow",
      "cert-validation-failure": "block",
    },
    "server-cert-mode": "re-sign",
    "use-ssl-server": "disable",
    caname: "Fortinet_CA_SSL",
    "untrusted-caname": "Fortinet_CA_Untrusted",
    "ssl-exemption-log": "disable",
    "ssl-anomaly-log": "enable",
  };
}

function simInterface(name: string, ip: string, mask: number, link: boolean, alias = ""): Obj {
  return {
    id: name,
    name,
    alias,
    mac: "00:0c:29:5a:1e:" + (10 + name.length).toString(16).padStart(2, "0"),
    ip,
    mask,
    link,
    speed: link ? 1000 : 0,
    duplex: link ? 1 : 0,
    tx_packets: link ? 6632568 : 0,
    rx_packets: link ? 6376122 : 0,
    tx_bytes: link ? 2489018103 : 0,
    rx_bytes: link ? 1310564319 : 0,
    tx_errors: 0,
    rx_errors: 0,
  };
}

/** The default lab device: NTP on two custom servers, standalone, one deep-inspection policy. */
export function defaultState(firmware: FirmwareMode = "7.6.3+"): FortiSimState {
  return {
    firmware,
    hostname: "fgt-lab-1",
    serial: "FGVM02TM24000001",
    vdoms: {},
    ...FIRMWARE[firmware],
    cpu: 7,
    mem: 41,
    disk: 3,
    session: 118,
    ntp: {
      ntpsync: "enable",
      type: "custom",
      syncinterval: 60,
      ntpserver: [
        {
          id: 1,
          q_origin_key: 1,
          server: "ntp1.lab.example",
          ntpv3: "disable",
          authentication: "disable",
          "key-id": 0,
          "interface-select-method": "auto",
          interface: "",
        },
        {
          id: 2,
          q_origin_key: 2,
          server: "ntp2.lab.example",
          ntpv3: "disable",
          authentication: "disable",
          "key-id": 0,
          "interface-select-method": "auto",
          interface: "",
        },
      ],
      "source-ip": "0.0.0.0",
      "source-ip6": "::",
      "server-mode": "disable",
      interface: [],
    },
    ha: {
      "group-id": 0,
      "group-name": "",
      mode: "standalone",
      password: "ENC XXXX",
      hbdev: "",
      "session-pickup": "disable",
      override: "disable",
      priority: 128,
      "ha-mgmt-status": "disable",
      "ha-mgmt-interfaces": [],
      monitor: "",
      "uninterruptible-upgrade": "enable",
    },
    policies: [
      simPolicy(1, "lan-to-wan"),
      simPolicy(2, "lab-decrypt", { "ssl-ssh-profile": "custom-deep-inspection" }),
      simPolicy(3, "block-legacy", {
        action: "deny",
        "utm-status": "disable",
        "ssl-ssh-profile": "",
        "av-profile": "",
        nat: "disable",
      }),
    ],
    sslSshProfiles: [
      simSslSshProfile(
        "certificate-inspection",
        "certificate-inspection",
        "Read-only SSL handshake inspection profile.",
      ),
      simSslSshProfile("custom-deep-inspection", "deep-inspection", "Customizable deep inspection profile."),
      simSslSshProfile("deep-inspection", "deep-inspection", "Read-only deep inspection profile."),
      simSslSshProfile("no-inspection", "disable", "Read-only profile that does no inspection."),
    ],
    interfaces: {
      port1: simInterface("port1", "192.168.1.99", 24, true, "mgmt"),
      port2: simInterface("port2", "10.10.0.1", 24, true, "lab-lan"),
      port3: simInterface("port3", "0.0.0.0", 0, false),
    },
    license: {
      vdom: { type: "platform", can_upgrade: false, used: 1, max: 10 },
      sms: { type: "other", status: "no_license", used: 0, max: 0 },
      antivirus: { type: "downloaded", status: "licensed", expires: 1798761600 },
      ips: { type: "downloaded", status: "licensed", expires: 1798761600 },
      web_filtering: { type: "cloud_query", status: "licensed", expires: 1798761600 },
      appctrl: { type: "downloaded", status: "licensed", expires: 1798761600 },
    },
    deniedPaths: [],
    idleTimeoutMs: 5 * 60_000,
  };
}

/**
 * The same response with a Blob body. Deno.serve over TLS sends a string or byte body larger than a few
 * hundred bytes in a second write, which Nagle plus delayed ACK stall for ~40 ms per response on
 * loopback; a Blob body goes out at once. Status, headers and bytes are unchanged.
 */
async function asBlobBody(res: Response): Promise<Response> {
  const bytes = await res.arrayBuffer();
  return new Response(bytes.byteLength ? new Blob([bytes]) : null, {
    status: res.status,
    headers: res.headers,
  });
}

/** Start a simulated FortiOS device on loopback. */
export async function startSimulatedDevice(opts: VendorSimOptions = {}): Promise<VendorSim> {
  const tokenMode = opts.username === TOKEN_USER;
  const apiToken = tokenMode ? (opts.password ?? DEFAULT_TOKEN) : (opts.apiToken ?? DEFAULT_TOKEN);
  const admin = {
    username: tokenMode ? DEFAULT_ADMIN : (opts.username ?? DEFAULT_ADMIN),
    password: tokenMode ? DEFAULT_PASSWORD : (opts.password ?? DEFAULT_PASSWORD),
  };
  const state = defaultState(opts.firmware ?? "7.6.3+");
  const live = new Map<string, SimSession>();
  const authEvents: AuthEvent[] = [];
  let expireOnNextCall = false;
  const overrides = new Map<string, () => Response>();
  // FortiOS names its cookies with the admin port and a per-device number.
  const cookieNo = String(
    [...state.serial].reduce((h, c) => (Math.imul(h, 31) + c.charCodeAt(0)) >>> 0, 7),
  );

  const ctl = { sessionCap: opts.sessionCap ?? 100 };

  const prune = () => {
    const now = Date.now();
    for (const [id, s] of live) {
      if (now - s.lastUsed > state.idleTimeoutMs) {
        live.delete(id);
        authEvents.push({ at: now, event: "expired", style: s.style, username: s.username });
      }
    }
  };

  const envelope = (method: string, apiPath: string, results: unknown, extra: Obj = {}): Obj => {
    const [, , , kind, path, name, action] = apiPath.split("/");
    return {
      http_method: method,
      ...(kind === "cmdb" ? { revision: "8f3c1e0d5b2a49d7a6e1c3f0b9d84e27" } : {}),
      results,
      vdom: "root",
      path,
      name,
      ...(kind === "monitor" ? { action: action ?? "" } : {}),
      status: "success",
      http_status: 200,
      serial: state.serial,
      version: state.version,
      build: state.build,
      ...extra,
    };
  };
  const errorEnvelope = (method: string, apiPath: string, status: number): Response => {
    const [, , , , path, name] = apiPath.split("/");
    return Response.json({
      http_method: method,
      status: "error",
      http_status: status,
      vdom: "root",
      path,
      name,
      serial: state.serial,
      version: state.version,
      build: state.build,
    }, { status });
  };
  const html = (status: number, text: string, headers?: Headers) => {
    const h = headers ?? new Headers();
    h.set("content-type", "text/html");
    return new Response(`<html><body>${text}</body></html>`, { status, headers: h });
  };

  const cookiesOf = (req: Request): Map<string, string> => {
    const jar = new Map<string, string>();
    for (const part of (req.headers.get("cookie") ?? "").split(";")) {
      const eq = part.indexOf("=");
      if (eq > 0) jar.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
    }
    return jar;
  };
  const sessionOf = (req: Request): SimSession | undefined => {
    const jar = cookiesOf(req);
    const v2 = [...jar].find(([k]) => k.startsWith("session_key_"))?.[1];
    const aps = [...jar].find(([k]) => k.startsWith("APSCOOKIE_"))?.[1];
    const id = v2 ?? aps?.replace(/^"?Era%3D0%26Payload%3D/, "").replace(/"$/, "");
    return id ? live.get(id) : undefined;
  };

  const openSession = (style: SimSession["style"], username: string): SimSession | null => {
    prune();
    if (live.size >= ctl.sessionCap) {
      authEvents.push({ at: Date.now(), event: "login_refused", style, username, reason: "admin-login-max" });
      return null;
    }
    const s: SimSession = { id: hex(16), csrf: hex(16).toUpperCase(), style, username, lastUsed: Date.now() };
    live.set(s.id, s);
    authEvents.push({ at: Date.now(), event: "login", style, username });
    return s;
  };
  const closeSession = (s: SimSession) => {
    live.delete(s.id);
    authEvents.push({ at: Date.now(), event: "logout", style: s.style, username: s.username });
  };

  const expired = (name: string) => `${name}=""; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Secure`;
  const v2Names = (port: number) => ({
    key: `session_key_${port}_${cookieNo}`,
    csrf: `ccsrf_token_${port}_${cookieNo}`,
  });

  // POST/PUT/DELETE /api/v2/authentication (FortiOS 6.4.2+, the only admin login from 7.6.3 on).
  const apiAuthentication = (req: Request, body: string, port: number): Response => {
    if (state.firmware === "legacy") return html(404, "404 Not Found");
    const names = v2Names(port);
    if (req.method === "DELETE") {
      const s = sessionOf(req);
      if (!s) return html(401, "401 Unauthorized");
      closeSession(s);
      const h = new Headers({ "content-type": "application/json" });
      h.append("set-cookie", expired(names.key));
      h.append("set-cookie", expired(names.csrf));
      return new Response(JSON.stringify({ status_message: "HTTP_AUTHD_LOGOUT_SUCCESS" }), { headers: h });
    }
    if (req.method === "PUT") {
      const s = sessionOf(req);
      if (!s) return html(401, "401 Unauthorized");
      s.lastUsed = Date.now();
      return Response.json({ status_code: 5, status_message: "LOGIN_SUCCESS" });
    }
    if (req.method !== "POST") return errorEnvelope(req.method, "/api/v2/x/authentication", 405);
    let creds: Obj;
    try {
      creds = JSON.parse(body || "{}");
    } catch {
      return errorEnvelope("POST", "/api/v2/x/authentication", 400);
    }
    const username = String(creds.username ?? "");
    const secret = creds.secretkey ?? creds.password;
    const ok = username === admin.username && secret === admin.password;
    const s = ok ? openSession("api-auth", username) : null;
    if (!ok) authEvents.push({ at: Date.now(), event: "login_refused", style: "api-auth", username });
    const h = new Headers({ "content-type": "application/json" });
    // Observed on 7.6.x: the cookies are set on a failed login too; only the body decides.
    h.append("set-cookie", `${names.key}=${s?.id ?? hex(16)}; Path=/; Secure; HttpOnly; SameSite=Strict`);
    h.append(
      "set-cookie",
      `${names.csrf}="${s?.csrf ?? hex(16).toUpperCase()}"; Path=/; Secure; SameSite=Strict`,
    );
    const answer = s
      ? { status_code: 5, status_message: "LOGIN_SUCCESS" }
      : { status_code: -1, status_message: "LOGIN_FAILED" };
    return new Response(JSON.stringify(answer), { headers: h });
  };

  // POST /logincheck: the classic form login. From 7.6.3 it answers 200 with the login page and no cookie.
  const loginCheck = (body: string): Response => {
    if (state.firmware === "7.6.3+") return html(200, '<form action="/logincheck" method="post"></form>');
    const form = new URLSearchParams(body);
    const username = form.get("username") ?? "";
    const ok = username === admin.username && form.get("secretkey") === admin.password;
    const s = ok ? openSession("logincheck", username) : null;
    if (!s) {
      if (!ok) authEvents.push({ at: Date.now(), event: "login_refused", style: "logincheck", username });
      // A refused logincheck sets ccsrftoken to "0%260" (Fortinet's Go SDK treats that as a bad login).
      const h = new Headers({ "content-type": "text/html" });
      h.append("set-cookie", `ccsrftoken="0%260"; Path=/; Secure`);
      return new Response("0", { headers: h });
    }
    const h = new Headers({ "content-type": "text/html" });
    h.append("set-cookie", `APSCOOKIE_${cookieNo}="Era%3D0%26Payload%3D${s.id}"; Path=/; Secure; HttpOnly`);
    h.append("set-cookie", `ccsrftoken_${cookieNo}="${s.csrf}"; Path=/; Secure`);
    h.append("set-cookie", `ccsrftoken="${s.csrf}"; Path=/; Secure`);
    return new Response('1document.location="/ng/prompt?viewOnly&redir=%2Fng%2F";\n', { headers: h });
  };

  const logout = (req: Request): Response => {
    const s = sessionOf(req);
    if (s) closeSession(s);
    const h = new Headers();
    h.append("set-cookie", expired(`APSCOOKIE_${cookieNo}`));
    h.append("set-cookie", expired(`ccsrftoken_${cookieNo}`));
    h.append("set-cookie", expired("ccsrftoken"));
    return html(200, "logged out", h);
  };

  const usage = (query: URLSearchParams): Obj => {
    const now = Date.now();
    const current: Record<string, number> = {
      cpu: state.cpu,
      mem: state.mem,
      disk: state.disk,
      session: state.session,
      setuprate: 3,
    };
    const wanted = query.getAll("resource").flatMap((r) => r.split(",")).filter((r) => r in current);
    const intervals = query.get("interval")
      ? [query.get("interval")!]
      : ["1-min", "10-min", "30-min", "1-hour", "12-hour", "24-hour"];
    const step: Record<string, number> = {
      "1-min": 3_000,
      "10-min": 30_000,
      "30-min": 90_000,
      "1-hour": 180_000,
      "12-hour": 2_160_000,
      "24-hour": 4_320_000,
    };
    const out: Obj = {};
    for (const r of wanted.length ? wanted : Object.keys(current)) {
      const historical: Obj = {};
      for (const i of intervals) {
        const values = Array.from({ length: 20 }, (_, k) => [now - k * (step[i] ?? 3_000), current[r]]);
        historical[i] = {
          values,
          max: current[r],
          min: current[r],
          average: current[r],
          start: values[19]![0],
          end: values[0]![0],
        };
      }
      out[r] = [{ current: current[r], historical }];
    }
    return out;
  };

  const data = (method: string, apiPath: string, query: URLSearchParams): Response => {
    if (method !== "GET") return errorEnvelope(method, apiPath, 405);
    const vdom = query.get("vdom");
    const perVdom: Record<string, keyof FortiSimState["vdoms"][string]> = {
      "/api/v2/cmdb/firewall/policy": "policies",
      "/api/v2/cmdb/firewall/ssl-ssh-profile": "sslSshProfiles",
      "/api/v2/monitor/system/interface": "interfaces",
    };
    const scoped = perVdom[apiPath];
    if (scoped && vdom !== null && vdom !== "root") {
      const all = [
        ["root", state[scoped]] as const,
        ...Object.entries(state.vdoms).map(([n, v]) => [n, v[scoped]]),
      ];
      if (vdom === "*") {
        return Response.json(
          all.map(([name, results]) => envelope(method, apiPath, results, { vdom: name })),
        );
      }
      const one = all.find(([name]) => name === vdom);
      return one
        ? Response.json(envelope(method, apiPath, one[1], { vdom }))
        : errorEnvelope(method, apiPath, 404);
    }
    if (vdom !== null && vdom !== "root" && vdom !== "*") return errorEnvelope(method, apiPath, 404);
    const ok = (results: unknown) => Response.json(envelope(method, apiPath, results));
    switch (apiPath) {
      case "/api/v2/monitor/system/status":
        return ok({
          model_name: "FortiGate",
          model_number: "VM64",
          model: "FGVM64",
          hostname: state.hostname,
          log_disk_status: "available",
        });
      case "/api/v2/monitor/system/resource/usage":
        return ok(usage(query));
      case "/api/v2/cmdb/system/ntp":
        return ok(state.ntp);
      case "/api/v2/cmdb/firewall/policy":
        return ok(state.policies);
      case "/api/v2/cmdb/firewall/ssl-ssh-profile":
        return ok(state.sslSshProfiles);
      case "/api/v2/cmdb/system/ha":
        return ok(state.ha);
      case "/api/v2/monitor/system/interface":
        return ok(state.interfaces);
      case "/api/v2/monitor/license/status":
        return ok(state.license);
      default:
        return errorEnvelope(method, apiPath, 404);
    }
  };

  const route = (req: Request, body: string, self: Simulator): Response => {
    const url = new URL(req.url);
    const p = url.pathname;
    if (p === "/api/v2/authentication") return apiAuthentication(req, body, self.port);
    if (p === "/logincheck" && req.method === "POST") return loginCheck(body);
    if (p === "/logout") return logout(req);
    if (!p.startsWith("/api/v2/")) return html(404, "404 Not Found");

    // Every API call needs a valid API key or a live admin session.
    const auth = req.headers.get("authorization") ?? "";
    const bearer = /^bearer (.+)$/i.exec(auth)?.[1] ?? url.searchParams.get("access_token");
    if (bearer !== null) {
      if (bearer !== apiToken) return html(401, "401 Unauthorized");
    } else {
      prune();
      const s = sessionOf(req);
      if (!s) return html(401, "401 Unauthorized");
      if (expireOnNextCall) {
        expireOnNextCall = false;
        for (const x of [...live.values()]) {
          live.delete(x.id);
          authEvents.push({ at: Date.now(), event: "expired", style: x.style, username: x.username });
        }
        return html(401, "401 Unauthorized");
      }
      s.lastUsed = Date.now();
      // Session writes must echo the CSRF cookie as X-CSRFTOKEN.
      if (req.method !== "GET" && req.headers.get("x-csrftoken") !== s.csrf) {
        return errorEnvelope(req.method, p, 403);
      }
    }
    if (state.deniedPaths.includes(p)) return errorEnvelope(req.method, p, 403);
    const override = overrides.get(p);
    if (override) return override();
    return data(req.method, p, url.searchParams);
  };

  const sim: Simulator = await startSimulator({
    name: "fortigate-sim",
    port: opts.port,
    handler: (req, body, self) => asBlobBody(route(req, body, self)),
  });

  const result: VendorSim = {
    sim,
    get url() {
      return sim.url;
    },
    get fingerprint() {
      return sim.fingerprint;
    },
    state,
    get sessionCap() {
      return ctl.sessionCap;
    },
    set sessionCap(n: number) {
      ctl.sessionCap = n;
    },
    credentials: tokenMode ? { username: TOKEN_USER, password: apiToken } : { ...admin },
    tokenCredentials: { username: TOKEN_USER, password: apiToken },
    sessionCredentials: { ...admin },
    authEvents,
    sessions: () => {
      prune();
      return [...live.values()];
    },
    openSessions: () => {
      prune();
      return live.size;
    },
    expireSessions: () => {
      for (const s of [...live.values()]) {
        live.delete(s.id);
        authEvents.push({ at: Date.now(), event: "expired", style: s.style, username: s.username });
      }
    },
    expireSessionsOnNextCall: () => {
      expireOnNextCall = true;
    },
    overrides,
    close: () => sim.close(),
    [Symbol.asyncDispose]: () => sim.close(),
  };
  return result;
}

/**
 * The lab's settings for this firewall (`deno task lab set vendor-b-ngfw ...`): `decrypt` (`on`: deep
 * inspection on the second policy, or the only one; `off`: no policy inspects) and `ntp` (`off` disables NTP
 * sync, `on` restores the setting the device started with). The lab starts it decrypting.
 */
export function labControls(dev: VendorSim): LabControls {
  const ntpsync = dev.state.ntp.ntpsync;
  const decrypt = (on: boolean) => {
    const policies = dev.state.policies;
    for (const p of policies) p["ssl-ssh-profile"] = "no-inspection";
    const lab = policies[policies.length > 1 ? 1 : 0];
    if (on && lab) lab["ssl-ssh-profile"] = "custom-deep-inspection";
  };
  return {
    settings: {
      decrypt: { values: ["on", "off"], apply: (v) => decrypt(v === "on") },
      ntp: {
        values: ["on", "off"],
        apply: (v) => void (dev.state.ntp.ntpsync = v === "on" ? ntpsync : "disable"),
      },
    },
    start: () => decrypt(true),
  };
}
