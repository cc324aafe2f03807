/** TLS verification mode of a device (spec 2.2). */
export type TlsVerifyMode = "strict" | "self-signed" | "insecure";

/** A request to the device, relative to the device's `baseUrl`. */
export interface DeviceRequest {
  /** HTTP method (case-insensitive); default `GET`. */
  method?: string;
  /** Path with optional query string, e.g. `/api/mo/sys.json?rsp-subtree=full`. A same-origin absolute URL is accepted. */
  path: string;
  /**
   * Request headers; unless given here, the transport adds the content type of a `json` or `form` body and
   * the session's cookies.
   */
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
  /** HTTP status code (error statuses included). */
  status: number;
  /** Response headers. */
  headers: Headers;
  /** Raw `Set-Cookie` header values. */
  setCookies: string[];
  /** The whole body as text (within the transport's size limit). */
  text: string;
  /** Parse the body as JSON; throws `DeviceError("protocol_error")` on bad JSON or excessive depth. */
  json<T = unknown>(): T;
  /** The request's method, upper-cased. */
  method: string;
  /** The request's path as sent (relative to the device's `baseUrl`). */
  path: string;
}

/** HTTPS to one device, with its TLS mode, certificate pin, timeouts, size limits and a cookie jar. */
export interface DeviceHttp {
  /**
   * Send one request and buffer the response. Rejects with a `DeviceError` (`unreachable`, `timeout`,
   * `tls_error`, `protocol_error`) when no valid HTTP response arrives; an HTTP error status resolves.
   */
  request(req: DeviceRequest): Promise<DeviceResponse>;
  /** Cookies set by the device during this session; sent back on every request. */
  readonly cookies: Map<string, string>;
}
