/**
 * `vendor-b-ngfw`: a firewall with a REST API v2 (`/api/v2/cmdb/...`, `/api/v2/monitor/...`).
 *
 * User name `apitoken` selects bearer API-token authentication (no login, no logout); any other user
 * name logs in as an admin with `POST /api/v2/authentication`, falling back to `POST /logincheck` on
 * firmware without that endpoint, and logs out at the end of every cycle. See README.md.
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
  type DeviceResponse,
} from "@dutlab/core";
import { decryptRuleCount, inventory, ntpServers } from "./_facts.ts";
import { VOLATILE_PATHS } from "./_volatile.ts";

/** The registered user name that selects API-token (bearer) authentication. */
export const TOKEN_USERNAME = "apitoken";

const API_AUTH = "/api/v2/authentication";
const LOGINCHECK = "/logincheck";
const CPU_MONITOR = "/api/v2/monitor/system/resource/usage?resource=cpu&scope=global";
/** How long the login style a device answered to is remembered before it is probed again. */
const STYLE_TTL_MS = 12 * 60 * 60_000;

/** Label -> the call (or named calls) whose answers make its payload. */
export const CALLS = {
  system_info: "/api/v2/monitor/system/status",
  resource_usage: "/api/v2/monitor/system/resource/usage?scope=global&interval=1-min",
  ntp_config: "/api/v2/cmdb/system/ntp",
  // `vdom=*`: every VDOM the credential can see, one envelope each (its `vdom` names it).
  decrypt_policy: {
    policies: "/api/v2/cmdb/firewall/policy?vdom=*",
    sslSshProfiles: "/api/v2/cmdb/firewall/ssl-ssh-profile?vdom=*",
  },
  ha_status: "/api/v2/cmdb/system/ha",
  interfaces: "/api/v2/monitor/system/interface?vdom=*",
  license_status: "/api/v2/monitor/license/status",
} as const;

/** The labels this adapter collects. */
export const LABELS = [
  "system_info",
  "resource_usage",
  "ntp_config",
  "decrypt_policy",
  "ha_status",
  "interfaces",
  "license_status",
] as const satisfies readonly (keyof typeof CALLS)[];

/** Admin login styles: JSON `/api/v2/authentication` (6.4.2+, the only one from 7.6.3) or form `/logincheck`. */
export type LoginStyle = "api-auth" | "logincheck";

/** What is parked between cycles: only the login style the device answered to (never a secret). */
export interface ParkedLoginStyle {
  /** The login style the device answered to. */
  loginStyle: LoginStyle;
}

type Attempt = { ok: true } | { ok: false; refused: string } | { ok: false; absent: string };
type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const SESSION_COOKIE = /^(session_key_|ccsrf_?token|APSCOOKIE_)/i;

class RestV2Session implements AdapterSession {
  readonly #ctx: AdapterContext;
  readonly #token: boolean;
  /** The style of the admin session open now, or null. */
  #style: LoginStyle | null = null;

  constructor(ctx: AdapterContext) {
    this.#ctx = ctx;
    this.#token = ctx.credentials.username === TOKEN_USERNAME;
  }

  async testConnection(): Promise<ConnectionTestResult> {
    const answer = await this.#get(CPU_MONITOR);
    const body = Array.isArray(answer) ? answer[0] ?? {} : answer;
    const cpu = (body.results as { cpu?: Array<{ current?: unknown }> } | undefined)?.cpu;
    const current = Array.isArray(cpu) ? cpu[0]?.current : undefined;
    if (typeof current !== "number" || !Number.isFinite(current)) {
      throw new DeviceError("protocol_error", `GET ${CPU_MONITOR} has no numeric "results.cpu[0].current"`);
    }
    const how = this.#token
      ? "API token"
      : `admin session via ${this.#style === "logincheck" ? LOGINCHECK : API_AUTH}`;
    return { cpuDetail: `CPU ${current}% from GET ${CPU_MONITOR} (${how})`, cpuPercent: current };
  }

  async collectAll(): Promise<CollectedSnapshot[]> {
    const out: CollectedSnapshot[] = [];
    for (const label of LABELS) {
      const call = CALLS[label];
      if (typeof call === "string") {
        out.push({ label, payload: await this.#get(call) });
      } else {
        const payload: Record<string, unknown> = {};
        for (const [key, path] of Object.entries(call)) payload[key] = await this.#get(path);
        out.push({ label, payload });
      }
    }
    return out;
  }

  async close(): Promise<void> {
    const style = this.#style;
    if (style === null) return;
    try {
      const res = style === "api-auth"
        ? await this.#request("DELETE", API_AUTH)
        : await this.#ctx.http.request({ method: "GET", path: "/logout" });
      if (res.status !== 200 && res.status !== 401) {
        this.#ctx.log.warn("Logout answered HTTP {status} on {hostname}", {
          status: res.status,
          hostname: this.#ctx.device.hostname,
        });
      }
    } finally {
      this.#style = null;
      this.#dropSessionCookies();
    }
  }

  /** GET one API path; re-logs in once when an admin session has expired (HTTP 401). */
  async #get(path: string): Promise<Obj | Obj[]> {
    if (!this.#token && this.#style === null) await this.#login();
    let res = await this.#request("GET", path);
    if (res.status === 401 && !this.#token) {
      this.#ctx.log.info("Session on {hostname} expired; logging in again", {
        hostname: this.#ctx.device.hostname,
      });
      this.#style = null;
      await this.#login();
      res = await this.#request("GET", path);
    }
    return this.#read(res);
  }

  #read(res: DeviceResponse): Obj | Obj[] {
    const call = `${res.method} ${res.path}`;
    if (res.status === 401) {
      throw new DeviceError(
        "auth_failed",
        this.#token
          ? `API token refused: HTTP 401 from ${call} (wrong or revoked token, or this host is outside trusthost)`
          : `Session refused again after a fresh login: HTTP 401 from ${call}`,
      );
    }
    if (res.status === 403) {
      throw new DeviceError(
        "auth_failed",
        `Permission denied: HTTP 403 from ${call}; the API user's admin profile lacks read access`,
      );
    }
    if (res.status < 200 || res.status > 299) {
      throw new DeviceError("http_error", `${call} answered HTTP ${res.status}`);
    }
    const body = res.json();
    // `vdom=*` answers a list with one envelope per VDOM.
    const envelopes = Array.isArray(body) ? body : [body];
    for (const env of envelopes) {
      if (!isObj(env) || !("results" in env)) {
        throw new DeviceError(
          "protocol_error",
          `${call} answered without a REST API v2 envelope ("results" missing)`,
        );
      }
      if (env.status !== undefined && env.status !== "success") {
        throw new DeviceError(
          "protocol_error",
          `${call} answered status "${String(env.status)}" with HTTP 200` +
            (typeof env.vdom === "string" ? ` for VDOM ${env.vdom}` : ""),
        );
      }
    }
    return body as Obj | Obj[];
  }

  #request(method: string, path: string): Promise<DeviceResponse> {
    const headers: Record<string, string> = {};
    if (this.#token) headers.authorization = `Bearer ${this.#ctx.credentials.password}`;
    else if (method !== "GET") {
      const csrf = this.#csrfToken();
      if (csrf) headers["x-csrftoken"] = csrf;
    }
    return this.#ctx.http.request({ method, path, headers });
  }

  /** The CSRF cookie of the open session, quotes stripped, for `X-CSRFTOKEN` on writes. */
  #csrfToken(): string | undefined {
    const want = this.#style === "logincheck" ? /^ccsrftoken/i : /^ccsrf_token_/i;
    for (const [name, value] of this.#ctx.http.cookies) {
      if (want.test(name)) return value.replace(/^"|"$/g, "");
    }
    return undefined;
  }

  #dropSessionCookies() {
    for (const name of [...this.#ctx.http.cookies.keys()]) {
      if (SESSION_COOKIE.test(name)) this.#ctx.http.cookies.delete(name);
    }
  }

  /** Log in with the remembered style first; fall back to the other one only when the first is absent. */
  async #login(): Promise<void> {
    this.#dropSessionCookies();
    const parked = this.#ctx.sessions.get<ParkedLoginStyle>();
    const order: LoginStyle[] = parked?.loginStyle === "logincheck"
      ? ["logincheck", "api-auth"]
      : ["api-auth", "logincheck"];
    const notes: string[] = [];
    for (const style of order) {
      const attempt = style === "api-auth" ? await this.#loginApiAuth() : await this.#loginCheck();
      if (attempt.ok) {
        this.#style = style;
        if (parked?.loginStyle !== style) {
          this.#ctx.sessions.set<ParkedLoginStyle>({ loginStyle: style }, STYLE_TTL_MS);
        }
        return;
      }
      if ("refused" in attempt) throw new DeviceError("auth_failed", attempt.refused);
      notes.push(attempt.absent);
      this.#dropSessionCookies();
    }
    throw new DeviceError("auth_failed", `Login failed: ${notes.join("; ")}`);
  }

  async #loginApiAuth(): Promise<Attempt> {
    const { username, password } = this.#ctx.credentials;
    const res = await this.#ctx.http.request({
      method: "POST",
      path: API_AUTH,
      // Sources disagree on the secret's field name (`secretkey`, or `password` on 7.6.7); send both.
      json: { username, secretkey: password, password, ack_pre_disclaimer: true, ack_post_disclaimer: true },
    });
    if (res.status >= 500 || res.status === 429) {
      throw new DeviceError("http_error", `POST ${API_AUTH} answered HTTP ${res.status}`);
    }
    let body: unknown;
    try {
      body = res.json();
    } catch {
      body = undefined;
    }
    const message = isObj(body) ? body.status_message : undefined;
    const code = isObj(body) ? (body.status_code ?? body.status) : undefined;
    if (typeof message !== "string" && typeof code !== "number") {
      return { ok: false, absent: `POST ${API_AUTH} is not available (HTTP ${res.status})` };
    }
    if (message === "LOGIN_SUCCESS" || (message === undefined && (code === 5 || code === 6))) {
      return { ok: true };
    }
    return {
      ok: false,
      refused:
        `Login refused by POST ${API_AUTH}: ${typeof message === "string" ? message : `status ${code}`} ` +
        `(HTTP ${res.status}); wrong user name or password, a prompt the API cannot answer ` +
        `(two-factor, disclaimer, password change), or admin-login-max reached`,
    };
  }

  async #loginCheck(): Promise<Attempt> {
    const { username, password } = this.#ctx.credentials;
    const res = await this.#ctx.http.request({
      method: "POST",
      path: LOGINCHECK,
      form: { username, secretkey: password, ajax: "1" },
    });
    if (res.status === 200) {
      // A wrong password either sets no ccsrftoken or sets it to "0%260".
      const csrf = res.setCookies
        .map((c) => /^ccsrftoken[^=]*=\s*"?([^";\s]*)/i.exec(c)?.[1] ?? "")
        .some((v) => v !== "" && v !== "0%260");
      return csrf ? { ok: true } : {
        ok: false,
        absent:
          `POST ${LOGINCHECK} answered HTTP 200 without a usable ccsrftoken cookie (wrong user name or ` +
          `password, admin-login-max reached, or FortiOS 7.6.3+ where only ${API_AUTH} logs in)`,
      };
    }
    if (res.status === 401 || res.status === 403) {
      return { ok: false, refused: `Login refused by POST ${LOGINCHECK}: HTTP ${res.status}` };
    }
    if (res.status === 404) return { ok: false, absent: `POST ${LOGINCHECK} is not available (HTTP 404)` };
    throw new DeviceError("http_error", `POST ${LOGINCHECK} answered HTTP ${res.status}`);
  }
}

/** The adapter, typed so that its labels and facts are known to callers. */
export type RestV2Adapter = AdapterDefinition & {
  labels: typeof LABELS;
  facts: Required<Pick<AdapterFacts, "decryptRuleCount" | "ntpServers" | "inventory">>;
};

/** The `vendor-b-ngfw` adapter. */
const adapter: RestV2Adapter = defineAdapter({
  vendorKey: "vendor-b-ngfw",
  displayName: "Firewall with REST API v2",
  coreVersion: "^1.0.0",
  deviceRoles: ["ngfw"],
  labels: LABELS,
  facts: { decryptRuleCount, ntpServers, inventory },
  inventoryLabel: "system_info",
  volatilePaths: VOLATILE_PATHS,
  create: (ctx) => new RestV2Session(ctx),
  // Only the login style is parked; admin sessions are closed every cycle, so there is nothing to log out.
  release: () => Promise.resolve(),
});

export default adapter;
