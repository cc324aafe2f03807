import { z } from "@hono/zod-openapi";
import { POLL_STATUSES } from "../errors.ts";
import { NOT_BLANK } from "./text.ts";
import { MAX_TAGS, TAG_PATTERN } from "./tags.ts";
import { fromRegistry } from "./registry_enum.ts";

/**
 * A device role. Which roles are accepted comes from the enabled adapters' `deviceRoles`
 * (docs/devices.md); the device service checks it (400 naming `deviceRole`).
 */
const deviceRole = z.string().trim().min(1, "must not be empty").max(100).openapi({
  pattern: NOT_BLANK,
  description: "One of the enabled adapters' device roles (e.g. ngfw, switch, bmc); " +
    "default: the vendor's first role",
});

const hostname = z.string().trim().min(1, "must not be empty").max(253, "must be at most 253 characters")
  .regex(
    /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/,
    "must be a host name (letters, digits, dots, dashes, underscores)",
  );
const baseUrl = z.string().trim().max(2048).refine((v) => {
  try {
    const u = new URL(v);
    return u.protocol === "https:" && !!u.hostname && !u.username && !u.password;
  } catch {
    return false;
  }
}, "must be an https:// URL without embedded credentials").openapi({
  format: "uri",
  // The origin alone (devices/base_url.ts): scheme, host (an IPv6 literal in brackets), an optional port
  // other than 0, an optional trailing slash; no path, query, fragment or user information.
  pattern: String.raw`^[Hh][Tt][Tt][Pp][Ss]://(\[[0-9A-Fa-f:.]+\]|[^/?#\s@:\[\]]+)(:0*[1-9][0-9]{0,4})?/?$`,
  description:
    "The device's management origin, `https://host[:port]`, stored normalised (lower-case scheme " +
    "and host, no default port, no trailing slash). Also refused, beyond the pattern: an IPv4 address not " +
    "written as four dotted numbers (`https://2130706433`), a port above 65535, a literal address outside " +
    "`DUT_DEVICE_NETWORKS` or link-local/metadata (docs/security.md), and a path unless the vendor's adapter " +
    "declares `baseUrlPath` (none today).",
});
const tag = z.string().regex(TAG_PATTERN, "must be 1-64 characters of letters, digits, '.', '_', ':' or '-'")
  .openapi({ pattern: TAG_PATTERN.source, example: "site:lab1" });
/**
 * A device's tags as sent: duplicates are folded (each tag kept once) and the set is stored sorted; more than
 * 32 distinct tags is a 400.
 */
const tags = z.array(tag).transform((t) => [...new Set(t)].sort()).pipe(
  z.array(z.string()).max(MAX_TAGS, `must hold at most ${MAX_TAGS} distinct tags`),
).openapi({
  type: "array",
  items: { type: "string", pattern: TAG_PATTERN.source },
  description:
    `Tags (each 1-64 characters of [A-Za-z0-9._:-], case-sensitive; at most ${MAX_TAGS} distinct). ` +
    "Duplicates are folded and the set is stored sorted. On PATCH the list replaces the device's tags " +
    "(`[]` clears them).",
});
const tlsVerifyMode = z.enum(["strict", "self-signed", "insecure"]);
const pollInterval = z.number({ message: "must be a whole number of seconds" }).int("must be a whole number")
  .min(30, "must be at least 30").max(86_400, "must be at most 86400");

/**
 * The field schemas of a device as the API takes them, reused by the lab file (core/src/lab/file.ts) so a
 * lab file and a request to the device API accept exactly the same values.
 */
export const DEVICE_FIELDS = { hostname, deviceRole, baseUrl, tags, tlsVerifyMode, pollInterval } as const;

/** Vendor conventions of the device user name (docs/devices.md). */
const USERNAME_DESCRIPTION =
  'The device user name. Two vendors read a reserved name as "the password field ' +
  'holds a key": `apitoken` for `vendor-b-ngfw` (the password is a REST API token, sent as a bearer token; ' +
  "no login session) and `apikey` for `vendor-c-ngfw` (the password is a PAN-OS XML API key, sent in " +
  "`X-PAN-KEY`; no `type=keygen`). Any other name is an admin account the adapter logs in with.";

export const DeviceCreate = z.object({
  hostname,
  vendor: z.string().trim().min(1, "must not be empty").openapi({
    ...fromRegistry("vendors"),
    description: "A vendor key of the vendor list; one without an adapter (`available: false`) is a 422",
  }),
  deviceRole: deviceRole.optional().openapi(fromRegistry("deviceRoles")),
  baseUrl,
  username: z.string().min(1, "must not be empty").max(256).openapi({ description: USERNAME_DESCRIPTION }),
  password: z.string().min(1, "must not be empty").max(8192).openapi({ format: "password", writeOnly: true }),
  tlsVerifyMode: tlsVerifyMode.default("strict"),
  pollIntervalSeconds: pollInterval.default(300),
  notes: z.string().max(10_000).nullable().optional(),
  enabled: z.boolean().default(true),
  tags: tags.default([]),
}).strict().openapi("DeviceCreate");

export const DevicePatch = z.object({
  hostname: hostname.optional(),
  deviceRole: deviceRole.optional().openapi(fromRegistry("deviceRoles")),
  baseUrl: baseUrl.optional(),
  username: z.string().min(1, "must not be empty").max(256).optional(),
  password: z.string().min(1, "must not be empty").max(8192).optional().openapi({
    format: "password",
    writeOnly: true,
  }),
  tlsVerifyMode: tlsVerifyMode.optional(),
  pollIntervalSeconds: pollInterval.optional(),
  notes: z.string().max(10_000).nullable().optional(),
  enabled: z.boolean().optional(),
  tags: tags.optional(),
  pinnedCertSha256: z.null({ message: "can only be set to null (to clear the pin)" }).optional(),
}).strict().refine((v) => Object.keys(v).length > 0, "must contain at least one field").openapi(
  "DevicePatch",
);

export const Device = z.object({
  id: z.uuid(),
  hostname: z.string(),
  vendor: z.string(),
  deviceRole: z.string().nullable(),
  baseUrl: z.string(),
  username: z.string(),
  tlsVerifyMode,
  tlsWarning: z.string().nullable().openapi({
    description: "Set when TLS verification is disabled (insecure)",
  }),
  pollIntervalSeconds: z.number().int(),
  notes: z.string().nullable(),
  enabled: z.boolean(),
  lastPollAt: z.string().nullable().openapi({ format: "date-time" }),
  lastPollStatus: z.enum(POLL_STATUSES).nullable(),
  lastPollError: z.string().nullable(),
  pinnedCertSha256: z.string().nullable(),
  tags: z.array(z.string()).openapi({ description: "The device's tags, sorted (docs/devices.md)" }),
  createdAt: z.string().openapi({ format: "date-time" }),
  updatedAt: z.string().openapi({ format: "date-time" }),
  managedBy: z.string().nullable().openapi({
    description:
      "The lab file (its `metadata.name`) that manages the device; null when no lab does (docs/lab-as-code.md)",
  }),
  reservation: z.object({
    reservationId: z.string(),
    holder: z.string(),
    testbed: z.string().nullable(),
    until: z.string().openapi({ format: "date-time", description: "The end of the lease unless renewed" }),
  }).nullable().optional().openapi({
    description: "The reservation holding the device (docs/reservations.md); null when none (list and get)",
  }),
}).openapi("Device");

export const VendorEntry = z.object({
  key: z.string(),
  displayName: z.string(),
  available: z.boolean(),
  version: z.string().nullable(),
}).openapi("VendorEntry");

export const DeviceList = z.object({
  devices: z.array(Device),
  vendors: z.array(VendorEntry),
  nextCursor: z.string().nullable().optional().openapi({
    description:
      "Only in a paged answer (`limit` or `cursor` given): the cursor of the next page, null on the last",
  }),
}).openapi("DeviceList");
export const Registered = z.object({ ok: z.boolean(), deviceId: z.uuid() }).openapi("DeviceRegistered");
export const Ok = z.object({ ok: z.boolean() }).openapi("Ok");
export const TestConnection = z.object({ ok: z.boolean(), detail: z.string(), latencyMs: z.number().int() })
  .openapi("TestConnectionResult");
export const SnapshotResult = z.object({
  ok: z.boolean(),
  lastPollStatus: z.enum(POLL_STATUSES),
  lastPollError: z.string(),
  lastPollAt: z.string().openapi({ format: "date-time" }),
}).openapi("ManualSnapshotResult");

export const IdParam = z.object({
  id: z.string().openapi({
    param: { name: "id", in: "path" },
    description: "Device id (UUID)",
    format: "uuid",
  }),
});

export const Snapshot = z.object({
  id: z.string(),
  deviceId: z.uuid(),
  endpointLabel: z.string(),
  payloadJson: z.unknown().optional().openapi({
    description: "The payload, as JSON; absent only from a listing asked with `payload=omit`",
  }),
  payloadSha256: z.string(),
  collectedAt: z.string().openapi({ format: "date-time" }),
  testRunExecutionId: z.uuid().nullable(),
  adapterModule: z.string(),
  adapterVersion: z.string(),
}).openapi("Snapshot");

export const SnapshotQuery = z.object({
  deviceId: z.uuid("must be a UUID").optional(),
  endpointLabel: z.string().min(1).max(100).regex(
    /^[a-z][a-z0-9_]*$/,
    "must be a snapshot label like ntp_config",
  )
    .optional(),
  testRunExecutionId: z.uuid("must be a UUID").optional(),
  limit: z.string().regex(/^\d+$/, "must be a whole number from 1 to 1000").transform(Number)
    .pipe(z.number().int().min(1, "must be from 1 to 1000").max(1000, "must be from 1 to 1000")).optional()
    .openapi({ type: "integer", minimum: 1, maximum: 1000, default: 100 }),
  cursor: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "must be a cursor returned by a previous page")
    .optional(),
  payload: z.enum(["include", "omit"], "must be include or omit").optional().openapi({
    default: "include",
    description: "`omit`: the snapshots come without `payloadJson` (everything else, order and cursor as " +
      "with `include`), for a dashboard that shows which snapshots exist and reads a payload by id when needed",
  }),
}).strict();

/** A snapshot id in a path: digits (an id the store never made answers 404). */
export const SnapshotIdParam = z.object({
  id: z.string().openapi({
    param: { name: "id", in: "path" },
    description: "Snapshot id (digits)",
    pattern: "^\\d{1,19}$",
  }),
});

export const SnapshotPage = z.object({ snapshots: z.array(Snapshot), nextCursor: z.string().nullable() })
  .openapi("SnapshotPage");

export const ProblemSchema = z.object({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  detail: z.string().optional(),
  instance: z.string().optional(),
  errors: z.array(z.object({ field: z.string(), message: z.string() })).optional(),
}).openapi("Problem");

// Test runs and pre-flight (routes_runs.ts), snapshot pruning: in their own files, exported from here too.
export { MAX_TAGS, TAG_PATTERN } from "./tags.ts";
export * from "./schemas_runs.ts";
export * from "./schemas_prune.ts";
