/** Poll and connection outcome classes stored as `lastPollStatus` (docs/devices.md "Device statuses"). */
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
/** One of {@link POLL_STATUSES}. */
export type PollStatus = typeof POLL_STATUSES[number];
/** A poll status other than `ok`: the classification a {@link DeviceError} carries. */
export type FailureStatus = Exclude<PollStatus, "ok">;

/**
 * A device-side failure with its classification. Adapters and the transport throw it; the poll cycle
 * records `status` as `lastPollStatus` and `message` as `lastPollError`. Messages never carry credentials.
 *
 * @example
 * ```ts
 * // An adapter's login, when the device refuses it (the example type-checks and is not run):
 * function login(): never {
 *   throw new DeviceError("auth_failed", "Login refused: HTTP 401 from /api/aaaLogin.json");
 * }
 * ```
 */
export class DeviceError extends Error {
  /** `"DeviceError"`: how logs and stack traces name the error. */
  override name = "DeviceError";
  /**
   * Classify a device-side failure.
   *
   * @param status The failure class, stored as the device's `lastPollStatus`.
   * @param message What failed, stored as `lastPollError`; never put credentials in it.
   * @param options `cause`: the underlying error, if any.
   */
  constructor(readonly status: FailureStatus, message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Coded start-up error: bad configuration, bad module, database in use. */
export class StartupError extends Error {
  /** `"StartupError"`: how logs and stack traces name the error. */
  override name = "StartupError";
  /**
   * A start-up error with its code.
   *
   * @param code Stable error code (e.g. `MODULE_CORE_VERSION`, `PLAN_CATALOG`), printed before the message.
   * @param message What is wrong and how to fix it.
   */
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

/** A field and what is wrong with it, as a problem's `errors` member lists it. */
export interface FieldError {
  /** The field's name or path in the request (e.g. `vendor`). */
  field: string;
  /** What is wrong with its value. */
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
  /**
   * A domain error.
   *
   * @param message What went wrong, in the domain's words (the problem's `detail`).
   * @param options `cause`; `errors`: the offending fields; `extra`: further problem members.
   */
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
  /** `"NotFoundError"`: how logs and stack traces name the error. */
  override name = "NotFoundError";
}

/** The request contradicts the current state (a taken hostname, an active run). HTTP: 409. */
export class ConflictError extends DomainError {
  /** `"ConflictError"`: how logs and stack traces name the error. */
  override name = "ConflictError";
}

/**
 * A precondition of the request does not hold any more (a lab apply made from another generation of the lab,
 * or from a plan the registry has moved away from). HTTP: 412.
 */
export class PreconditionFailedError extends DomainError {
  /** `"PreconditionFailedError"`: how logs and stack traces name the error. */
  override name = "PreconditionFailedError";
}

/**
 * Something the request needs is not available now; the caller may try later (e.g. PDF rendering without
 * Chromium, or busy). HTTP: 503 `<service>-unavailable` with `title`, and `retryAfterSeconds` when given.
 */
export class UnavailableError extends DomainError {
  /** `"UnavailableError"`: how logs and stack traces name the error. */
  override name = "UnavailableError";
  /** An unavailable `service` with the problem's `title`; `retryAfterSeconds` (when given) goes into the problem as a member. */
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
 * // A store refusing a device of an unknown vendor (the example type-checks and is not run):
 * function refuse(): never {
 *   throw new InvalidInputError(`"vendor": unknown vendor "x"`, {
 *     errors: [{ field: "vendor", message: `unknown vendor "x"` }],
 *   });
 * }
 * ```
 */
export class InvalidInputError extends DomainError {
  /** `"InvalidInputError"`: how logs and stack traces name the error. */
  override name = "InvalidInputError";
  /** True: answer 422 (well-formed and known, but not actionable) rather than 400. */
  readonly unprocessable: boolean;
  /**
   * Refuse input, naming each offending field in `options.errors`.
   *
   * @param message What is wrong, in the domain's words.
   * @param options `errors`: the offending fields; `unprocessable`: answer 422 instead of 400; `cause`.
   */
  constructor(
    message: string,
    options: { cause?: unknown; errors: FieldError[]; unprocessable?: boolean },
  ) {
    super(message, options);
    this.unprocessable = options.unprocessable ?? false;
  }
}
