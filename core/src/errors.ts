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

/** A field and what is wrong with it, as a problem's `errors` member lists it. */
export interface FieldError {
  field: string;
  message: string;
}

/**
 * An error of the domain (devices, runs): what went wrong in the domain's words, with no HTTP in it. The
 * HTTP layer maps each kind to its problem+json answer in one place (`http/problem.ts`, `onError`).
 */
export abstract class DomainError extends Error {
  /** The offending fields, when the error is about input. */
  readonly errors?: FieldError[];
  /** Further members the problem answer carries (e.g. `activeExecutionId`). */
  readonly extra: Record<string, unknown>;
  constructor(
    message: string,
    options: { cause?: unknown; errors?: FieldError[]; extra?: Record<string, unknown> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    if (options.errors) this.errors = options.errors;
    this.extra = options.extra ?? {};
  }
}

/** The thing asked for does not exist (a device, a plan, a run, a report). HTTP: 404. */
export class NotFoundError extends DomainError {
  override name = "NotFoundError";
}

/** The request contradicts the current state (a taken hostname, an active run). HTTP: 409. */
export class ConflictError extends DomainError {
  override name = "ConflictError";
}

/**
 * A precondition of the request does not hold any more (a lab apply made from another generation of the lab,
 * or from a plan the registry has moved away from). HTTP: 412.
 */
export class PreconditionFailedError extends DomainError {
  override name = "PreconditionFailedError";
}

/**
 * Something the request needs is not available now; the caller may try later (e.g. PDF rendering without
 * Chromium, or busy). HTTP: 503 `<service>-unavailable` with `title`, and `retryAfterSeconds` when given.
 */
export class UnavailableError extends DomainError {
  override name = "UnavailableError";
  constructor(
    /** The unavailable service, as the problem type names it (`pdf` → `pdf-unavailable`). */
    readonly service: string,
    /** The problem's title. */
    readonly title: string,
    message: string,
    options: { cause?: unknown; retryAfterSeconds?: number } = {},
  ) {
    super(message, {
      cause: options.cause,
      extra: options.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: options.retryAfterSeconds },
    });
  }
}

/**
 * The input names something the domain does not accept. HTTP: 400 validation problem; 422 when
 * `unprocessable` (well-formed and known, but not actionable, e.g. a vendor without an adapter).
 *
 * @example
 * ```ts
 * throw new InvalidInputError(`"vendor": unknown vendor "x"`, {
 *   errors: [{ field: "vendor", message: `unknown vendor "x"` }],
 * });
 * ```
 */
export class InvalidInputError extends DomainError {
  override name = "InvalidInputError";
  readonly unprocessable: boolean;
  constructor(
    message: string,
    options: { cause?: unknown; errors: FieldError[]; unprocessable?: boolean },
  ) {
    super(message, options);
    this.unprocessable = options.unprocessable ?? false;
  }
}
