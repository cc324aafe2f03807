/**
 * Test helpers of the webhook tests: a receiver on 127.0.0.1 that records every request and answers as told,
 * the outside judges (the published `standardwebhooks` library verifies each signature; ajv validates each
 * envelope against the CloudEvents project's JSON schema), and a worker with test timings.
 */
// deno-lint-ignore no-import-prefix -- test-only: kept out of deno.json and deno.lock (tests/lockfiles_test.ts)
import { Webhook } from "npm:standardwebhooks@1.1.1";
// deno-lint-ignore no-import-prefix -- test-only, as above
import { Ajv } from "npm:ajv@8.20.0";
// deno-lint-ignore no-import-prefix -- test-only, as above
import addFormatsModule from "npm:ajv-formats@3.0.1";
import type { Kysely } from "kysely";
import type { Database } from "../src/db/schema.ts";
import { DeliveryWorker, type WorkerOptions } from "../src/notify/worker.ts";
import type { KeyRing } from "../src/devices/store.ts";
import { secretCipher } from "../src/runtime/services.ts";

const addFormats = addFormatsModule as unknown as (a: unknown) => void;
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
const schema = JSON.parse(
  await Deno.readTextFile(new URL("../src/notify/testdata/cloudevents.schema.json", import.meta.url)),
);
const validateCloudEvent = ajv.compile(schema);

/** One request the receiver got. */
export interface Received {
  path: string;
  at: number;
  headers: Record<string, string>;
  body: string;
}

/** How the receiver answers the n-th request (0-based) of a path: a status and headers, or a hang. */
export type Answer = (n: number) => { status: number; headers?: Record<string, string> } | "hang";

export function startReceiver(answers: Record<string, Answer> = {}) {
  const got: Received[] = [];
  const counts = new Map<string, number>();
  const hangs: Array<() => void> = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const path = new URL(req.url).pathname;
    const body = await req.text();
    const n = counts.get(path) ?? 0;
    counts.set(path, n + 1);
    got.push({ path, at: Date.now(), headers: Object.fromEntries(req.headers), body });
    const a = answers[path]?.(n) ?? { status: 204 };
    if (a === "hang") {
      await new Promise<void>((r) => hangs.push(r));
      return new Response(null, { status: 503 });
    }
    return new Response(a.status === 204 ? null : "receiver says " + a.status, {
      status: a.status,
      headers: a.headers,
    });
  });
  const url = (path: string) => `http://127.0.0.1:${server.addr.port}${path}`;
  return {
    got,
    url,
    async close() {
      for (const h of hangs) h();
      await server.shutdown();
    },
  };
}

/**
 * Verify a delivery as a receiver would, with the published Standard Webhooks library: throws unless the
 * signature (any of them) is valid for `secret`. Returns the parsed body.
 */
export function verifyDelivery(r: Received, secret: string): Record<string, unknown> {
  return new Webhook(secret).verify(r.body, r.headers) as Record<string, unknown>;
}

/**
 * Microsoft's Adaptive Cards 1.4 JSON schema (draft-06; its top-level `$schema` and `id`, which ajv 8 does not
 * read, dropped), compiled once: the outside judge of the Teams formatter's cards.
 */
const adaptiveCardSchema = JSON.parse(
  await Deno.readTextFile(new URL("../src/notify/testdata/adaptive-card-1.4.schema.json", import.meta.url)),
);
delete adaptiveCardSchema.$schema;
delete adaptiveCardSchema.id;
const validateAdaptiveCard = ajv.compile(adaptiveCardSchema);

/** ajv's errors for `card` against the Adaptive Cards 1.4 schema, or null when it conforms. */
export function adaptiveCardErrors(card: unknown): string | null {
  return validateAdaptiveCard(card) ? null : ajv.errorsText(validateAdaptiveCard.errors);
}

/** ajv's errors for `event` against the CloudEvents JSON schema, or null when it conforms. */
export function cloudEventErrors(event: unknown): string | null {
  return validateCloudEvent(event) ? null : ajv.errorsText(validateCloudEvent.errors);
}

export const TEST_WORKER: Omit<WorkerOptions, "keys"> = {
  pollMs: 20,
  timeoutMs: 2000,
  maxResponseBytes: 65536,
  retryBaseMs: 5,
  retryMaxDelayMs: 50,
  retryWindowMs: 60_000,
  failingAfter: 3,
  concurrency: 8,
};

/** A delivery worker with test timings over the services' database, signing with their credential keys. */
export function testWorker(
  svc: { db: { kysely: Kysely<Database> }; keys: KeyRing },
  opts: Partial<WorkerOptions> = {},
): DeliveryWorker {
  return new DeliveryWorker(svc.db.kysely, { ...TEST_WORKER, keys: secretCipher(svc.keys), ...opts });
}

/** Wait until `cond` holds (polling every 20 ms), failing after `ms`. */
export async function until(
  cond: () => boolean | Promise<boolean>,
  ms = 10_000,
  what = "condition",
): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
