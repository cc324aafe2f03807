/** Poll and connection outcome classes stored as `lastPollStatus` (README: "Device statuses"). */
export const POLL_STATUSES = [
  "ok",
  "auth_failed",
  "tls_error",
  "timeout",
  "unreachable",
  "http_error",
  "protocol_error",
  "adapter_error",
  "credential_error",
] as const;
export type PollStatus = typeof POLL_STATUSES[number];
export type FailureStatus = Exclude<PollStatus, "ok">;

/**
 * A device-side failure with its classification. Adapters and the transport throw it; the poll cycle
 * records `status` as `lastPollStatus` and `message` as `lastPollError`. Messages never carry credentials.
 *
 * @example
 * ```ts
 * throw new DeviceError("auth_failed", "Login refused: HTTP 401 from /api/aaaLogin.json");
 * ```
 */
export class DeviceError extends Error {
  override name = "DeviceError";
  constructor(readonly status: FailureStatus, message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Coded start-up error: bad configuration, bad module, database in use. */
export class StartupError extends Error {
  override name = "StartupError";
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

/** An error that maps to an RFC 9457 problem response. */
export class HttpProblem extends Error {
  override name = "HttpProblem";
  constructor(
    readonly status: number,
    readonly slug: string,
    readonly title: string,
    readonly detail?: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(detail ?? title);
  }
}
