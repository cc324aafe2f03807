import type http from "node:http";
import https from "node:https";
import { Buffer } from "node:buffer";
import { DeviceError } from "../errors.ts";
import type { DeviceHttp, DeviceRequest, DeviceResponse } from "./types.ts";
import { classifyNetworkError } from "./errors.ts";
import { type CertState, connectVerified, type Endpoint } from "./connect.ts";
import type { TransportHooks, TransportLimits, TransportTarget } from "./options.ts";

export type { TransportHooks, TransportLimits, TransportTarget } from "./options.ts";

/** Limits when none are configured: 5 s connect, 15 s request, 8 MiB response, JSON depth 64. */
export const DEFAULT_LIMITS: TransportLimits = {
  connectTimeoutMs: 5_000,
  requestTimeoutMs: 15_000,
  maxResponseBytes: 8 * 1024 * 1024,
  maxJsonDepth: 64,
};

/** A device transport for one cycle; `close()` drops its connections, or parks them in `hooks.pool`. */
export interface DeviceTransport extends DeviceHttp {
  /** SHA-256 of the leaf certificate the device presented on the last connection. */
  readonly presentedCertSha256: string | null;
  /** The pin in force (set by trust on first use during this cycle, or the stored one). */
  readonly pinnedCertSha256: string | null;
  close(): void;
}

/** Depth of a parsed JSON value, stopping early once `limit` is exceeded. */
export function jsonDepthExceeds(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (d > limit) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) {
      if (child !== null && typeof child === "object") stack.push([child, d + 1]);
    }
  }
  return false;
}

function parseSetCookie(jar: Map<string, string>, header: string) {
  const [pair = "", ...attrs] = header.split(";"); // split always gives at least one part
  const eq = pair.indexOf("=");
  if (eq <= 0) return;
  const name = pair.slice(0, eq).trim();
  const value = pair.slice(eq + 1).trim();
  const expired = attrs.some((a) => {
    const [k, v] = a.split("=").map((s) => s?.trim());
    if (k?.toLowerCase() === "max-age") return Number(v) <= 0;
    if (k?.toLowerCase() === "expires") return Date.parse(v ?? "") < Date.now();
    return false;
  });
  if (expired || value === "" || value === '""') jar.delete(name);
  else jar.set(name, value);
}

/** The raw answer to one request, before cookies and JSON parsing. */
interface RawResponse {
  status: number;
  headers: Headers;
  setCookies: string[];
  text: string;
}

/** An outgoing request resolved against the endpoint: method, path, headers and body. */
interface PreparedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
}

function endpointOf(baseUrl: string): Endpoint {
  const base = new URL(baseUrl);
  if (base.protocol !== "https:") {
    throw new DeviceError("protocol_error", `Refusing non-HTTPS base URL ${base.origin}`);
  }
  return {
    base,
    host: base.hostname.replace(/^\[|\]$/g, ""),
    port: Number(base.port || 443),
    basePath: base.pathname.replace(/\/+$/, ""),
    where: `${base.host}`,
  };
}

/** A request path on the device: relative to the base path, or absolute on the same origin only. */
function resolvePath(ep: Endpoint, p: string): string {
  if (/^https?:\/\//i.test(p)) {
    const u = new URL(p);
    if (u.protocol !== ep.base.protocol || u.host !== ep.base.host) {
      throw new DeviceError(
        "protocol_error",
        `Device referred to another origin (${u.origin}); not followed`,
      );
    }
    return u.pathname + u.search;
  }
  return ep.basePath + (p.startsWith("/") ? p : `/${p}`);
}

/** Method, path, headers (with the cookie jar) and encoded body of a request. */
function prepareRequest(ep: Endpoint, req: DeviceRequest, cookies: Map<string, string>): PreparedRequest {
  const method = (req.method ?? "GET").toUpperCase();
  const path = resolvePath(ep, req.path);
  const headers: Record<string, string> = { accept: "application/json", ...lower(req.headers ?? {}) };
  let body: string | undefined;
  if (req.json !== undefined) {
    body = JSON.stringify(req.json);
    headers["content-type"] ??= "application/json";
  } else if (req.form) {
    body = new URLSearchParams(req.form).toString();
    headers["content-type"] ??= "application/x-www-form-urlencoded";
  } else if (req.body !== undefined) body = req.body;
  if (body !== undefined) headers["content-length"] = String(Buffer.byteLength(body));
  if (cookies.size && !headers["cookie"]) {
    headers["cookie"] = [...cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }
  return { method, path, headers, body };
}

function rawResponse(resp: http.IncomingMessage, chunks: Uint8Array[]): RawResponse {
  const h = new Headers();
  for (const [k, v] of Object.entries(resp.headers)) {
    if (Array.isArray(v)) v.forEach((x) => h.append(k, x));
    else if (v !== undefined) h.set(k, String(v));
  }
  const sc = resp.headers["set-cookie"];
  const setCookies = Array.isArray(sc) ? sc : sc ? [String(sc)] : [];
  return {
    status: resp.statusCode ?? 0,
    headers: h,
    setCookies,
    text: Buffer.concat(chunks).toString("utf8"),
  };
}

/** Send one prepared request over `agent`, bounded by the timeout, the size limit and the cancel signal. */
function send(
  ep: Endpoint,
  agent: https.Agent,
  prep: PreparedRequest,
  timeoutMs: number,
  limits: TransportLimits,
  signal: AbortSignal | undefined,
): Promise<RawResponse> {
  const { method, path, headers, body } = prep;
  return new Promise<RawResponse>((resolve, reject) => {
    let settled = false;
    const settle = () => {
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    };
    const fail = (e: Error) => {
      if (settled) return;
      settle();
      r.destroy();
      reject(e);
    };
    const onAbort = () =>
      fail(new DeviceError("timeout", `Poll of ${ep.where} was cancelled (${method} ${path})`));
    const timer = setTimeout(
      () => fail(new DeviceError("timeout", `Timed out after ${timeoutMs} ms waiting for ${method} ${path}`)),
      timeoutMs,
    );
    const r = https.request({ host: ep.host, port: ep.port, path, method, agent, headers }, (resp) => {
      const chunks: Uint8Array[] = [];
      let size = 0;
      resp.on("data", (c: Uint8Array) => {
        size += c.length;
        if (size > limits.maxResponseBytes) {
          fail(
            new DeviceError(
              "protocol_error",
              `Response to ${method} ${path} exceeds ${limits.maxResponseBytes} bytes`,
            ),
          );
          return;
        }
        chunks.push(c);
      });
      resp.on("error", (e) => fail(classifyNetworkError(e, ep.where)));
      resp.on("end", () => {
        if (settled) return;
        settle();
        resolve(rawResponse(resp, chunks));
      });
    });
    r.on("error", (e) => fail(classifyNetworkError(e, ep.where)));
    if (signal?.aborted) return onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    if (body !== undefined) r.write(body);
    r.end();
  });
}

/** The device response: the raw answer plus a `json()` that bounds parse errors and nesting depth. */
function deviceResponse(
  res: RawResponse,
  method: string,
  path: string,
  limits: TransportLimits,
): DeviceResponse {
  return {
    ...res,
    method,
    path,
    json<T>(): T {
      let v: unknown;
      try {
        v = JSON.parse(res.text);
      } catch {
        throw new DeviceError(
          "protocol_error",
          `Unparseable JSON from ${method} ${path} (HTTP ${res.status}, ${res.text.length} bytes)`,
        );
      }
      if (jsonDepthExceeds(v, limits.maxJsonDepth)) {
        throw new DeviceError(
          "protocol_error",
          `JSON from ${method} ${path} nests deeper than ${limits.maxJsonDepth}`,
        );
      }
      return v as T;
    },
  };
}

/** What a connection factory checks a new connection with: the transport that owns the agent now. */
interface AgentOwner {
  ep: Endpoint;
  target: TransportTarget;
  limits: TransportLimits;
  cert: CertState;
  hooks: TransportHooks;
}

/** A keep-alive agent whose connections are opened and checked by `connectVerified` for its owner. */
class VerifyingAgent extends https.Agent {
  owner: AgentOwner | undefined;
  // deno-lint-ignore no-explicit-any
  override createConnection(_options: any, cb?: (err: Error | null, socket: any) => void): any {
    const o = this.owner;
    if (!o) cb?.(new DeviceError("unreachable", "Transport closed"), undefined);
    else connectVerified(o.ep, o.target, o.limits, o.cert, o.hooks, cb);
    return undefined;
  }
}

const limitIds = new WeakMap<TransportLimits, number>();
let lastLimitId = 0;

/**
 * Where a transport's agent is parked between polls: endpoint, TLS mode, pin in force and limits. In
 * `self-signed` mode without a pin there is nothing to park under (the first connection pins).
 */
function poolKey(
  ep: Endpoint,
  target: TransportTarget,
  limits: TransportLimits,
  cert: CertState,
): string | null {
  if (target.tlsVerifyMode === "self-signed" && cert.pin === null) return null;
  let id = limitIds.get(limits);
  if (id === undefined) limitIds.set(limits, id = ++lastLimitId);
  return `${target.tlsVerifyMode} ${cert.pin ?? "-"} ${id} ${ep.base.origin}`;
}

/**
 * Open a transport to one device. HTTPS only. In `strict` mode the system trust store (plus
 * `extraCa`) and hostname verification apply; in `self-signed` mode the leaf certificate's SHA-256 is
 * pinned on first use and must match afterwards; `insecure` skips verification. The certificate is
 * checked in the connection factory, before the HTTP layer gets the socket, so no request byte is sent
 * over a connection whose check failed.
 */
export function openTransport(
  target: TransportTarget,
  limits: TransportLimits = DEFAULT_LIMITS,
  hooks: TransportHooks = {},
): DeviceTransport {
  const ep = endpointOf(target.baseUrl);
  const cert: CertState = { pin: target.pinnedCertSha256, presented: null };
  const cookies = new Map<string, string>();

  const key = poolKey(ep, target, limits, cert);
  const parked = key ? hooks.pool?.take(key) : undefined;
  const agent = (parked?.agent as VerifyingAgent | undefined) ??
    new VerifyingAgent({ keepAlive: true, maxSockets: 4 });
  agent.owner = { ep, target, limits, cert, hooks };
  if (parked) cert.presented = parked.presented;

  async function request(req: DeviceRequest): Promise<DeviceResponse> {
    const prep = prepareRequest(ep, req, cookies);
    const res = await send(ep, agent, prep, req.timeoutMs ?? limits.requestTimeoutMs, limits, hooks.signal);
    for (const c of res.setCookies) parseSetCookie(cookies, c);
    return deviceResponse(res, prep.method, prep.path, limits);
  }

  return {
    request,
    cookies,
    get presentedCertSha256() {
      return cert.presented;
    },
    get pinnedCertSha256() {
      return cert.pin;
    },
    close() {
      if (agent.owner?.cert !== cert) return; // closed already
      agent.owner = undefined;
      // Parked under the pin now in force: every connection of the agent was checked against it.
      const at = hooks.pool && poolKey(ep, target, limits, cert);
      if (at) hooks.pool!.park(at, { agent, presented: cert.presented });
      else agent.destroy();
    },
  };
}

function lower(h: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));
}
