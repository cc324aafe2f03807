import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Services } from "../runtime/services.ts";
import { CREDENTIAL_NAME_PATTERN, LabFile, labJsonSchema } from "../lab/file.ts";
import { labIssueField, labIssueMessage } from "../lab/messages.ts";
import { applyLab } from "../lab/apply.ts";
import { forcedNote } from "../reservations/holds.ts";
import { planLab } from "../lab/plan.ts";
import {
  conflictResponse,
  json,
  problemResponse,
  problemResponses,
  unprocessableResponse,
} from "./openapi_util.ts";
import { noteForAudit } from "./audit.ts";
import { validationProblem } from "./problem.ts";
import { SafeInput } from "./input_guard.ts";
import { logger } from "../util/log.ts";

const tags = ["Lab"];
const log = logger("lab");

const secrets = z.record(z.string(), z.string().min(1, "must not be empty").max(8192)).openapi({
  description: "The password of each credential the file names, by credential name, resolved by the client " +
    "from the file's references. Write-only: never returned, logged or stored in plaintext.",
  writeOnly: true,
  // JSON Schema 2020-12 (OpenAPI 3.1), which the generator's types do not list.
  ...{ propertyNames: { type: "string", pattern: CREDENTIAL_NAME_PATTERN.source } } as Record<
    string,
    unknown
  >,
});

const LabPlanRequest = z.object({
  lab: LabFile.openapi("LabFile", {
    description: "A lab file (docs/lab-as-code.md); its JSON Schema is GET /api/lab.schema.json",
  }),
  secrets,
  prune: z.enum(["disable", "delete"]).optional().openapi({
    description: "Remove the devices this lab manages that the file no longer lists: disable them (their " +
      "snapshots and the reports citing them stay) or delete them (409 for a device in an active run). " +
      "Without it they are only listed in `notInFile`.",
  }),
  adopt: z.boolean().optional().openapi({
    description: "Take over a device of a listed hostname that no lab manages (else a conflict)",
  }),
}).strict().openapi("LabPlanRequest");

const LabApplyRequest = LabPlanRequest.extend({
  expectedGeneration: z.number().int().min(0).openapi({
    description:
      "The lab's generation the client's plan was made on (`generation` of the plan): another one " +
      "answers 412",
  }),
  planHash: z.string().regex(/^sha256:[0-9a-f]{64}$/, "must be a plan's planHash").optional().openapi({
    description:
      "The `planHash` of the client's plan: when the registry changed since, the apply answers 412",
  }),
  force: z.boolean().optional().openapi({
    description: "Allow an empty `devices` list and a prune of more than half of the lab's devices",
  }),
  overrideReservations: z.boolean().optional().openapi({
    description: "Modify or prune devices held by a reservation anyway (admin; the reservations overridden " +
      "are recorded in the audit entry). Without it such an apply is a 409 naming each holder",
  }),
}).strict().openapi("LabApplyRequest");

const Change = z.object({ field: z.string(), old: z.unknown(), new: z.unknown() });
const PlanEntry = z.object({
  hostname: z.string(),
  action: z.enum(["create", "update", "remove", "unchanged", "conflict"]),
  deviceId: z.uuid().nullable(),
  movedFrom: z.string().nullable(),
  changes: z.array(Change),
  credential: z.enum(["set", "changed", "unchanged"]).nullable().openapi({
    description: "Whether the password differs from the stored one (compared by keyed fingerprint, never " +
      "in plaintext); never the password",
  }),
  reason: z.string().nullable(),
});
const TestbedPlanEntry = z.object({
  name: z.string(),
  action: z.enum(["create", "update", "remove", "unchanged", "conflict"]),
  changes: z.array(Change).openapi({
    description: "description, hostnames, tags, roles (and deviceIds, managedBy)",
  }),
  reason: z.string().nullable(),
});
const LabPlan = z.object({
  lab: z.string(),
  generation: z.number().int(),
  planHash: z.string(),
  prune: z.enum(["disable", "delete"]).nullable(),
  adopt: z.boolean(),
  summary: z.object({
    create: z.number().int(),
    update: z.number().int(),
    remove: z.number().int(),
    unchanged: z.number().int(),
    conflict: z.number().int(),
  }),
  devices: z.array(PlanEntry),
  testbeds: z.array(TestbedPlanEntry).openapi({
    description: "The testbeds the file declares, and the lab's testbeds it no longer declares (`remove`)",
  }),
  notInFile: z.array(z.string()),
}).openapi("LabPlan");
const LabApplied = z.object({
  ok: z.boolean(),
  changed: z.boolean(),
  generation: z.number().int().openapi({ description: "The lab's generation after the apply" }),
  plan: LabPlan,
}).openapi("LabApplied");

const body = <T>(schema: T) => ({ body: { content: { "application/json": { schema } }, required: true } });

/**
 * Validation failures of a lab request as problem+json whose fields are JSON paths into the lab file
 * (`$.devices[2].baseUrl`); the request's other members keep their names (`prune`).
 */
function labHook(result: { success: boolean; error?: z.ZodError; data?: unknown }, c: Context) {
  if (!result.success) {
    return validationProblem(
      c,
      result.error!.issues.map((i) => ({
        field: labIssueField(i),
        message: labIssueMessage(i),
      })),
    );
  }
  const safe = SafeInput.safeParse(result.data);
  if (!safe.success) {
    return validationProblem(
      c,
      safe.error.issues.map((i) => ({ field: i.path.map(String).join(".") || "body", message: i.message })),
    );
  }
}

export function labRoutes(app: OpenAPIHono, svc: Services) {
  const schemaText = JSON.stringify(labJsonSchema(), null, 2) + "\n";
  app.openapi(
    createRoute({
      method: "get",
      path: "/api/lab.schema.json",
      operationId: "getLabSchema",
      tags,
      summary: "The JSON Schema of a lab file",
      description: "JSON Schema draft 2020-12, generated from the same zod schemas as the device API " +
        "(committed as schemas/lab.schema.json). Public: it holds no data.",
      security: [],
      responses: {
        200: {
          description: "The JSON Schema",
          content: { "application/schema+json": { schema: z.object({}).passthrough() } },
        },
        413: problemResponse("Request body over DUT_BODY_LIMIT_BYTES (also on a GET)"),
      },
    }),
    (c) => c.body(schemaText, 200, { "content-type": "application/schema+json" }) as never,
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/api/admin/dut/lab/plan",
      operationId: "planLab",
      tags,
      summary: "Plan a lab file (dry run)",
      description:
        "What applying the lab file would change, one entry per device: create, update (field, old, new), " +
        "remove (with `prune`), unchanged, conflict (a listed hostname registered outside any lab, without " +
        "`adopt`, or managed by another lab). Changes nothing. A credential shows only `changed` or " +
        "`unchanged`. Errors name JSON paths into the file: 400 for the schema, then 422 for the service's " +
        "rules (vendor available, role valid, required fields, credentials named and resolved). Admin only: " +
        "the credential comparison would otherwise let a reader test passwords.",
      request: body(LabPlanRequest),
      responses: {
        200: json(LabPlan, "The plan"),
        ...problemResponses,
        ...unprocessableResponse,
      },
    }),
    async (c) => {
      const req = c.req.valid("json");
      const plan = await planLab(svc.db.kysely, svc.registry, svc.keys, req, svc.devices.networks);
      noteForAudit(c, `lab ${plan.lab} plan ${plan.planHash} (dry run, generation ${plan.generation})`);
      return c.json(plan, 200);
    },
    labHook as never,
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/api/admin/dut/lab/apply",
      operationId: "applyLab",
      tags,
      summary: "Apply a lab file in one transaction",
      description:
        "Recomputes the plan under a lock of the lab's row and writes all of it in one database transaction: " +
        "all of it or nothing (the generation included). 412 when the lab is not at `expectedGeneration` or " +
        "the plan's hash is not `planHash` (a concurrent apply, or a stale plan); 409 for conflicts and for " +
        "`prune: delete` of a device in an active run; 422 for an empty `devices` list or a prune of more than " +
        "half of the lab without `force`. Devices it writes carry `managedBy` = the lab's name. Each apply is " +
        "one audit entry with its plan hash and counts. Admin only.",
      request: body(LabApplyRequest),
      responses: {
        200: json(LabApplied, "Applied (or nothing to change)"),
        ...problemResponses,
        ...conflictResponse,
        412: problemResponse("The lab changed since the plan (its generation or the registry): plan again"),
        ...unprocessableResponse,
      },
    }),
    async (c) => {
      const { expectedGeneration, planHash, force, overrideReservations, ...req } = c.req.valid("json");
      const r = await applyLab(svc.db.kysely, svc.registry, svc.keys, req, {
        expectedGeneration,
        planHash,
        force,
        overrideReservations,
        networks: svc.devices.networks,
      });
      const s = r.plan.summary;
      const note =
        `lab ${r.plan.lab} apply ${r.plan.planHash} generation ${r.plan.generation}→${r.generation}: ` +
        `${s.create} created, ${s.update} updated, ${s.remove} removed (${r.plan.prune ?? "no prune"}), ` +
        `${s.unchanged} unchanged` +
        (r.overridden.length ? `; ${forcedNote("lab apply", r.overridden)}` : "");
      noteForAudit(c, note);
      log.info("Lab {lab} applied: {note}", { lab: r.plan.lab, note });
      for (const row of r.before) void svc.devices.releaseParked(row);
      for (const t of r.touched) await svc.events.publish("device.changed", t);
      return c.json({ ok: true, changed: r.changed, generation: r.generation, plan: r.plan }, 200);
    },
    labHook as never,
  );
}
