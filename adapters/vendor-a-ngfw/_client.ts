import { DeviceError, type DeviceHttp, type DeviceResponse } from "@dutlab/core";

/** Every FDM REST path hangs under this prefix (`latest` aliases the newest API version on the box). */
export const API_BASE = "/api/fdm/latest";
/** The OAuth2 token endpoint: password, refresh_token and revoke_token grants all go here. */
export const TOKEN_PATH = "/fdm/token";

/** Page size asked for on list calls; the device answers `{items, paging}` and we follow `paging.next`. */
export const PAGE_LIMIT = 100;
/** Guard against a device whose paging never ends. */
const MAX_PAGES = 50;
/** Use a parked access token only while it has at least this long to live. */
const ACCESS_MARGIN_MS = 60_000;
/** Use a parked refresh token only while it has at least this long to live. */
const REFRESH_MARGIN_MS = 10_000;

/** Login state parked in `ctx.sessions` between polls: OAuth tokens and their expiry, never the password. */
export interface FdmTokens {
  kind: "fdm-oauth";
  accessToken: string;
  /** Epoch ms. */
  accessExpiresAt: number;
  refreshToken: string | null;
  /** Epoch ms, or null when the device gave no refresh token. */
  refreshExpiresAt: number | null;
}

/** A list answer: `{items, paging}`; when several pages were fetched, `items` holds all of them in order. */
export interface FdmList {
  items: unknown[];
  paging?: unknown;
  [key: string]: unknown;
}

type Json = Record<string, unknown>;

export function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Narrow a value found in `ctx.sessions` to parked tokens, or null when it is something else. */
export function asParkedTokens(v: unknown): FdmTokens | null {
  if (!isObject(v) || v.kind !== "fdm-oauth") return null;
  if (typeof v.accessToken !== "string" || typeof v.accessExpiresAt !== "number") return null;
  return v as unknown as FdmTokens;
}

/** How long `ctx.sessions` may keep the tokens: until shortly before the device forgets the session. */
export function parkTtlMs(t: FdmTokens, now = Date.now()): number {
  const end = t.refreshToken && t.refreshExpiresAt !== null ? t.refreshExpiresAt : t.accessExpiresAt;
  return Math.max(1_000, end - now - REFRESH_MARGIN_MS);
}

/** The first message of an FDM `ErrorWrapper` body (`{"error":{"messages":[{"description"}]}}`), if any. */
function deviceErrorText(res: DeviceResponse): string {
  try {
    const body = JSON.parse(res.text) as unknown;
    if (isObject(body) && isObject(body.error) && Array.isArray(body.error.messages)) {
      const first = body.error.messages[0];
      if (isObject(first) && typeof first.description === "string" && first.description) {
        return `: "${first.description.slice(0, 200)}"`;
      }
    }
  } catch {
    // Not JSON: the status alone says enough.
  }
  return "";
}

function tokensFrom(res: DeviceResponse, now: number): FdmTokens {
  const body = res.json();
  if (!isObject(body) || typeof body.access_token !== "string" || body.access_token === "") {
    throw new DeviceError(
      "protocol_error",
      `Token answer from ${res.method} ${res.path} has no "access_token" (HTTP ${res.status})`,
    );
  }
  const seconds = (v: unknown, dflt: number) => typeof v === "number" && v > 0 ? v : dflt;
  const refresh = typeof body.refresh_token === "string" && body.refresh_token ? body.refresh_token : null;
  return {
    kind: "fdm-oauth",
    accessToken: body.access_token,
    accessExpiresAt: now + seconds(body.expires_in, 1800) * 1000,
    refreshToken: refresh,
    refreshExpiresAt: refresh ? now + seconds(body.refresh_expires_in, 2400) * 1000 : null,
  };
}

/** Add query parameters to a path that may already carry some. */
export function withQuery(path: string, params: Record<string, string | number>): string {
  const q = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString();
  return path + (path.includes("?") ? "&" : "?") + q;
}

/**
 * Offset of the next page, from `paging.next[0]` (a full URL on the device). Only its `offset` is used,
 * so a device that names itself by another address than our base URL still pages correctly.
 */
function nextOffset(paging: unknown, offset: number, got: number): number | null {
  if (!isObject(paging) || !Array.isArray(paging.next) || paging.next.length === 0) return null;
  const next = paging.next[0];
  if (typeof next === "string") {
    try {
      const o = Number(new URL(next, "https://device.invalid").searchParams.get("offset"));
      if (Number.isInteger(o) && o > offset) return o;
    } catch {
      // Fall through to counting.
    }
  }
  return got > 0 ? offset + got : null;
}

/**
 * FDM REST client for one cycle: OAuth2 bearer tokens (reused from `ctx.sessions` when still valid,
 * refreshed near expiry, a password login otherwise), one re-authentication on 401, paging, and error
 * classification. Never puts the password or a token in an error message.
 */
export class FdmClient {
  #tokens: FdmTokens | null;
  #renewed = false;

  constructor(
    private readonly http: DeviceHttp,
    private readonly credentials: { readonly username: string; readonly password: string } | null,
    parked: FdmTokens | null = null,
  ) {
    this.#tokens = parked;
  }

  /** The tokens in use (to park at the end of the cycle), or null when not logged in. */
  get tokens(): FdmTokens | null {
    return this.#tokens;
  }

  /** Make sure a usable access token is at hand: the parked one, a refreshed one, or a new login. */
  async ensureToken(): Promise<string> {
    const now = Date.now();
    const t = this.#tokens;
    // A parked token needs a margin; one obtained in this cycle is used while it lives (a device with
    // short-lived tokens would otherwise be refreshed before every call).
    if (t && t.accessExpiresAt - now > (this.#renewed ? 0 : ACCESS_MARGIN_MS)) return t.accessToken;
    if (t && await this.#refresh()) return this.#tokens!.accessToken;
    await this.#login();
    return this.#tokens!.accessToken;
  }

  async #login(): Promise<void> {
    this.#tokens = null;
    if (!this.credentials) {
      throw new DeviceError("auth_failed", "No credentials to log in with (releasing a parked session)");
    }
    const res = await this.http.request({
      method: "POST",
      path: API_BASE + TOKEN_PATH,
      json: {
        grant_type: "password",
        username: this.credentials.username,
        password: this.credentials.password,
      },
    });
    if (res.status === 400 || res.status === 401 || res.status === 403) {
      throw new DeviceError(
        "auth_failed",
        `Login refused: HTTP ${res.status} from ${res.method} ${res.path} (check the username and password)`,
      );
    }
    if (res.status < 200 || res.status >= 300) {
      throw new DeviceError(
        "http_error",
        `Login failed: HTTP ${res.status} from ${res.method} ${res.path}${deviceErrorText(res)}`,
      );
    }
    this.#tokens = tokensFrom(res, Date.now());
    this.#renewed = true;
  }

  /** Trade the refresh token for new tokens; false when there is none or the device refuses it. */
  async #refresh(): Promise<boolean> {
    const t = this.#tokens;
    if (
      !t?.refreshToken || t.refreshExpiresAt === null || t.refreshExpiresAt - Date.now() <= REFRESH_MARGIN_MS
    ) {
      return false;
    }
    const res = await this.http.request({
      method: "POST",
      path: API_BASE + TOKEN_PATH,
      json: { grant_type: "refresh_token", refresh_token: t.refreshToken },
    });
    if (res.status === 400 || res.status === 401 || res.status === 403) {
      this.#tokens = null;
      return false;
    }
    if (res.status < 200 || res.status >= 300) {
      throw new DeviceError(
        "http_error",
        `Token refresh failed: HTTP ${res.status} from ${res.method} ${res.path}${deviceErrorText(res)}`,
      );
    }
    this.#tokens = tokensFrom(res, Date.now());
    this.#renewed = true;
    return true;
  }

  /** The token was refused mid-cycle: refresh it, or log in again. */
  async #reauthenticate(): Promise<void> {
    if (this.#tokens) this.#tokens = { ...this.#tokens, accessExpiresAt: 0 };
    if (await this.#refresh()) return;
    await this.#login();
  }

  #get(path: string): Promise<DeviceResponse> {
    return this.http.request({
      method: "GET",
      path: API_BASE + path,
      headers: { authorization: `Bearer ${this.#tokens!.accessToken}` },
    });
  }

  /** GET one FDM object (path relative to `/api/fdm/latest`) and return its JSON body untouched. */
  async getJson(path: string): Promise<Json> {
    await this.ensureToken();
    let res = await this.#get(path);
    if (res.status === 401) {
      await this.#reauthenticate();
      res = await this.#get(path);
      if (res.status === 401) {
        throw new DeviceError(
          "auth_failed",
          `Device refused a fresh token: HTTP 401 from ${res.method} ${res.path}`,
        );
      }
    }
    if (res.status === 403) {
      throw new DeviceError(
        "auth_failed",
        `The API user lacks permission: HTTP 403 from ${res.method} ${res.path}${deviceErrorText(res)}`,
      );
    }
    if (res.status < 200 || res.status >= 300) {
      throw new DeviceError(
        "http_error",
        `HTTP ${res.status} from ${res.method} ${res.path}${deviceErrorText(res)}`,
      );
    }
    const body = res.json();
    if (!isObject(body)) {
      throw new DeviceError("protocol_error", `Expected a JSON object from ${res.method} ${res.path}`);
    }
    return body;
  }

  /**
   * GET an FDM list (`{items, paging}`), following `paging.next` with `offset`/`limit`. One page is
   * returned as the device sent it; several pages as the last page's body with all `items` in order.
   */
  async getList(path: string): Promise<FdmList> {
    const items: unknown[] = [];
    let offset = 0;
    for (let page = 0; page < MAX_PAGES; page++) {
      const body = await this.getJson(withQuery(path, { offset, limit: PAGE_LIMIT }));
      if (!Array.isArray(body.items)) {
        throw new DeviceError("protocol_error", `Expected a list with "items" from GET ${API_BASE}${path}`);
      }
      items.push(...body.items);
      const next = nextOffset(body.paging, offset, body.items.length);
      if (next === null) return page === 0 ? body as FdmList : { ...body, items };
      offset = next;
    }
    throw new DeviceError("protocol_error", `GET ${API_BASE}${path} kept paging past ${MAX_PAGES} pages`);
  }

  /**
   * Log the session out: revoke the refresh token, then the access token (`grant_type: revoke_token`).
   * A token the device already forgot (400/401) counts as revoked.
   */
  async revoke(): Promise<void> {
    const t = this.#tokens;
    if (!t) return;
    if (t.accessExpiresAt - Date.now() <= REFRESH_MARGIN_MS && !(await this.#refresh())) {
      // Neither token is usable: the device has dropped the session already.
      this.#tokens = null;
      return;
    }
    const live = this.#tokens!;
    if (live.refreshToken) await this.#revokeOne(live.accessToken, live.refreshToken);
    await this.#revokeOne(live.accessToken, live.accessToken);
    this.#tokens = null;
  }

  async #revokeOne(accessToken: string, tokenToRevoke: string): Promise<void> {
    const res = await this.http.request({
      method: "POST",
      path: API_BASE + TOKEN_PATH,
      headers: { authorization: `Bearer ${accessToken}` },
      json: { grant_type: "revoke_token", access_token: accessToken, token_to_revoke: tokenToRevoke },
    });
    if (res.status === 400 || res.status === 401) return;
    if (res.status < 200 || res.status >= 300) {
      throw new DeviceError(
        "http_error",
        `Token revoke failed: HTTP ${res.status} from ${res.method} ${res.path}${deviceErrorText(res)}`,
      );
    }
  }
}
