import { type AdapterContext, DeviceError, type DeviceResponse } from "@dutlab/core";

/** A Redfish resource as parsed JSON. */
export type Resource = Record<string, unknown>;

/** What `logout` needs: the session's URI (path only) and its token. Never the password. */
export interface RedfishLogin {
  token: string;
  sessionPath: string;
}

export const SERVICE_ROOT = "/redfish/v1/";
/** Fallback when the service root does not link `Links.Sessions` (DSP0266 fixes this URI). */
const DEFAULT_SESSIONS = "/redfish/v1/SessionService/Sessions";

const isObject = (v: unknown): v is Resource => v !== null && typeof v === "object" && !Array.isArray(v);

/** `MessageId`s (and the top-level `code`) of a Redfish error body; empty when the body has none. */
export function redfishMessageIds(res: DeviceResponse): string[] {
  let body: unknown;
  try {
    body = JSON.parse(res.text);
  } catch {
    return [];
  }
  const err = isObject(body) ? body.error : undefined;
  if (!isObject(err)) return [];
  const ids: string[] = [];
  if (typeof err.code === "string") ids.push(err.code);
  const info = err["@Message.ExtendedInfo"];
  if (Array.isArray(info)) {
    for (const m of info) if (isObject(m) && typeof m.MessageId === "string") ids.push(m.MessageId);
  }
  return [...new Set(ids)];
}

function describe(res: DeviceResponse): string {
  const ids = redfishMessageIds(res);
  return `HTTP ${res.status} from ${res.method} ${res.path}${ids.length ? ` (${ids.join(", ")})` : ""}`;
}

function isSessionLimit(res: DeviceResponse): boolean {
  return redfishMessageIds(res).some((id) =>
    id === "SessionLimitExceeded" || id.endsWith(".SessionLimitExceeded")
  );
}

/** The `@odata.id` under `obj[k1][k2]...`, or null when the link is absent. */
export function linkOf(obj: unknown, ...keys: string[]): string | null {
  let cur: unknown = obj;
  for (const k of keys) {
    if (!isObject(cur)) return null;
    cur = cur[k];
  }
  if (Array.isArray(cur)) cur = cur[0];
  return isObject(cur) && typeof cur["@odata.id"] === "string" && cur["@odata.id"] ? cur["@odata.id"] : null;
}

/** The member URIs of a Redfish collection; throws `protocol_error` when `Members` is not a list of links. */
export function membersOf(collection: Resource, path: string): string[] {
  const members = collection.Members;
  if (members === undefined) return [];
  if (!Array.isArray(members)) {
    throw new DeviceError("protocol_error", `Collection at ${path} has no "Members" array`);
  }
  return members.map((m, i) => {
    const id = isObject(m) ? m["@odata.id"] : undefined;
    if (typeof id !== "string" || !id) {
      throw new DeviceError("protocol_error", `Member ${i} of ${path} has no "@odata.id"`);
    }
    return id;
  });
}

/** Pages of one collection read at most (`Members@odata.nextLink` is followed up to this bound). */
export const MAX_COLLECTION_PAGES = 32;

/** A collection read across its pages. */
export interface PagedMembers {
  /** The first page as the device returned it. */
  first: Resource;
  /** Member URIs of every page read, in order. */
  members: string[];
  /** Later pages as returned (empty when the collection fits one page). */
  pages: Resource[];
  /** Set when the bound stopped the reading: the next link not followed. */
  truncatedAt: string | null;
}

/** Read a collection and follow `Members@odata.nextLink` (DSP0266 7.3.3) up to `MAX_COLLECTION_PAGES`. */
export async function readCollection(
  get: (path: string) => Promise<Resource>,
  path: string,
  maxPages = MAX_COLLECTION_PAGES,
): Promise<PagedMembers> {
  const first = await get(path);
  const members = membersOf(first, path);
  const pages: Resource[] = [];
  const seen = new Set([path]);
  let next = nextLinkOf(first, path);
  while (next !== null && pages.length + 1 < maxPages) {
    if (seen.has(next)) {
      throw new DeviceError("protocol_error", `Collection ${path} links page ${next} twice`);
    }
    seen.add(next);
    const page = await get(next);
    pages.push(page);
    members.push(...membersOf(page, next));
    next = nextLinkOf(page, next);
  }
  return { first, members, pages, truncatedAt: next };
}

function nextLinkOf(page: Resource, path: string): string | null {
  const next = page["Members@odata.nextLink"];
  if (next === undefined || next === null) return null;
  if (typeof next !== "string" || next === "") {
    throw new DeviceError("protocol_error", `"Members@odata.nextLink" of ${path} is not a URI`);
  }
  return pathOf(next);
}

/** Path (and query) of a URI the device returned, absolute or relative. */
function pathOf(uri: string): string {
  const u = new URL(uri, "https://device.invalid");
  return u.pathname + u.search;
}

/**
 * A Redfish session over the core transport: creates a session (`POST` to the service root's
 * `Links.Sessions`), sends `X-Auth-Token`, re-creates the session once when a call is answered 401
 * (expired or `NoValidSession`), and deletes it on `logout()`.
 */
export class RedfishClient {
  #login: RedfishLogin | null = null;
  /** An in-flight login, shared so concurrent calls that all see a 401 create one session, not several. */
  #loggingIn: Promise<void> | null = null;
  #sessionsPath: string | null = null;
  #closed = false;
  /** Authorization header value when the session service refused and this cycle uses Basic. */
  #basic: string | null = null;
  /** Set when this cycle fell back to Basic authentication: why, for the poll detail. */
  fallbackNote: string | null = null;

  constructor(private ctx: AdapterContext) {}

  async #findSessionsPath(): Promise<string> {
    if (this.#sessionsPath) return this.#sessionsPath;
    // The service root is readable without a session (DSP0266); some services still ask for one.
    const res = await this.ctx.http.request({ path: SERVICE_ROOT });
    let path = DEFAULT_SESSIONS;
    if (res.status === 200) {
      const root = res.json();
      path = linkOf(root, "Links", "Sessions") ?? DEFAULT_SESSIONS;
    } else if (res.status !== 401 && res.status !== 403) {
      throw new DeviceError("http_error", `Cannot read the Redfish service root: ${describe(res)}`);
    }
    this.#sessionsPath = pathOf(path);
    return this.#sessionsPath;
  }

  /** Create a session unless one is open. */
  async login(): Promise<void> {
    if (this.#login || this.#basic) return;
    if (this.#closed) {
      // A request still running after close() must not open a session nobody will delete.
      throw new DeviceError("adapter_error", "Redfish session already closed for this cycle");
    }
    this.#loggingIn ??= this.#createSession().finally(() => (this.#loggingIn = null));
    await this.#loggingIn;
  }

  async #createSession(): Promise<void> {
    const path = await this.#findSessionsPath();
    const { username, password } = this.ctx.credentials;
    const res = await this.ctx.http.request({
      method: "POST",
      path,
      json: { UserName: username, Password: password },
    });
    // DSP0266: a service without sessions answers 404/405/501 on the Sessions collection; a full session
    // table names SessionLimitExceeded. Both refuse the session, not the credentials: use Basic this cycle.
    const refusal = isSessionLimit(res)
      ? `the session table is full (${describe(res)})`
      : res.status === 404 || res.status === 405 || res.status === 501
      ? `the service offers no sessions (${describe(res)})`
      : null;
    if (refusal) {
      this.#basic = `Basic ${btoa(`${username}:${password}`)}`;
      this.fallbackNote = `Redfish session refused: ${refusal}; this cycle used HTTP Basic authentication`;
      this.ctx.log.warn("Redfish session refused on {hostname}; using Basic authentication this cycle", {
        hostname: this.ctx.device.hostname,
      });
      return;
    }
    if (res.status === 401 || res.status === 403) {
      throw new DeviceError("auth_failed", `Login refused: ${describe(res)}`);
    }
    if (res.status < 200 || res.status >= 300) {
      throw new DeviceError("http_error", `Login failed: ${describe(res)}`);
    }
    const token = res.headers.get("x-auth-token");
    if (!token) {
      throw new DeviceError(
        "protocol_error",
        `Login answer from POST ${path} carries no X-Auth-Token header`,
      );
    }
    let location = res.headers.get("location");
    if (!location && res.text) {
      const body = res.json();
      if (isObject(body) && typeof body["@odata.id"] === "string") location = body["@odata.id"];
    }
    if (!location) {
      // Redfish deletes a session by its URI; without one the session would leak until it times out.
      throw new DeviceError(
        "protocol_error",
        `Login answer from POST ${path} has neither a Location header nor an "@odata.id"; ` +
          `the session cannot be deleted and stays open until the device times it out`,
      );
    }
    // Path only: a BMC may name itself by another host name or IP in Location; it is still this device.
    this.#login = { token, sessionPath: pathOf(location) };
  }

  async #send(path: string, token: string): Promise<DeviceResponse> {
    return await this.ctx.http.request({ path, headers: { "x-auth-token": token } });
  }

  async #getBasic(path: string, basic: string): Promise<DeviceResponse> {
    const res = await this.ctx.http.request({ path, headers: { authorization: basic } });
    if (res.status === 401) {
      throw new DeviceError(
        "auth_failed",
        `Basic authentication refused after the session service refused a session: ${describe(res)}`,
      );
    }
    return res;
  }

  #token(): string {
    if (!this.#login) {
      throw new DeviceError("adapter_error", "Redfish session closed while a request was pending");
    }
    return this.#login.token;
  }

  /** GET a resource; the answer must be a JSON object. */
  async get(path: string): Promise<Resource> {
    await this.login();
    const token = this.#basic ? null : this.#token();
    let res = token === null ? await this.#getBasic(path, this.#basic!) : await this.#send(path, token);
    if (res.status === 401 && token !== null) {
      // Expired or dropped session (Base NoValidSession): the device no longer holds it, so no logout.
      // Only forget it if no concurrent call has already replaced it.
      if (this.#login?.token === token) this.#login = null;
      await this.login();
      res = this.#basic ? await this.#getBasic(path, this.#basic) : await this.#send(path, this.#token());
      if (res.status === 401) {
        throw new DeviceError("auth_failed", `Session refused again after re-login: ${describe(res)}`);
      }
    }
    if (res.status === 403) {
      throw new DeviceError(
        "auth_failed",
        `Permission denied: ${describe(res)}; the API user lacks permission`,
      );
    }
    if (res.status !== 200) throw new DeviceError("http_error", `Request failed: ${describe(res)}`);
    const body = res.json();
    if (!isObject(body)) {
      throw new DeviceError(
        "protocol_error",
        `GET ${path} answered JSON that is not a Redfish resource object`,
      );
    }
    return body;
  }

  /** End of the cycle: wait for a login in flight, delete the session, and refuse to log in again. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#basic = null;
    await this.#loggingIn?.catch(() => {});
    await this.logout();
  }

  /** Delete the session, if one is open. A session the device already dropped (401/404) counts as gone. */
  async logout(): Promise<void> {
    const login = this.#login;
    if (!login) return;
    this.#login = null;
    await deleteSession(this.ctx.http, login);
  }
}

/** `DELETE` a Redfish session with its own token. */
export async function deleteSession(http: AdapterContext["http"], login: RedfishLogin): Promise<void> {
  const res = await http.request({
    method: "DELETE",
    path: login.sessionPath,
    headers: { "x-auth-token": login.token },
  });
  if (res.status >= 200 && res.status < 300) return;
  if (res.status === 401 || res.status === 404) return;
  throw new DeviceError("http_error", `Logout failed: ${describe(res)}`);
}
