/** A request to the device, relative to the device's `baseUrl`. */
export interface DeviceRequest {
  method?: string;
  /** Path with optional query string, e.g. `/api/mo/sys.json?rsp-subtree=full`. A same-origin absolute URL is accepted. */
  path: string;
  headers?: Record<string, string>;
  /** Sent as `application/json`. */
  json?: unknown;
  /** Sent as `application/x-www-form-urlencoded`. */
  form?: Record<string, string>;
  /** Raw body. */
  body?: string;
  /** Per-request total time limit; defaults to the transport's. */
  timeoutMs?: number;
}

/** A buffered device response. HTTP error statuses are values, not exceptions. */
export interface DeviceResponse {
  status: number;
  headers: Headers;
  /** Raw `Set-Cookie` header values. */
  setCookies: string[];
  text: string;
  /** Parse the body as JSON; throws `DeviceError("protocol_error")` on bad JSON or excessive depth. */
  json<T = unknown>(): T;
  method: string;
  path: string;
}

/** HTTPS to one device, with its TLS mode, certificate pin, timeouts, size limits and a cookie jar. */
export interface DeviceHttp {
  request(req: DeviceRequest): Promise<DeviceResponse>;
  /** Cookies set by the device during this session; sent back on every request. */
  readonly cookies: Map<string, string>;
}
