import {
  type AdapterContext,
  type AdapterSession,
  type CollectedSnapshot,
  type ConnectionTestResult,
  DeviceError,
  type DeviceHttp,
  type DeviceResponse,
} from "@dutlab/core";
import { type DmeEnvelope, dmeError, isEnvelope, objectsOf } from "./_dme.ts";

/** Every call the adapter makes, relative to the switch's base URL. */
export const PATHS = {
  login: "/api/aaaLogin.json",
  refresh: "/api/aaaRefresh.json",
  logout: "/api/aaaLogout.json",
  topSystem: "/api/mo/sys.json",
  showVersion: "/api/mo/sys/showversion.json",
  chassis: "/api/mo/sys/ch.json",
  ntp: "/api/mo/sys/time.json?rsp-subtree=full",
  cpu: "/api/class/procSysCpuSummary.json",
  memory: "/api/class/procSysMem.json",
  interfaces: "/api/class/l1PhysIf.json?rsp-subtree=children&rsp-subtree-class=ethpmPhysIf",
  vpc: "/api/mo/sys/vpc/inst/dom.json?rsp-subtree=full",
} as const;

export const LABELS = [
  "system_info",
  "ntp_config",
  "cpu_usage",
  "memory",
  "interfaces",
  "vpc_status",
] as const;

/** Told to the operator when the switch does not answer NX-API REST at all (spec 4.2 prerequisite). */
export const NXAPI_HINT =
  "check that the switch's NX-API HTTPS feature is enabled on port 443 in the management VRF " +
  "(feature nxapi; nxapi https port 443; nxapi use-vrf management)";

/** Used when the login answer lacks `refreshTimeoutSeconds` (NX-OS default 600 s). */
const DEFAULT_LIFETIME_MS = 600_000;
/** A parked token with less life left than this is logged out and replaced, not reused. */
const REUSE_MIN_MS = 30_000;
/** Parked entries are dropped this long before the device would expire the token. */
const PARK_MARGIN_MS = 5_000;

/** Login state parked between polls: the token cookie, never the password. */
export interface ParkedLogin {
  token: string;
  user: string;
  /** Epoch ms of the login or last `aaaRefresh`; the device expires the token `lifetimeMs` later. */
  refreshedAt: number;
  lifetimeMs: number;
}

export function asParkedLogin(v: unknown): ParkedLogin | null {
  if (typeof v !== "object" || v === null) return null;
  const p = v as Partial<ParkedLogin>;
  return typeof p.token === "string" && typeof p.user === "string" && typeof p.refreshedAt === "number" &&
      typeof p.lifetimeMs === "number"
    ? p as ParkedLogin
    : null;
}

const cookieHeader = (s: ParkedLogin) => ({ cookie: `APIC-cookie=${s.token}` });
const isAuthStatus = (status: number) => status === 401 || status === 403;
const ok = (r: DeviceResponse) => r.status >= 200 && r.status < 300;

/** The device's error text for a message, e.g. ` (Authentication failure.)`; empty when none. */
function deviceText(r: DeviceResponse): string {
  let body: unknown;
  try {
    body = JSON.parse(r.text);
  } catch {
    return "";
  }
  const err = dmeError(body);
  return err?.text ? ` (${err.text})` : "";
}

function readLogin(res: DeviceResponse, cls: "aaaLogin" | "aaaRefresh", user: string): ParkedLogin {
  const body = res.json();
  if (!isEnvelope(body)) {
    throw new DeviceError(
      "protocol_error",
      `Unexpected answer to ${res.method} ${res.path}: no "imdata" array`,
    );
  }
  // NX-OS answers aaaRefresh with an `aaaRefresh` object (go-nxos); APIC-style `aaaLogin` is accepted too.
  const mo = objectsOf(body, cls)[0] ?? objectsOf(body, "aaaLogin")[0];
  const token = mo?.attributes.token;
  if (typeof token !== "string" || token === "") {
    throw new DeviceError("protocol_error", `Answer to ${res.method} ${res.path} carries no token`);
  }
  const seconds = Number(mo?.attributes.refreshTimeoutSeconds);
  return {
    token,
    user,
    refreshedAt: Date.now(),
    lifetimeMs: Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : DEFAULT_LIFETIME_MS,
  };
}

/** `POST /api/aaaLogin.json`. Maps refusals to auth_failed and an absent NX-API to a hint. */
export async function login(http: DeviceHttp, credentials: { username: string; password: string }) {
  let res: DeviceResponse;
  try {
    res = await http.request({
      method: "POST",
      path: PATHS.login,
      json: { aaaUser: { attributes: { name: credentials.username, pwd: credentials.password } } },
    });
  } catch (e) {
    if (e instanceof DeviceError && (e.status === "unreachable" || e.status === "timeout")) {
      throw new DeviceError(e.status, `${e.message}; NX-API REST did not answer: ${NXAPI_HINT}`, {
        cause: e,
      });
    }
    throw e;
  }
  if (isAuthStatus(res.status)) {
    throw new DeviceError(
      "auth_failed",
      `Login refused: HTTP ${res.status} from POST ${PATHS.login}${deviceText(res)}`,
    );
  }
  if (res.status === 404) {
    throw new DeviceError(
      "http_error",
      `POST ${PATHS.login} returned HTTP 404: NX-API REST is not available; ${NXAPI_HINT}`,
    );
  }
  if (!ok(res)) {
    throw new DeviceError("http_error", `POST ${PATHS.login} returned HTTP ${res.status}${deviceText(res)}`);
  }
  return readLogin(res, "aaaLogin", credentials.username);
}

/** `POST /api/aaaLogout.json`. Any HTTP answer ends the matter (an expired token is already gone). */
export async function logout(http: DeviceHttp, s: ParkedLogin): Promise<number> {
  const res = await http.request({
    method: "POST",
    path: PATHS.logout,
    headers: cookieHeader(s),
    json: { aaaUser: { attributes: { name: s.user } } },
  });
  return res.status;
}

/**
 * One cycle against one switch. Reuses a parked token when it has life left, refreshes it with
 * `aaaRefresh` past half its lifetime, and re-authenticates once when a data call is refused.
 */
export class NxApiSession implements AdapterSession {
  #login: ParkedLogin | null = null;

  constructor(private ctx: AdapterContext) {}

  async testConnection(): Promise<ConnectionTestResult> {
    const env = await this.#get(PATHS.cpu);
    const summary = this.#objects(env, "procSysCpuSummary", PATHS.cpu)[0];
    const idle = Number(summary?.attributes.idle);
    if (!summary || summary.attributes.idle === "" || !Number.isFinite(idle)) {
      throw new DeviceError("protocol_error", `GET ${PATHS.cpu} returned no procSysCpuSummary idle value`);
    }
    const cpuPercent = Math.min(100, Math.max(0, Math.round((100 - idle) * 10) / 10));
    return {
      cpuPercent,
      cpuDetail: `CPU ${cpuPercent}% (100 - idle ${summary.attributes.idle}) from GET ${PATHS.cpu}`,
    };
  }

  async collectAll(): Promise<CollectedSnapshot[]> {
    const systemInfo = {
      topSystem: await this.#get(PATHS.topSystem),
      showVersion: await this.#get(PATHS.showVersion),
      chassis: await this.#get(PATHS.chassis),
    };
    const ntp = await this.#get(PATHS.ntp);
    const cpu = await this.#get(PATHS.cpu);
    const memory = await this.#get(PATHS.memory);
    const interfaces = await this.#get(PATHS.interfaces);
    const vpcDom = await this.#get(PATHS.vpc);
    const payloads: Record<(typeof LABELS)[number], unknown> = {
      system_info: systemInfo,
      ntp_config: ntp,
      cpu_usage: cpu,
      memory,
      interfaces,
      // The switch answers `{"totalCount":"0","imdata":[]}` when no vPC domain is configured.
      vpc_status: { configured: this.#objects(vpcDom, "vpcDom", PATHS.vpc).length > 0, vpcDom },
    };
    return LABELS.map((label) => ({ label, payload: payloads[label] }));
  }

  async close(): Promise<void> {
    const s = this.#login;
    this.#login = null;
    if (!s) return;
    const remaining = s.refreshedAt + s.lifetimeMs - Date.now();
    if (remaining > REUSE_MIN_MS) {
      this.ctx.sessions.set(s, remaining - PARK_MARGIN_MS);
      return;
    }
    this.ctx.sessions.clear();
    await logout(this.ctx.http, s);
  }

  async #session(): Promise<ParkedLogin> {
    if (this.#login) return this.#login;
    const parked = asParkedLogin(this.ctx.sessions.get());
    if (parked && parked.user === this.ctx.credentials.username) {
      const age = Date.now() - parked.refreshedAt;
      if (parked.lifetimeMs - age > REUSE_MIN_MS) {
        if (age < parked.lifetimeMs / 2) return this.#login = parked;
        const refreshed = await this.#refresh(parked);
        if (refreshed) return this.#login = refreshed;
      } else {
        await this.#quietLogout(parked);
      }
    }
    this.ctx.sessions.clear();
    return this.#login = await login(this.ctx.http, this.ctx.credentials);
  }

  /** `GET /api/aaaRefresh.json`; null when the device no longer knows the token. */
  async #refresh(s: ParkedLogin): Promise<ParkedLogin | null> {
    const res = await this.ctx.http.request({ path: PATHS.refresh, headers: cookieHeader(s) });
    if (isAuthStatus(res.status)) return null;
    if (!ok(res)) {
      throw new DeviceError(
        "http_error",
        `GET ${PATHS.refresh} returned HTTP ${res.status}${deviceText(res)}`,
      );
    }
    this.ctx.log.debug("Refreshed the NX-API token of {hostname}", { hostname: this.ctx.device.hostname });
    return readLogin(res, "aaaRefresh", s.user);
  }

  async #quietLogout(s: ParkedLogin) {
    try {
      await logout(this.ctx.http, s);
    } catch (e) {
      this.ctx.log.debug("Logout of an old NX-API token failed: {error}", { error: String(e) });
    }
  }

  async #get(path: string): Promise<DmeEnvelope> {
    const s = await this.#session();
    let res = await this.ctx.http.request({ path, headers: cookieHeader(s) });
    if (isAuthStatus(res.status)) {
      // 403 "Token was invalid (Error: Token timeout)" on an expired token: log in again, once.
      // Any other refusal may leave the session alive on the switch, so end it first.
      this.#login = null;
      this.ctx.sessions.clear();
      if (!/token/i.test(deviceText(res))) await this.#quietLogout(s);
      const fresh = await this.#session();
      res = await this.ctx.http.request({ path, headers: cookieHeader(fresh) });
      if (isAuthStatus(res.status)) {
        throw new DeviceError(
          "auth_failed",
          `GET ${path} refused with HTTP ${res.status} after a fresh login${
            deviceText(res)
          }: the API user lacks permission`,
        );
      }
    }
    if (!ok(res)) {
      throw new DeviceError("http_error", `GET ${path} returned HTTP ${res.status}${deviceText(res)}`);
    }
    const body = res.json();
    if (!isEnvelope(body)) {
      throw new DeviceError("protocol_error", `Unexpected answer to GET ${path}: no "imdata" array`);
    }
    const err = dmeError(body);
    if (err) {
      throw new DeviceError("protocol_error", `GET ${path} answered with error ${err.code}: ${err.text}`);
    }
    return body;
  }

  #objects(env: DmeEnvelope, cls: string, path: string) {
    try {
      return objectsOf(env, cls);
    } catch (e) {
      throw new DeviceError("protocol_error", `Unexpected answer to GET ${path}: ${(e as Error).message}`);
    }
  }
}
