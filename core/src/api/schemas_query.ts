import { z } from "@hono/zod-openapi";
import { POLL_STATUSES } from "../errors.ts";
import { NOT_BLANK } from "./text.ts";
import { TAG_PATTERN } from "./schemas.ts";
import { fromRegistry } from "./registry_enum.ts";

/** `limit` of a paged list: a whole number from 1 to `max`. */
export const limitParam = (max: number, description: string) =>
  z.string().regex(/^\d+$/, `must be a whole number from 1 to ${max}`).transform(Number)
    .pipe(z.number().int().min(1, `must be from 1 to ${max}`).max(max, `must be from 1 to ${max}`)).optional()
    .openapi({ type: "integer", minimum: 1, maximum: max, description });

export const cursorParam = z.string().regex(
  /^[A-Za-z0-9_-]{1,400}$/,
  "must be a cursor returned by a previous page",
)
  .optional().openapi({ description: "The `nextCursor` of the previous page" });

const bool = z.enum(["true", "false"], { message: "must be true or false" }).transform((v) => v === "true");

export const DeviceListQuery = z.object({
  limit: limitParam(
    1000,
    "Page size (1-1000). With `limit` or `cursor` the answer is one page and carries `nextCursor`; " +
      "without either, every matching device (spec 4.1 shape)",
  ),
  cursor: cursorParam,
  vendor: z.string().trim().min(1, "must not be empty").max(100).optional().openapi({
    pattern: NOT_BLANK,
    description: "Only devices of this vendor key",
  }),
  role: z.string().trim().min(1, "must not be empty").max(100).optional().openapi({
    ...fromRegistry("deviceRoles"),
    description: "Only devices with this deviceRole (one of the enabled adapters' roles)",
  }),
  enabled: bool.optional().openapi({ type: "string", enum: ["true", "false"] }),
  lastPollStatus: z.enum([...POLL_STATUSES, "never"]).optional().openapi({
    description: "Only devices whose last poll ended with this status; `never` = never polled",
  }),
  q: z.string().trim().min(1, "must not be empty").max(200).optional().openapi({
    pattern: NOT_BLANK,
    description: "Case-insensitive substring of the hostname or the notes",
  }),
  tag: z.union([z.string(), z.array(z.string())]).transform((v) => typeof v === "string" ? [v] : v).pipe(
    z.array(
      z.string().regex(
        TAG_PATTERN,
        "must be a tag: 1-64 characters of letters, digits, '.', '_', ':' or '-'",
      ),
    )
      .max(32, "must be given at most 32 times"),
  ).optional().openapi({
    type: "array",
    items: { type: "string", pattern: TAG_PATTERN.source },
    description:
      "Only devices carrying this tag; repeatable (`?tag=a&tag=b`): a device must carry every tag " +
      "given (AND). Tags are case-sensitive.",
  }),
}).strict();

export const dateTimeParam = (what: string) =>
  z.string().refine((v) => /^\d{4}-\d\d-\d\d(T[\d:.]+(Z|[+-]\d\d:\d\d))?$/.test(v) && !isNaN(Date.parse(v)), {
    message: "must be an RFC 3339 date-time such as 2026-11-23T10:00:00Z (or a date)",
  }).transform((v) => new Date(v)).optional().openapi({
    type: "string",
    format: "date-time",
    // What the refine above accepts, so the document admits no date-time the service refuses (upper-case
    // T and Z, a four-digit year); a date alone is accepted too, beyond `date-time`.
    pattern: String.raw`^\d{4}-\d\d-\d\d(T[\d:.]+(Z|[+-]\d\d:\d\d))?$`,
    description: what,
  });

export const RunListQuery = z.object({
  limit: limitParam(1000, "Page size (1-1000, default 100)"),
  cursor: cursorParam,
  status: z.enum(["active", "finished"]).optional(),
  planIdentifier: z.string().trim().min(1, "must not be empty").max(200).optional().openapi({
    pattern: NOT_BLANK,
  }),
  from: dateTimeParam("Only runs started at or after this time"),
  to: dateTimeParam("Only runs started before this time"),
}).strict();
