import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ZodError } from "zod";
import {
  ConflictError,
  type DomainError,
  InvalidInputError,
  NotFoundError,
  PreconditionFailedError,
  UnavailableError,
} from "../errors.ts";
import { logger } from "../util/log.ts";
import { isDatabaseUnavailable } from "../db/open.ts";

/** Seconds a client should wait before retrying after a 503 (the database is restarting or unreachable). */
export const RETRY_AFTER_SECONDS = 5;

/** RFC 9457 problem details as dutlab sends them. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  /** For validation problems: each offending field and what is wrong with it. */
  errors?: Array<{ field: string; message: string }>;
  [extra: string]: unknown;
}

/** Stable problem type URI for a slug, e.g. `urn:dutlab:problem:validation`. */
export const problemType = (slug: string) => `urn:dutlab:problem:${slug}`;

export function problemResponse(c: Context, p: Problem): Response {
  return c.body(JSON.stringify(p), p.status as 400, { "content-type": "application/problem+json" });
}

/** Turn zod issues into `{field, message}` entries (field is the dotted path, `body` for the root). */
export function zodFieldErrors(err: ZodError, where = ""): Array<{ field: string; message: string }> {
  return err.issues.map((i) => ({
    field: [where, ...i.path.map(String)].filter(Boolean).join(".") || "body",
    message: i.message,
  }));
}

export function validationProblem(c: Context, errors: Array<{ field: string; message: string }>): Response {
  return problemResponse(c, {
    type: problemType("validation"),
    title: "Request validation failed",
    status: 400,
    detail: errors.map((e) => `"${e.field}": ${e.message}`).join("; "),
    instance: c.req.path,
    errors,
  });
}

const log = logger("http");

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

/**
 * The one place where domain errors become HTTP: `NotFoundError` → 404 `not-found`, `ConflictError` → 409
 * `conflict`, `UnavailableError` → 503 `<service>-unavailable`, `InvalidInputError` → 400 `validation` (422 `unprocessable` when the input is well-formed but
 * not actionable), each with the error's `errors` and further members. Other errors: undefined.
 */
export function domainProblem(err: unknown): HttpProblem | undefined {
  const members = (e: DomainError) => ({ ...(e.errors ? { errors: e.errors } : {}), ...e.extra });
  if (err instanceof NotFoundError) {
    return new HttpProblem(404, "not-found", "Not found", err.message, members(err));
  }
  if (err instanceof UnavailableError) {
    return new HttpProblem(503, `${err.service}-unavailable`, err.title, err.message, members(err));
  }
  if (err instanceof ConflictError) {
    return new HttpProblem(409, "conflict", "Conflict", err.message, members(err));
  }
  if (err instanceof PreconditionFailedError) {
    return new HttpProblem(412, "precondition-failed", "Precondition failed", err.message, members(err));
  }
  if (err instanceof InvalidInputError) {
    return err.unprocessable
      ? new HttpProblem(422, "unprocessable", "Unprocessable request", err.message, members(err))
      : new HttpProblem(400, "validation", "Request validation failed", err.message, members(err));
  }
  return undefined;
}

/** The one error handler: every error becomes application/problem+json; bad input never yields a 500. */
export function onError(err: Error, c: Context): Response {
  err = domainProblem(err) ?? err;
  if (err instanceof HttpProblem) {
    // A problem that says when to come back (a PDF render past its bounds) says it in the header too.
    const retry = err.extra?.retryAfterSeconds;
    if (typeof retry === "number") c.header("Retry-After", String(retry));
    return problemResponse(c, {
      type: problemType(err.slug),
      title: err.title,
      status: err.status,
      ...(err.detail ? { detail: err.detail } : {}),
      instance: c.req.path,
      ...err.extra,
    });
  }
  if (err instanceof HTTPException) {
    const status = err.status;
    const malformed = status === 400 && /json/i.test(err.message);
    return problemResponse(c, {
      type: problemType(malformed ? "malformed-json" : status === 413 ? "payload-too-large" : "http"),
      title: malformed ? "Malformed JSON in request body" : err.message || "Request failed",
      status,
      detail: malformed ? "The request body is not valid JSON" : err.message,
      instance: c.req.path,
    });
  }
  if (err instanceof SyntaxError) {
    return problemResponse(c, {
      type: problemType("malformed-json"),
      title: "Malformed JSON in request body",
      status: 400,
      detail: "The request body is not valid JSON",
      instance: c.req.path,
    });
  }
  if (isDatabaseUnavailable(err)) {
    log.warn("Database unavailable on {method} {path}: {error}", {
      method: c.req.method,
      path: c.req.path,
      error: err.message,
    });
    c.header("Retry-After", String(RETRY_AFTER_SECONDS));
    return problemResponse(c, {
      type: problemType("unavailable"),
      title: "Service unavailable",
      status: 503,
      detail: "The database is unreachable or dropped the connection; retry later",
      instance: c.req.path,
    });
  }
  log.error("Unhandled error on {method} {path}: {error}", {
    method: c.req.method,
    path: c.req.path,
    error: err.stack ?? String(err),
  });
  return problemResponse(c, {
    type: problemType("internal"),
    title: "Internal server error",
    status: 500,
    instance: c.req.path,
  });
}

export function notFound(c: Context): Response {
  return problemResponse(c, {
    type: problemType("not-found"),
    title: "Not found",
    status: 404,
    detail: `No route for ${c.req.method} ${c.req.path}`,
    instance: c.req.path,
  });
}

/** Shorthands for throwing problems from handlers. */
export const problems = {
  notFound: (what: string) => new HttpProblem(404, "not-found", "Not found", what),
  conflict: (detail: string, extra?: Record<string, unknown>) =>
    new HttpProblem(409, "conflict", "Conflict", detail, extra),
  unprocessable: (detail: string, errors?: Array<{ field: string; message: string }>) =>
    new HttpProblem(422, "unprocessable", "Unprocessable request", detail, errors ? { errors } : {}),
  badRequest: (field: string, message: string) =>
    new HttpProblem(400, "validation", "Request validation failed", `"${field}": ${message}`, {
      errors: [{ field, message }],
    }),
  forbidden: (detail: string) => new HttpProblem(403, "forbidden", "Forbidden", detail),
};
