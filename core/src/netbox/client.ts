/**
 * A NetBox REST API client (issue 50, docs/netbox.md): the token schemes of current NetBox releases, every
 * page of a list followed to its end with the token re-sent on each, TLS verified (optionally against a CA
 * file), a timeout per request, 429 answered by waiting `Retry-After`, and errors that name the NetBox object.
 *
 * It lives in the service (`core/src/netbox/`), not in the command-line client: `dutlab lab from-netbox`
 * calls `POST /api/admin/dut/lab/from-netbox`, so a dashboard gets the same import through the API, and the
 * CLI keeps talking HTTP only (tools/boundaries.ts).
 *
 * Tokens (NetBox docs "REST API > Authentication"): a v2 token (NetBox 4.5+, the default there) is sent as
 * `Authorization: Bearer nbt_<key>.<token>`; a legacy v1 token (40 hexadecimal characters, deprecated in 4.6,
 * removed in 5.0) as `Authorization: Token <token>`. The token never appears in an error, a log or an answer.
 *
 * @module
 */
import { addressRefusal, parseIp, systemLookup, UNLISTED } from "../transport/networks.ts";

/**
 * Why the service must not connect to NetBox's URL, or null: its host (or an address it resolves to) is
 * unspecified, link-local or a cloud metadata address (the device transport's always-guarded ranges).
 */
export async function guardedAddress(url: string): Promise<string | null> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
  const addresses = parseIp(host)
    ? [host]
    : await systemLookup(host).then((a) => a.map((x) => x.address), () => []);
  for (const a of addresses) {
    const why = addressRefusal(UNLISTED, a, parseIp(host) ? null : host);
    if (why) return `NetBox's URL: ${why}`;
  }
  return null;
}

/** A NetBox answer that stops an import or a write-back; `object` names the NetBox object or list. */
export class NetBoxError extends Error {
  constructor(
    message: string,
    readonly object: string,
    readonly status: number | null,
    /** Whether trying again later may succeed (a timeout, a 5xx, a 429 past the retries). */
    readonly retryable: boolean,
    /** NetBox's `Retry-After` of the answer (a 429 or 503), in milliseconds, when it gave one. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = "NetBoxError";
  }
}

/** A v2 token as NetBox 4.5+ shows it at creation (`nbt_<key>.<token>`). */
export const V2_TOKEN = /^nbt_[A-Za-z0-9]+\.[A-Za-z0-9]+$/;
/** A legacy v1 token: 40 hexadecimal characters. */
export const V1_TOKEN = /^[0-9a-fA-F]{40}$/;

/** The `Authorization` header value of a token: `Bearer nbt_…` (v2) or `Token …` (v1). */
export function authorization(token: string): string {
  const t = token.replace(/^(Bearer|Token)\s+/, "").trim();
  if (V2_TOKEN.test(t)) return `Bearer ${t}`;
  if (V1_TOKEN.test(t)) return `Token ${t}`;
  throw new NetBoxError(
    "The NetBox token is neither a v2 token (nbt_<key>.<token>, NetBox 4.5+) nor a v1 token (40 hex characters)",
    "token",
    null,
    false,
  );
}

export interface NetBoxOptions {
  /** NetBox's base URL (`https://netbox.example.com`, or with a path prefix); `/api/…` is appended. */
  url: string;
  token: string;
  /** PEM certificates to trust instead of the system store (the content of a CA file). */
  caPem?: string;
  /** Milliseconds per request (default 30 000). */
  timeoutMs?: number;
  /** Retries of a 429 or a 502/503/504 (default 3), waiting `Retry-After` (capped at `maxRetryAfterMs`). */
  retries?: number;
  maxRetryAfterMs?: number;
  /** At most this many pages of one list (default 1 000): an endless `next` chain stops here. */
  maxPages?: number;
  /** The page size asked for (`limit`, default 1 000; NetBox caps it at its MAX_PAGE_SIZE). */
  pageSize?: number;
  /** For tests: the fetch to use. */
  fetch?: typeof fetch;
}

/** A list read to its end: the objects and the raw bodies' SHA-256 (one per page, in order). */
export interface ListResult<T> {
  results: T[];
  pages: number;
  bodies: Uint8Array[];
}

/** A `Retry-After` header (seconds, or an HTTP date) in milliseconds from now, or null when absent or unreadable. */
export function retryAfterMs(header: string | null): number | null {
  if (header === null) return null;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const date = Date.parse(header) - Date.now();
  return Number.isFinite(date) ? Math.max(0, date) : null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class NetBoxClient {
  readonly base: URL;
  readonly #auth: string;
  readonly #fetch: typeof fetch;
  readonly #client: Deno.HttpClient | null;
  readonly #o: Required<Omit<NetBoxOptions, "caPem" | "fetch" | "token" | "url">>;

  constructor(o: NetBoxOptions) {
    let base: URL;
    try {
      base = new URL(o.url.replace(/\/+$/, "") + "/");
    } catch {
      throw new NetBoxError(`The NetBox URL "${o.url}" is not a URL`, "url", null, false);
    }
    if (base.protocol !== "https:" && base.protocol !== "http:") {
      throw new NetBoxError(`The NetBox URL must be http(s)://, not ${base.protocol}`, "url", null, false);
    }
    if (base.username || base.password) {
      throw new NetBoxError("The NetBox URL must not carry a user or password", "url", null, false);
    }
    this.base = base;
    this.#auth = authorization(o.token);
    try {
      this.#client = o.caPem ? Deno.createHttpClient({ caCerts: [o.caPem] }) : null;
    } catch {
      throw new NetBoxError("holds no certificate that can be loaded (PEM)", "caPem", null, false);
    }
    this.#fetch = o.fetch ?? fetch;
    this.#o = {
      timeoutMs: o.timeoutMs ?? 30_000,
      retries: o.retries ?? 3,
      maxRetryAfterMs: o.maxRetryAfterMs ?? 60_000,
      maxPages: o.maxPages ?? 1_000,
      pageSize: o.pageSize ?? 1_000,
    };
  }

  close(): void {
    this.#client?.close();
  }

  /** The absolute URL of an API path (`api/dcim/devices/`) with a query. */
  url(path: string, query: Array<[string, string]> = []): URL {
    const u = new URL(path.replace(/^\/+/, ""), this.base);
    for (const [k, v] of query) u.searchParams.append(k, v);
    return u;
  }

  /** One request, retried on 429/502/503/504; the answer's bytes and parsed JSON. */
  async request(
    method: "GET" | "POST",
    url: URL,
    object: string,
    body?: unknown,
  ): Promise<{ status: number; bytes: Uint8Array; json: unknown }> {
    // The token goes only to NetBox's own origin: a `next` link elsewhere is refused, never followed.
    if (url.origin !== this.base.origin) {
      throw new NetBoxError(
        `NetBox's answer for ${object} links to ${url.origin}, not ${this.base.origin}: not followed ` +
          "(the token is sent only to the configured NetBox)",
        object,
        null,
        false,
      );
    }
    for (let attempt = 0;; attempt++) {
      let res: Response;
      try {
        res = await this.#fetch(url, {
          method,
          headers: {
            authorization: this.#auth,
            accept: "application/json",
            ...(body !== undefined ? { "content-type": "application/json" } : {}),
          },
          body: body !== undefined ? JSON.stringify(body) : undefined,
          signal: AbortSignal.timeout(this.#o.timeoutMs),
          ...(this.#client ? { client: this.#client } : {}),
        } as RequestInit);
      } catch (e) {
        const timeout = e instanceof DOMException && e.name === "TimeoutError";
        throw new NetBoxError(
          timeout
            ? `NetBox did not answer ${method} ${url.pathname} (${object}) within ${this.#o.timeoutMs} ms`
            : `NetBox could not be reached for ${object}: ${(e as Error).message}`,
          object,
          null,
          true,
        );
      }
      const bytes = new Uint8Array(await res.arrayBuffer());
      if ([429, 502, 503, 504].includes(res.status) && attempt < this.#o.retries) {
        await sleep(this.#retryAfter(res.headers.get("retry-after"), attempt));
        continue;
      }
      if (!res.ok) {
        throw this.#statusError(res.status, method, url, object, bytes, res.headers.get("retry-after"));
      }
      let json: unknown;
      try {
        json = JSON.parse(new TextDecoder().decode(bytes));
      } catch {
        throw new NetBoxError(
          `NetBox's answer for ${object} (${method} ${url.pathname}${url.search}) is not JSON ` +
            `(content-type ${res.headers.get("content-type") ?? "none"})`,
          object,
          res.status,
          false,
        );
      }
      return { status: res.status, bytes, json };
    }
  }

  #retryAfter(header: string | null, attempt: number): number {
    const wait = retryAfterMs(header) ?? 250 * 2 ** attempt;
    return Math.max(0, Math.min(wait, this.#o.maxRetryAfterMs));
  }

  #statusError(
    status: number,
    method: string,
    url: URL,
    object: string,
    bytes: Uint8Array,
    retryAfter: string | null,
  ) {
    // NetBox's own reason ({"detail": "..."}), never the request's headers.
    let detail = "";
    try {
      const d = (JSON.parse(new TextDecoder().decode(bytes)) as { detail?: unknown }).detail;
      if (typeof d === "string") detail = `: ${d.slice(0, 300)}`;
    } catch { /* not JSON */ }
    const what = `${method} ${url.pathname}`;
    const text = status === 401
      ? `NetBox refused the token (401) for ${object} (${what})${detail}: check NETBOX_TOKEN and its version ` +
        "(v2 nbt_… needs NetBox 4.5+)"
      : status === 403
      ? `NetBox's token may not ${method === "GET" ? "read" : "write"} ${object} (403, ${what})${detail}: ` +
        "grant the permission to the token's user"
      : status === 404
      ? `NetBox has no ${object} (404, ${what})${detail}`
      : status === 429
      ? `NetBox kept answering 429 Too Many Requests for ${object} after ${this.#o.retries} retries`
      : `NetBox answered ${status} for ${object} (${what})${detail}`;
    return new NetBoxError(text, object, status, status === 429 || status >= 500, retryAfterMs(retryAfter));
  }

  /** `GET` one object (e.g. `api/status/`). */
  async get<T>(path: string, object: string): Promise<{ value: T; bytes: Uint8Array }> {
    const r = await this.request("GET", this.url(path), object);
    return { value: r.json as T, bytes: r.bytes };
  }

  /**
   * A paginated list read to its end: follows `next` while it is set, re-sending the token, refusing a page
   * that repeats (the same `next` twice, or objects already seen) and a chain longer than `maxPages`.
   */
  async list<T extends { id?: unknown }>(
    path: string,
    query: Array<[string, string]>,
    object: string,
  ): Promise<ListResult<T>> {
    let url: URL | null = this.url(path, [...query, ["limit", String(this.#o.pageSize)]]);
    const seenUrls = new Set<string>();
    const seenIds = new Set<unknown>();
    const results: T[] = [];
    const bodies: Uint8Array[] = [];
    let count: number | null = null;
    while (url !== null) {
      if (seenUrls.has(url.href)) {
        throw new NetBoxError(
          `NetBox's ${object} pages loop: ${url.pathname}${url.search} came twice`,
          object,
          null,
          false,
        );
      }
      if (seenUrls.size >= this.#o.maxPages) {
        throw new NetBoxError(
          `NetBox's ${object} list has more than ${this.#o.maxPages} pages (an endless next chain?): stopped`,
          object,
          null,
          false,
        );
      }
      seenUrls.add(url.href);
      const r = await this.request("GET", url, object);
      const page = r.json as { count?: unknown; next?: unknown; results?: unknown };
      if (page === null || typeof page !== "object" || !Array.isArray(page.results)) {
        throw new NetBoxError(
          `NetBox's answer for ${object} is not a list page (no results array)`,
          object,
          r.status,
          false,
        );
      }
      if (typeof page.count === "number") count ??= page.count;
      for (const o of page.results as T[]) {
        const id = (o as { id?: unknown })?.id;
        if (seenIds.has(id)) {
          throw new NetBoxError(
            `NetBox's ${object} page ${bodies.length + 1} repeats object id ${
              String(id)
            }: the list changed ` +
              "while it was read, or its pages repeat; nothing imported",
            `${object} id ${String(id)}`,
            null,
            true,
          );
        }
        seenIds.add(id);
        results.push(o);
      }
      bodies.push(r.bytes);
      if (page.next === null || page.next === undefined) url = null;
      else if (typeof page.next === "string") {
        try {
          url = new URL(page.next, this.base);
        } catch {
          throw new NetBoxError(`NetBox's ${object} next link is not a URL`, object, r.status, false);
        }
      } else throw new NetBoxError(`NetBox's ${object} next link is not a string`, object, r.status, false);
    }
    if (count !== null && count !== results.length) {
      throw new NetBoxError(
        `NetBox said ${count} ${object} but its pages held ${results.length}: the list changed while it was ` +
          "read; nothing imported (sync again)",
        object,
        null,
        true,
      );
    }
    return { results, pages: bodies.length, bodies };
  }
}
