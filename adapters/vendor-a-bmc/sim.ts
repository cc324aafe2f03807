/**
 * A simulated Redfish BMC for tests and the `lab` task: Cisco IMC-shaped by default (Manager `CIMC`,
 * System id = serial, Chassis `1`), or laid out like the DMTF `public-rackmount1` mockup (Manager `BMC`,
 * no NTP block). It enforces session login (`X-Auth-Token`), idle timeout, and a session cap.
 *
 * @module
 */
import { type LabControls, type SimulatedDevice, type Simulator, startSimulator } from "@dutlab/core/testing";
import {
  type BmcSimState,
  buildTree,
  type CpuSource,
  defaultState,
  IDS,
  type Layout,
  type LayoutIds,
  MESSAGES,
  sessionResource,
} from "./_sim_resources.ts";

export type { BmcSimState, CpuSource, Layout, LayoutIds };

/** Options of {@link startSimulatedDevice}. */
export interface BmcSimOptions {
  /** Port to listen on (default: a free one). */
  port?: number;
  /** Account user name the device accepts. */
  username?: string;
  /** That account's password. */
  password?: string;
  /** Concurrent sessions allowed (default 4). */
  sessionCap?: number;
  /** Resource ids and shapes: `cisco-imc` (default) or `dmtf-mockup`. */
  layout?: Layout;
  /** Default: `processor-metrics` for `cisco-imc`, `manager-diagnostics` for `dmtf-mockup`. */
  cpuSource?: CpuSource;
  /** When false the chassis links no Thermal / Power resource (default true). */
  thermalPower?: boolean;
  /** When false the service root links no UpdateService (default true). */
  updateService?: boolean;
  /** Answer session creation with an absolute `Location` URL instead of a path. */
  absoluteLocation?: boolean;
  /** Answer 401s with an empty body, as many BMCs do. */
  emptyAuthErrorBody?: boolean;
}

interface SimSession {
  id: string;
  user: string;
  lastUsed: number;
}

/** The simulated BMC handed to tests and the lab task. */
export interface VendorSim extends SimulatedDevice {
  /** `https://127.0.0.1:<port>` */
  readonly url: string;
  /** SHA-256 (hex) of the certificate being served. */
  readonly fingerprint: string;
  /** Device state; change it between polls. */
  state: BmcSimState;
  /** The resource layout served. */
  layout: Layout;
  /** The layout's resource ids. */
  ids: LayoutIds;
  /** Most sessions ever open at once. */
  peakSessions(): number;
  /** Sessions opened by another client (they count against the cap). */
  addForeignSessions(n: number): void;
  /** Answer every request for `path` with `status` and a Redfish error body; `null` clears it. */
  failPath(path: string, status: number | null): void;
}

const V1 = "/redfish/v1";
const SESSIONS = `${V1}/SessionService/Sessions`;

function normalize(pathname: string): string {
  const p = pathname.replace(/\/+$/, "");
  return p === "" ? "/" : p;
}

function hex(bytes: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

const JSON_HEADERS = { "content-type": "application/json; charset=utf-8", "odata-version": "4.0" };

/** Start a simulated Redfish BMC on loopback HTTPS. Default credentials: `admin` / `dutlab-bmc-Lab1`. */
export async function startSimulatedDevice(opts: BmcSimOptions = {}): Promise<VendorSim> {
  const layout = opts.layout ?? "cisco-imc";
  const ids = IDS[layout];
  const credentials = { username: opts.username ?? "admin", password: opts.password ?? "dutlab-bmc-Lab1" };
  const state = defaultState(layout, opts.sessionCap ?? 4);
  const tree = {
    layout,
    cpuSource: opts.cpuSource ?? (layout === "cisco-imc" ? "processor-metrics" : "manager-diagnostics"),
    thermalPower: opts.thermalPower ?? true,
    updateService: opts.updateService ?? true,
  } as const;
  const sessions = new Map<string, SimSession>();
  const failures = new Map<string, number>();
  let nextId = 1;
  let peak = 0;

  // Bodies go out as a stream (chunked): a buffered body of 400+ bytes from Deno.serve stalls ~40 ms
  // per response against the core transport (Nagle vs delayed ACK), which made 50-poll tests crawl.
  const reply = (status: number, body: unknown, headers: Record<string, string> = {}) =>
    new Response(body === null ? null : new Blob([JSON.stringify(body)]).stream(), {
      status,
      headers: body === null ? headers : { ...JSON_HEADERS, ...headers },
    });

  // DSP0266 error envelope; `code` is GeneralError with the specific message in ExtendedInfo, as the
  // Cisco IMC capture shows.
  const error = (status: number, id: string, args: string[] = [], headers: Record<string, string> = {}) => {
    const m = MESSAGES[id];
    if (!m) throw new Error(`simulator bug: no message registry entry ${id}`);
    const text = args.reduce((s, a, i) => s.replace(`%${i + 1}`, a), m.message);
    return reply(status, {
      error: {
        code: `${ids.baseRegistry}.GeneralError`,
        message: "See ExtendedInfo for more information.",
        "@Message.ExtendedInfo": [{
          "@odata.type": "#Message.v1_1_1.Message",
          MessageId: `${ids.baseRegistry}.${id}`,
          Message: text,
          MessageArgs: args,
          Severity: m.severity,
          Resolution: m.resolution,
        }],
      },
    }, headers);
  };
  const unauthorized = () => opts.emptyAuthErrorBody ? reply(401, null) : error(401, "NoValidSession");

  const expired = (s: SimSession, now: number) => now - s.lastUsed >= state.sessionTimeoutSeconds * 1000;
  const purge = () => {
    const now = Date.now();
    for (const [token, s] of sessions) if (expired(s, now)) sessions.delete(token);
  };
  const open = (user: string) => {
    const token = hex(16);
    const s = { id: String(nextId++), user, lastUsed: Date.now() };
    sessions.set(token, s);
    peak = Math.max(peak, sessions.size);
    return { token, s };
  };

  function login(body: string, sim: Simulator): Response {
    let req: unknown;
    try {
      req = JSON.parse(body);
    } catch {
      return error(400, "PropertyMissing", ["UserName"]);
    }
    const r = req as { UserName?: unknown; Password?: unknown };
    if (typeof r?.UserName !== "string") return error(400, "PropertyMissing", ["UserName"]);
    if (typeof r.Password !== "string") return error(400, "PropertyMissing", ["Password"]);
    if (r.UserName !== credentials.username || r.Password !== credentials.password) return unauthorized();
    purge();
    if (sessions.size >= state.sessionCap) return error(state.sessionLimitStatus, "SessionLimitExceeded");
    const { token, s } = open(r.UserName);
    const path = `${SESSIONS}/${s.id}`;
    return reply(201, sessionResource(s.id, s.user), {
      "x-auth-token": token,
      location: opts.absoluteLocation ? `${sim.url}${path}` : path,
    });
  }

  /** The session a request authenticates with, or null. Basic auth is accepted per request, as on real BMCs. */
  function authenticate(req: Request): SimSession | "basic" | null {
    const token = req.headers.get("x-auth-token");
    if (token) {
      const s = sessions.get(token);
      if (!s) return null;
      const now = Date.now();
      if (expired(s, now)) {
        sessions.delete(token);
        return null;
      }
      s.lastUsed = now;
      return s;
    }
    const auth = req.headers.get("authorization") ?? "";
    if (/^basic /i.test(auth)) {
      const [u, ...p] = atob(auth.slice(6).trim()).split(":");
      if (u === credentials.username && p.join(":") === credentials.password) return "basic";
    }
    return null;
  }

  const handler = (req: Request, body: string, sim: Simulator): Response => {
    const path = normalize(new URL(req.url).pathname);
    const method = req.method.toUpperCase();
    if (method === "GET" && path === "/redfish") return reply(200, { v1: `${V1}/` });
    if (method === "GET" && path === V1) {
      return reply(200, buildTree(tree, state, []).get(V1));
    }
    if (method === "POST" && path === SESSIONS) return login(body, sim);
    const who = authenticate(req);
    if (who === null) return unauthorized();
    const failure = failures.get(path);
    if (failure !== undefined) {
      const id = failure === 403
        ? "InsufficientPrivilege"
        : failure === 404
        ? "ResourceMissingAtURI"
        : "InternalError";
      return error(failure, id, id === "ResourceMissingAtURI" ? [path] : []);
    }
    if (method === "DELETE" && path.startsWith(`${SESSIONS}/`)) {
      const id = path.slice(SESSIONS.length + 1);
      const entry = [...sessions].find(([, s]) => s.id === id);
      if (!entry) return error(404, "ResourceMissingAtURI", [path]);
      sessions.delete(entry[0]);
      return reply(204, null);
    }
    if (method !== "GET") return error(405, "OperationNotAllowed");
    purge();
    const resource = buildTree(tree, state, [...sessions.values()]).get(path);
    return resource ? reply(200, resource) : error(404, "ResourceMissingAtURI", [path]);
  };

  const sim = await startSimulator({ handler, name: `sim-bmc-${layout}`, port: opts.port });
  return {
    sim,
    get url() {
      return sim.url;
    },
    get fingerprint() {
      return sim.fingerprint;
    },
    credentials,
    state,
    layout,
    ids,
    openSessions() {
      purge();
      return sessions.size;
    },
    expireSessions() {
      sessions.clear();
    },
    peakSessions: () => peak,
    addForeignSessions(n: number) {
      for (let i = 0; i < n; i++) open("operator");
    },
    failPath(path: string, status: number | null) {
      if (status === null) failures.delete(normalize(path));
      else failures.set(normalize(path), status);
    },
    close: () => sim.close(),
    [Symbol.asyncDispose]: () => sim.close(),
  };
}

/** Health values the lab's `health` setting gives (Redfish `Status.Health`). */
const LAB_HEALTH: Record<string, "OK" | "Warning" | "Critical"> = {
  ok: "OK",
  warning: "Warning",
  critical: "Critical",
};

/**
 * The lab's settings for this controller (`deno task lab set vendor-a-bmc ...`): `ntp` (`off` empties
 * `NTPServers`, `on` restores the list the device started with), `power` (the host's `PowerState`) and
 * `health` (`Status.Health` of the system, chassis and manager).
 */
export function labControls(dev: VendorSim): LabControls {
  const ntp = dev.state.ntpServers === null ? null : [...dev.state.ntpServers];
  return {
    settings: {
      ntp: {
        values: ["on", "off"],
        apply: (v) => void (dev.state.ntpServers = v === "on" ? (ntp && [...ntp]) : []),
      },
      power: { values: ["on", "off"], apply: (v) => void (dev.state.powerState = v === "on" ? "On" : "Off") },
      health: { values: Object.keys(LAB_HEALTH), apply: (v) => void (dev.state.health = LAB_HEALTH[v]!) },
    },
  };
}
