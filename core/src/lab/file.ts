/**
 * The lab file (issue 35, docs/lab-as-code.md): a lab declared in YAML or JSON, `apiVersion: dutlab/v1`,
 * `kind: Lab`. The device fields reuse the device API's field schemas (`DEVICE_FIELDS`), so a lab file accepts
 * exactly what the API accepts; the published JSON Schema (`schemas/lab.schema.json`, served as
 * `GET /api/lab.schema.json`) is generated from {@link LabFile} by zod's `z.toJSONSchema`.
 *
 * A password is never in the file: each credential's `password` is a reference, `env:NAME` or
 * `file:relative/path`, which the client resolves and sends beside the file (`secrets`), never in it.
 *
 * @example
 * ```ts
 * const lab = LabFile.parse({
 *   apiVersion: "dutlab/v1",
 *   kind: "Lab",
 *   metadata: { name: "lab1" },
 *   credentials: { admin: { username: "admin", password: "env:LAB1_ADMIN_PASSWORD" } },
 *   devices: [{ hostname: "fw1", vendor: "vendor-a-ngfw", baseUrl: "https://fw1", credential: "admin" }],
 * });
 * ```
 *
 * @module
 */
import { z } from "@hono/zod-openapi";
import { NOT_BLANK } from "../api/text.ts";
import { DEVICE_FIELDS } from "../api/schemas.ts";

/** A lab's name (`metadata.name`): its ownership scope, shown as a device's `managedBy`. */
export const LAB_NAME_PATTERN = /^[a-z0-9]([a-z0-9._-]{0,62}[a-z0-9])?$/;
/** A credential's name (a key of `credentials`). */
export const CREDENTIAL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** A secret reference: `env:NAME` or `file:relative/path` (no leading `/`, no whitespace). */
export const SECRET_REF_PATTERN = /^(env:[A-Za-z_][A-Za-z0-9_]*|file:[^/\s]\S*)$/;

const SECRET_REF_MESSAGE =
  "must be a reference, env:NAME or file:relative/path (never the password itself: a lab file is kept in git)";

const httpsUrl = DEVICE_FIELDS.baseUrl.meta({
  // The refinement of the API (an https:// URL without embedded credentials) has no JSON Schema form; the
  // pattern is its part an outside validator can check.
  pattern: "^[Hh][Tt][Tt][Pp][Ss]://[^/@\\s]+(/\\S*)?$",
  description: "The management URL, https:// only",
});
const credentialName = z.string().regex(CREDENTIAL_NAME_PATTERN, "must name an entry of credentials");

/** Fields a device may take from `defaults` (every device field but its identity). */
const inheritable = {
  vendor: z.string().trim().min(1, "must not be empty").openapi({ pattern: NOT_BLANK }).meta({
    description: "A vendor key whose adapter is available (GET /api/admin/dut/devices lists them)",
  }),
  deviceRole: DEVICE_FIELDS.deviceRole,
  baseUrl: httpsUrl,
  tlsVerifyMode: DEVICE_FIELDS.tlsVerifyMode,
  pollIntervalSeconds: DEVICE_FIELDS.pollInterval,
  notes: z.string().max(10_000).nullable(),
  tags: DEVICE_FIELDS.tags,
  enabled: z.boolean(),
  credential: credentialName.meta({ description: "The name of an entry of `credentials`" }),
};

export const LabDefaults = z.object(inheritable).partial().strict().meta({
  description: "Values every device takes unless it sets its own (nothing else inherits)",
});

export const LabDevice = z.object({
  hostname: DEVICE_FIELDS.hostname,
  ...inheritable,
  movedFrom: z.array(DEVICE_FIELDS.hostname).max(16).meta({
    description: "Hostnames this device had before: a rename that keeps the device's id and history",
  }),
}).partial().required({ hostname: true }).strict();

export const LabCredential = z.object({
  username: z.string().min(1, "must not be empty").max(256),
  password: z.string().regex(SECRET_REF_PATTERN, SECRET_REF_MESSAGE).meta({
    description: "A reference to the password: env:NAME (an environment variable of the client) or " +
      "file:relative/path (relative to the lab file; refused when group- or world-readable)",
  }),
}).strict();

/** A testbed the lab declares (issue 52, docs/reservations.md): the union of its devices, tags and roles. */
export const LabTestbed = z.object({
  description: z.string().max(2000).nullable(),
  hostnames: z.array(DEVICE_FIELDS.hostname).max(1000).meta({
    description: "Devices of the registry by hostname",
  }),
  tags: z.array(z.string().trim().min(1).max(100)).max(100).meta({
    description: "Every device with one of these tags",
  }),
  roles: z.array(z.string().trim().min(1).max(100)).max(100).meta({
    description: "Every device of one of these roles",
  }),
}).partial().strict();

/** A testbed's name: letters, digits, dots, dashes, underscores. */
export const TESTBED_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

export const LabFile = z.object({
  apiVersion: z.literal("dutlab/v1"),
  kind: z.literal("Lab"),
  metadata: z.object({
    name: z.string().regex(LAB_NAME_PATTERN, "must be 1-64 characters of a-z, 0-9, '.', '_' or '-'")
      .meta({ description: "The lab's name: the scope of what it owns (a device's managedBy)" }),
  }).strict(),
  defaults: LabDefaults.optional(),
  credentials: z.record(
    z.string().regex(
      CREDENTIAL_NAME_PATTERN,
      "must be 1-64 characters of A-Z, a-z, 0-9, '.', '_' or '-', starting with a letter or digit",
    ),
    LabCredential,
  ).openapi({
    // The key schema in the OpenAPI document too (z.toJSONSchema writes it by itself).
    ...{ propertyNames: { type: "string", pattern: CREDENTIAL_NAME_PATTERN.source } } as Record<
      string,
      unknown
    >,
  }).optional(),
  devices: z.array(LabDevice).max(10_000),
  testbeds: z.record(
    z.string().regex(TESTBED_NAME_PATTERN, "must be 1-100 characters of A-Z, a-z, 0-9, '.', '_' or '-'"),
    LabTestbed,
  ).openapi({
    ...{ propertyNames: { type: "string", pattern: TESTBED_NAME_PATTERN.source } } as Record<string, unknown>,
    description: "Named sets of devices a run or a reservation takes (docs/reservations.md); an apply " +
      "creates, replaces and removes the lab's own testbeds",
  }).optional(),
}).strict().meta({
  $id: "urn:dutlab:lab-file:v1",
  title: "dutlab lab file",
  description: "A lab declared as code (docs/lab-as-code.md): dutlab lab validate|diff|apply|export",
});
export type LabFile = z.infer<typeof LabFile>;
export type LabDevice = z.infer<typeof LabDevice>;

/** The JSON Schema (draft 2020-12) of a lab file, generated from {@link LabFile}. */
export function labJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(LabFile, { target: "draft-2020-12", io: "input", unrepresentable: "any" }) as Record<
    string,
    unknown
  >;
}

/** The committed copy of the JSON Schema, as `deno task lab:schema` writes it. */
export const LAB_SCHEMA_URL = new URL("../../../schemas/lab.schema.json", import.meta.url);

/** The JSON Schema as the committed file holds it (two-space JSON and a final newline). */
export const labJsonSchemaText = (): string => JSON.stringify(labJsonSchema(), null, 2) + "\n";

/** A zod issue path as a JSON path: `$.devices[2].baseUrl`. */
export function jsonPath(path: ReadonlyArray<PropertyKey>): string {
  return "$" +
    path.map((p) =>
      typeof p === "number"
        ? `[${p}]`
        : /^[A-Za-z_][A-Za-z0-9_]*$/.test(String(p))
        ? `.${String(p)}`
        : `[${JSON.stringify(String(p))}]`
    ).join("");
}
