import { z } from "@hono/zod-openapi";
import { NOT_BLANK } from "./text.ts";

/** A testbed's name: what the lab file and the API call it. */
export const TestbedName = z.string().trim().min(1, "must not be empty").max(100)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "must be letters, digits, dots, dashes, underscores")
  .openapi({ description: "The testbed's name", example: "edge-pair" });

const list = <T extends z.ZodTypeAny>(item: T) => z.array(item).max(1000).optional();
/** A name without surrounding white space. */
const word = (max: number) =>
  z.string().min(1).max(max).regex(/^\S(.*\S)?$/, "must not be empty or start or end with white space");

export const TestbedSelector = z.object({
  deviceIds: list(z.uuid()),
  hostnames: list(word(253)),
  tags: list(word(100)),
  roles: list(word(100)),
}).strict().openapi("TestbedSelector", {
  description: "The devices of a testbed: every device matching any listed id, hostname, tag or role",
});

export const TestbedPut = z.object({
  description: z.string().max(2000).nullable().optional(),
  selector: TestbedSelector,
}).strict().openapi("TestbedPut");

const DeviceRef = z.object({ id: z.string(), hostname: z.string() });

export const Testbed = z.object({
  name: z.string(),
  description: z.string().nullable(),
  selector: TestbedSelector,
  managedBy: z.string().nullable().openapi({
    description: "The lab file declaring it; null: made by the API",
  }),
  devices: z.array(DeviceRef).openapi({ description: "The devices it selects now" }),
}).openapi("Testbed");

export const TestbedList = z.object({ testbeds: z.array(Testbed) }).openapi("TestbedList");
export const TestbedParam = z.object({ name: TestbedName });

export const ReservationCreate = z.object({
  holder: z.string().trim().min(1, "must not be empty").max(500).optional().openapi({
    pattern: NOT_BLANK,
    description: "Who holds it (a CI job URL, a person); default: the token's name",
  }),
  purpose: z.string().max(2000).nullable().optional(),
  testbed: TestbedName.optional().openapi({
    description: "Reserve this testbed's devices (or give deviceIds)",
  }),
  deviceIds: z.array(z.uuid()).min(1).max(1000).optional(),
  leaseSeconds: z.number().int().min(10).max(7 * 86400).default(900).openapi({
    description: "The lease: the reservation ends unless renewed before (default 900)",
  }),
  waitSeconds: z.number().int().min(0).max(86400).optional().openapi({
    description: "When a device is held: wait in the queue this long (202, `queued`) instead of a 409",
  }),
  priority: z.number().int().min(-100).max(100).optional().openapi({
    description: "Among queued requests, higher first; equal ones first come, first served (default 0)",
  }),
  readiness: z.object({
    planIdentifier: z.string().trim().min(1).max(200).openapi({ pattern: NOT_BLANK }),
    markOutOfService: z.boolean().optional().openapi({
      description: "Disable each failing device, its evidence in its notes",
    }),
  }).strict().optional().openapi({
    description: "Snapshot the devices now and evaluate this plan's pre-flight first: a failure grants " +
      "nothing and is named (422)",
  }),
}).strict().openapi("ReservationCreate");

export const Reservation = z.object({
  id: z.string(),
  holder: z.string(),
  purpose: z.string().nullable(),
  testbed: z.string().nullable(),
  devices: z.array(DeviceRef),
  priority: z.number().int(),
  state: z.enum(["queued", "held", "released", "expired", "timed_out"]),
  leaseSeconds: z.number().int(),
  requestedAt: z.string(),
  waitUntil: z.string().nullable(),
  grantedAt: z.string().nullable(),
  expiresAt: z.string().nullable(),
  endedAt: z.string().nullable(),
  endReason: z.string().nullable().openapi({ description: "Why it ended (released by…, lease ended…)" }),
  executionId: z.string().nullable().openapi({ description: "The run holding it, if any" }),
}).openapi("Reservation");

export const ReservationList = z.object({ reservations: z.array(Reservation) }).openapi("ReservationList");
export const ReservationListQuery = z.object({
  ended: z.enum(["true", "false"]).optional().openapi({ description: "Include ended reservations" }),
});
export const ReservationParam = z.object({ id: z.uuid() });
export const ReservationRenew = z.object({
  leaseSeconds: z.number().int().min(10).max(7 * 86400).optional(),
}).strict().openapi("ReservationRenew");
export const ReservationRelease = z.object({
  reason: z.string().trim().min(1).max(500).optional().openapi({ pattern: NOT_BLANK }),
}).strict().openapi("ReservationRelease");
/** `?force=true`: an admin overrides a reservation (audited). */
export const ForceQuery = z.object({
  force: z.enum(["true", "false"]).optional().openapi({
    description: "Apply the change over a reservation of the device (admin; recorded in the audit log)",
  }),
});
