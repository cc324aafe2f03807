/** Schemas of test runs and pre-flight (routes_runs.ts); re-exported by `schemas.ts`. */
import { z } from "@hono/zod-openapi";
import { NOT_BLANK } from "./text.ts";
import { k6Issues, k6SummaryOpenApi } from "./k6_summary.ts";
import { TAG_PATTERN } from "./tags.ts";
import { fromRegistry } from "./registry_enum.ts";

const Evidence = z.object({ snapshotId: z.string(), payloadSha256: z.string(), collectedAt: z.string() })
  .nullable();
const Selection = z.object({
  devices: z.array(z.string()).nullable(),
  checks: z.array(z.string()).nullable(),
  tags: z.array(z.string()).nullable(),
  excluded: z.object({
    pairs: z.number().int(),
    devices: z.array(z.string()).openapi({ description: "Hostnames of the devices left out" }),
    checks: z.array(z.string()),
  }).openapi({ description: "The (check, device) pairs of the whole plan that the filter left out" }),
  complete: z.boolean().openapi({ description: "True when the filter left out nothing the plan evaluates" }),
}).openapi("PreflightSelection", {
  description: "Present when the request filtered devices, checks or tags",
});
const CheckResult = z.object({
  checkId: z.string(),
  description: z.string(),
  deviceId: z.uuid(),
  deviceHostname: z.string(),
  vendor: z.string(),
  pass: z.boolean(),
  status: z.enum(["pass", "fail", "skipped", "error"]).openapi({
    description: "`error`: the check could not read the payload (a fail distinguishable from a plain fail)",
  }),
  detail: z.string(),
  evidence: Evidence,
}).openapi("CheckResult");
export const PreflightResult = z.object({
  planIdentifier: z.string(),
  ranAt: z.string(),
  checksRun: z.number().int(),
  checksPassed: z.number().int(),
  checksFailed: z.number().int(),
  checksSkipped: z.number().int(),
  pass: z.boolean().openapi({
    description: "True when every evaluated check passed and, for a filtered request, the filter left out " +
      "nothing the plan evaluates (`selection.complete`)",
  }),
  checks: z.array(CheckResult),
  summary: z.string().openapi({
    description: "One line: counts, then readiness; a filtered result says it is filtered (and, when the " +
      "filter left out devices or checks the plan requires, that it is no readiness verdict)",
  }),
  asOf: z.string().optional().openapi({
    format: "date-time",
    description: "Present when the request gave `asOf`: the lab as evaluated at that moment",
  }),
  selection: Selection.optional(),
}).openapi("PreflightResult");

export const PreflightPlan = z.object({
  planIdentifier: z.string(),
  dryRun: z.literal(true),
  ranAt: z.string(),
  asOf: z.string().optional().openapi({ format: "date-time" }),
  evaluations: z.number().int().openapi({ description: "(check, device) pairs that would be evaluated" }),
  wouldSkip: z.number().int().openapi({
    description: "Of those, the pairs without a snapshot of the check's label (they would be skipped)",
  }),
  reads: z.array(z.object({
    checkId: z.string(),
    deviceId: z.uuid(),
    deviceHostname: z.string(),
    vendor: z.string(),
    label: z.string(),
    reads: z.enum(["evidence", "related"]).openapi({
      description: "`evidence`: the check's own label (what its result cites); `related`: a further label " +
        "it reads",
    }),
    snapshot: Evidence.openapi({ description: "The snapshot it would read; null: none" }),
  })).openapi({ description: "One (device, check, label) triple per label each evaluation would read" }),
  summary: z.string(),
  selection: Selection.optional(),
}).openapi("PreflightPlan");

const PlanPhase = z.object({
  name: z.string(),
  durationS: z.number(),
  load: z.record(z.string(), z.union([z.number(), z.string()])),
});
export const Plan = z.object({
  identifier: z.string(),
  displayName: z.string(),
  description: z.string(),
  tlsDecrypt: z.enum(["on", "off"]),
  sloTargetP99Ms: z.number(),
  maxErrorRatePct: z.number().optional().openapi({
    description: "Highest acceptable share of failed requests in percent (verdict input `error-rate`)",
  }),
  deploymentMode: z.string(),
  phases: z.array(PlanPhase),
  vendors: z.array(z.string()).optional().openapi({
    description: "Optional narrowing to vendor keys: only devices of these vendors take part. Absent (the " +
      "catalog's plans since catalogVersion 8): devices are selected by `deviceRoles`, whatever their vendor, " +
      "and each check applies where the device's adapter serves it. Frozen plans of older runs keep their list",
  }),
  deviceRoles: z.array(z.string()).openapi({
    description: "Device roles taking part (`ngfw`, `switch`, `bmc`, or a role a drop-in adapter brings)",
  }),
  checks: z.array(z.string()).optional().openapi({
    description: "Opt-in checks the plan runs besides every check that applies (absent: none)",
  }),
  startGate: z.literal("preflight-pass").optional().openapi({
    description:
      "`preflight-pass`: a run of this plan starts only when its pre-flight passes (an admin may " +
      "override with a reason)",
  }),
  dependsOn: z.array(z.object({ deviceRole: z.string(), labels: z.array(z.string()) })).optional().openapi({
    description: "Per device role, the snapshot labels whose drift during a run makes the verdict input " +
      "`configuration-drift` invalid (absent: drift never affects the verdict)",
  }),
  parameters: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
}).openapi("Plan");

const StartGate = z.object({
  gated: z.boolean(),
  source: z.enum(["plan", "request"]).nullable().openapi({
    description: "`plan`: the plan's startGate; `request`: requirePreflightPass; null: ungated",
  }),
  preflightPass: z.boolean(),
  override: z.object({
    reason: z.string(),
    by: z.string().openapi({ description: "The name of the token that overrode the gate" }),
    role: z.string(),
    at: z.string().openapi({ format: "date-time" }),
  }).nullable().openapi({ description: "Set when the run was started over a failed pre-flight" }),
}).openapi("StartGate");
const Alert = z.object({
  name: z.literal("TLSDecryptModeChanged"),
  at: z.string(),
  deviceId: z.string(),
  deviceHostname: z.string(),
  from: z.enum(["on", "off"]),
  to: z.enum(["on", "off"]),
  snapshotId: z.string(),
}).openapi("TLSDecryptModeChanged");
export const TestRun = z.object({
  runId: z.string(),
  executionId: z.uuid(),
  planIdentifier: z.string(),
  planDisplayName: z.string(),
  planCatalogVersion: z.number().int(),
  planSnapshotSha256: z.string(),
  licenseId: z.string(),
  customer: z.string().nullable(),
  labName: z.string().nullable(),
  notes: z.string().nullable(),
  status: z.enum(["active", "finished"]),
  startedAt: z.string(),
  endedAt: z.string().nullable(),
  outcome: z.string().nullable(),
  preflightAtStart: z.object({
    pass: z.boolean(),
    summary: z.string(),
    checksRun: z.number().int(),
    checksPassed: z.number().int(),
    checksFailed: z.number().int(),
    checksSkipped: z.number().int(),
  }).openapi({ description: "The pre-flight result at start (in full: report annex preflight-at-start)" }),
  labAtStart: z.object({
    devices: z.array(z.object({
      id: z.string(),
      hostname: z.string(),
      vendor: z.string(),
      deviceRole: z.string().nullable(),
    })),
    inventory: z.record(
      z.string(),
      z.object({
        status: z.enum(["read", "no-snapshot", "unreadable", "not-supported"]),
        model: z.string().nullable(),
        softwareVersion: z.string().nullable(),
        serialNumber: z.string().nullable(),
        snapshotId: z.string().nullable(),
        payloadSha256: z.string().nullable(),
      }),
    ).optional().openapi({ description: "Per device id: what its adapter's inventory fact read at start" }),
    decrypt: z.record(
      z.string(),
      z.object({
        state: z.enum(["on", "off", "unknown"]),
        snapshotId: z.string().nullable(),
        ruleCount: z.number().int().nullable(),
      }),
    ).openapi({
      description: "Per firewall device id: TLS-decrypt state from its latest decrypt_policy snapshot",
    }),
    tlsDecrypt: z.enum(["on", "off", "mixed", "unknown"]).openapi({
      description: "`on`/`off` when every firewall with a known state agrees, `mixed` when they differ",
    }),
  }),
  alerts: z.array(Alert),
  reportSha256: z.string().nullable(),
  startGate: StartGate.nullable().openapi({
    description: "How the start was gated on pre-flight (null for runs started before gating existed)",
  }),
  verdict: z.object({
    value: z.enum(["pass", "fail", "invalid", "inconclusive"]),
    reasons: z.array(z.object({
      input: z.string(),
      effect: z.enum(["pass", "fail", "invalid", "inconclusive", "none"]),
      detail: z.string(),
    })),
  }).nullable().openapi({
    description: "The frozen report's verdict (null while active or in older reports)",
  }),
}).openapi("TestRun");

const planIdentifier = z.string().trim().min(1, "must not be empty").max(200).openapi({
  ...fromRegistry("plans"),
  description: "The `identifier` of a plan of the catalog (GET /api/test-runs/plans); another one is a 404",
});
const names = (what: string, item: z.ZodString) =>
  z.array(item).min(1, "must name at least one (omit it to take every one)").max(1000).openapi({
    description: what,
  });
export const PreflightRequest = z.object({
  planIdentifier,
  testbed: z.string().trim().min(1).max(100).optional().openapi({
    pattern: NOT_BLANK,
    description: "Only this testbed's devices (docs/reservations.md); with `devices`, both",
  }),
  devices: names(
    "Only these devices: ids or hostnames of enabled devices (an unknown or disabled one is a 400 naming it)",
    z.string().trim().min(1, "must not be empty").max(253).openapi({ pattern: NOT_BLANK }),
  ).optional(),
  checks: names(
    "Only these checks (check ids; an unknown one is a 400 naming it)",
    z.string().trim().min(1, "must not be empty").max(200).openapi(fromRegistry("checks")),
  ).optional(),
  tags: names(
    "Only devices carrying every one of these tags (AND; a tag no device carries is a 400 naming it)",
    z.string().regex(TAG_PATTERN, "must be a tag: 1-64 characters of letters, digits, '.', '_', ':' or '-'"),
  ).optional(),
  dryRun: z.boolean().optional().openapi({
    description:
      "True: answer which (device, check, label) triples would be evaluated and which snapshot each " +
      "would read (PreflightPlan, 200), without reading payloads or evaluating",
  }),
  asOf: z.string().refine((v) =>
    /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/.test(v) &&
    !isNaN(Date.parse(v)), {
    message: "must be an ISO 8601 date-time with a time zone, such as 2026-11-23T10:00:00Z",
  }).transform((v) => new Date(v)).optional().openapi({
    type: "string",
    format: "date-time",
    pattern: String.raw`^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$`,
    description:
      "Evaluate the lab as it stood at this moment (not later than now): per device and label the " +
      "newest snapshot collected at or before it, devices registered at or before it, and `snapshot-fresh` " +
      "judged against it",
  }),
}).strict().openapi("PreflightRequest");
export const StartRunRequest = z.object({
  planIdentifier,
  licenseId: z.string().trim().min(1).max(100).regex(
    /^[A-Za-z0-9._-]+$/,
    "must be letters, digits, dot, dash or underscore",
  )
    .optional(),
  notes: z.string().max(10_000).nullable().optional(),
  customer: z.string().trim().min(1, "must not be empty").max(200).nullable().optional().openapi({
    pattern: NOT_BLANK,
    description: "The customer (licensee) the report is issued to; the licence text names it",
  }),
  requirePreflightPass: z.boolean().optional().openapi({
    description: "True: start only when the pre-flight at start passes (else 422 with the pre-flight body, " +
      'nothing started). A plan with `startGate: "preflight-pass"` is gated whatever this says.',
  }),
  override: z.object({
    reason: z.string().trim().min(1, "must not be empty").max(1000, "must be at most 1000 characters")
      .openapi({ pattern: NOT_BLANK }),
  }).strict().optional().openapi({
    description: "Start a gated run even though its pre-flight does not pass. Needs the admin role (403 " +
      "otherwise); recorded with its reason and the token's name in the audit log, on the run, in the report " +
      "and on the print page. Refused (400) on an ungated start; unused (not recorded) when the pre-flight passes.",
  }),
  testbed: z.string().trim().min(1).max(100).optional().openapi({
    pattern: NOT_BLANK,
    description:
      "Run on this testbed: without `reservationId` the start reserves it for the run (409 naming " +
      "the holder when it is held); the reservation is held until the run finishes (docs/reservations.md)",
  }),
  reservationId: z.uuid().optional().openapi({
    description: "Run under this held reservation (409 when it is not held); released when the run finishes",
  }),
}).strict().openapi("StartRunRequest");

/** Latencies (ms) are at most one day: sums of a million samples stay finite and exact enough. */
export const MAX_LATENCY_MS = 86_400_000;
/** A k6 summary (members kept as sent) is capped, as JSON, at 256 KiB. */
export const MAX_K6_SUMMARY_BYTES = 256 * 1024;
const finite = z.number().finite().min(0, "must be non-negative")
  .max(MAX_LATENCY_MS, `must be at most ${MAX_LATENCY_MS} (one day in ms)`);
const count = z.number().int("must be a whole number").min(0, "must be non-negative")
  .max(1e12, "must be at most 1e12");
const K6Summary = z.object({ metrics: z.record(z.string(), z.unknown()) }).passthrough()
  .superRefine((v, ctx) => {
    for (const i of k6Issues(v)) ctx.addIssue({ code: "custom", path: i.path, message: i.message });
  })
  .openapi({
    ...k6SummaryOpenApi(),
    description:
      "A k6 summary: the `--summary-export` JSON, or the JSON of `handleSummary(data)`. Required " +
      "metrics: http_req_duration (with p(99): --summary-trend-stats), http_reqs, http_req_failed; read when " +
      "present: data_sent, data_received, iterations, checks and every metric's thresholds.",
  });
const RawResults = z.object({
  latencySamplesMs: z.array(finite).min(1, "must hold at least one sample").max(1_000_000),
  requests: count.optional().openapi({ description: "Requests sent (default: the number of samples)" }),
  failedRequests: count.optional().openapi({ description: "Requests that failed" }),
  bytesSent: count.optional(),
  bytesReceived: count.optional(),
  durationS: finite.optional().openapi({ description: "Duration of the load in seconds" }),
}).strict().superRefine((v, ctx) => {
  const requests = v.requests ?? v.latencySamplesMs.length;
  if (v.failedRequests !== undefined && v.failedRequests > requests) {
    ctx.addIssue({
      code: "custom",
      path: ["failedRequests"],
      message: `must not exceed requests (${requests})`,
    });
  }
});
export const FinishRunRequest = z.object({
  outcome: z.enum(["passed", "failed", "aborted"]),
  results: z.union([
    RawResults,
    z.object({ k6Summary: capJsonSize(K6Summary, MAX_K6_SUMMARY_BYTES) }).strict(),
  ], { message: "must be {latencySamplesMs: [...]} or {k6Summary: <k6 summary JSON>}" }),
}).strict().openapi("FinishRunRequest");

export const ExecutionIdParam = z.object({
  executionId: z.string().openapi({
    param: { name: "executionId", in: "path" },
    description: "Execution id (UUID)",
    format: "uuid",
  }),
});

/** A start request as validated: what `RunService.start` takes. */
export type StartRunInput = z.infer<typeof StartRunRequest>;
/** A finish request as validated: what `RunService.finish` takes. */
export type FinishRunInput = z.infer<typeof FinishRunRequest>;
/**
 * The `results` of a finish request: raw latencies in ms with optional counts from the load generator, or a
 * k6 summary (`--summary-export` JSON or the JSON of `handleSummary(data)`).
 */
export type RunResults = FinishRunInput["results"];

/**
 * A free-form JSON member (kept as sent, e.g. the k6 summary's other metrics) capped at `maxBytes` of
 * serialized JSON.
 */
export function capJsonSize<T extends z.ZodType>(schema: T, maxBytes: number) {
  return schema.refine(
    (v) => new TextEncoder().encode(JSON.stringify(v)).length <= maxBytes,
    `must be at most ${maxBytes} bytes of JSON`,
  );
}
