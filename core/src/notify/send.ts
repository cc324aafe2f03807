/**
 * One outbound webhook call (issue 51 point 6): HTTPS unless the subscription allows HTTP, the address rules
 * of device connections (`DUT_DEVICE_NETWORKS` and the guarded ranges, transport/networks.ts) checked on every
 * address the name resolves to (the socket connects only to those), a connect-and-answer time limit, the
 * response read up to a cap (its first bytes are kept for the delivery log), and no redirect followed.
 */
import http from "node:http";
import https from "node:https";
import tls from "node:tls";
import {
  type AddressLookup,
  addressRefusal,
  type DeviceNetworks,
  parseIp,
  type ResolvedAddress,
  systemLookup,
  UNLISTED,
} from "../transport/networks.ts";

/** Limits and address rules of outbound calls. */
export interface OutboundRules {
  networks?: DeviceNetworks;
  /** Resolver (tests inject a stub, so that nothing is resolved). */
  lookup?: AddressLookup;
  /** Whole call: connect, send, response read. */
  timeoutMs: number;
  /** Response bytes read at most (the rest is discarded and the socket closed). */
  maxResponseBytes: number;
  /** Extra CA certificates (PEM) trusted besides the system roots. */
  extraCa?: string[];
}

/** What one call gave: an HTTP status, or an error; always its duration. */
export interface CallResult {
  status: number | null;
  durationMs: number;
  /** The first bytes of the response body (at most 1 KiB, as text). */
  response: string | null;
  error: string | null;
  /** Seconds asked by `Retry-After` (delta-seconds or an HTTP date), when the answer carried one. */
  retryAfterSeconds: number | null;
}

/** Bytes of a response kept in the delivery log. */
export const RESPONSE_HEAD_BYTES = 1024;

/** Why `url` may not be a webhook URL (syntax and scheme), or null. Addresses are checked at each call. */
export function urlRefusal(url: string, allowHttp: boolean): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return "must be an absolute URL";
  }
  if (u.protocol !== "https:" && !(allowHttp && u.protocol === "http:")) {
    return allowHttp
      ? "must be an http:// or https:// URL"
      : "must be an https:// URL (set allowHttp for http://)";
  }
  if (u.username || u.password) return "must not carry a user name or password";
  if (u.hash) return "must not carry a fragment";
  return null;
}

/** Why a literal-address URL is refused by the address rules now (at registration), or null. */
export function literalAddressRefusal(url: string, networks: DeviceNetworks | undefined): string | null {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
  return parseIp(host) ? addressRefusal(networks ?? UNLISTED, host, null) : null;
}

/** Parse `Retry-After`: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(v: string | undefined, now = Date.now()): number | null {
  if (!v) return null;
  if (/^\d+$/.test(v.trim())) return Number(v.trim());
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : Math.max(0, Math.ceil((t - now) / 1000));
}

async function allowed(host: string, rules: OutboundRules): Promise<ResolvedAddress[]> {
  const literal = parseIp(host);
  const found: ResolvedAddress[] = literal
    ? [{ address: host, family: literal.length === 4 ? 4 : 6 }]
    : await (rules.lookup ?? systemLookup)(host);
  const refusals: string[] = [];
  const ok = found.filter((a) => {
    const why = addressRefusal(rules.networks ?? UNLISTED, a.address, literal ? null : host);
    if (why) refusals.push(why);
    return why === null;
  });
  if (!ok.length) throw new Error(refusals.length ? `refused: ${refusals.join("; ")}` : "no address");
  return ok;
}

/** POST `body` to `url` with `headers` under `rules`. Never throws. */
export async function post(
  url: string,
  headers: Record<string, string>,
  body: string,
  rules: OutboundRules,
): Promise<CallResult> {
  const t0 = performance.now();
  const done = (r: Omit<CallResult, "durationMs">): CallResult => ({
    ...r,
    durationMs: Math.round(performance.now() - t0),
  });
  const u = new URL(url);
  const host = u.hostname.replace(/^\[|\]$/g, "");
  let addresses: ResolvedAddress[];
  try {
    addresses = await allowed(host, rules);
  } catch (e) {
    return done({ status: null, response: null, error: (e as Error).message, retryAfterSeconds: null });
  }
  const mod = u.protocol === "https:" ? https : http;
  const bytes = new TextEncoder().encode(body);
  return await new Promise<CallResult>((resolve) => {
    let settled = false;
    const finish = (r: Omit<CallResult, "durationMs">) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(done(r));
    };
    const req = mod.request(u, {
      method: "POST",
      headers: { ...headers, "content-length": String(bytes.length), "user-agent": "dutlab-webhooks/1" },
      ca: rules.extraCa?.length && mod === https ? [...tls.rootCertificates, ...rules.extraCa] : undefined,
      agent: false,
      // The checked addresses, never a second resolution of the name.
      lookup: (
        _h: string,
        opts: { all?: boolean },
        cb: (err: Error | null, address: string | ResolvedAddress[], family?: number) => void,
      ) => opts.all ? cb(null, addresses) : cb(null, addresses[0]!.address, addresses[0]!.family),
    } as https.RequestOptions, (res) => {
      const chunks: Uint8Array[] = [];
      let size = 0;
      const status = res.statusCode ?? null;
      const retryAfter = parseRetryAfter(res.headers["retry-after"] as string | undefined);
      const end = () =>
        finish({
          status,
          response: new TextDecoder().decode(concat(chunks).slice(0, RESPONSE_HEAD_BYTES)),
          error: status !== null && status >= 300 && status < 400
            ? `redirect to ${res.headers.location ?? "(no location)"} not followed`
            : null,
          retryAfterSeconds: retryAfter,
        });
      res.on("data", (c: Uint8Array) => {
        if (size < rules.maxResponseBytes) chunks.push(c);
        size += c.length;
        if (size >= rules.maxResponseBytes) end();
      });
      res.on("end", end);
      res.on(
        "error",
        (e) => finish({ status, response: null, error: e.message, retryAfterSeconds: retryAfter }),
      );
    });
    const timer = setTimeout(
      () =>
        finish({
          status: null,
          response: null,
          error: `no answer within ${rules.timeoutMs} ms`,
          retryAfterSeconds: null,
        }),
      rules.timeoutMs,
    );
    req.on(
      "error",
      (e) => finish({ status: null, response: null, error: e.message, retryAfterSeconds: null }),
    );
    req.end(bytes);
  });
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}
