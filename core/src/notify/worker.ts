/**
 * The delivery worker (issue 51 point 3). Every tick it claims, in one short transaction, the head (oldest
 * pending delivery) of each subscription that is due and not leased by any instance (`FOR UPDATE SKIP
 * LOCKED`, then a lease), so each delivery is sent by one instance at a time and a subscription's events go
 * out in order. Each claimed delivery is sent on its own: a hanging endpoint holds only its own lease, never
 * the tick or other subscriptions. A failure is retried with exponential backoff and full jitter (or after the
 * receiver's `Retry-After`) until the retry window ends; then the delivery is `failed` and the next one of the
 * subscription goes. After DUT_WEBHOOK_FAILING_AFTER failures in a row the subscription is marked failing (API
 * and metrics) until a delivery succeeds. At least once: a crash after sending and before recording sends
 * again after the lease, with the same `webhook-id`.
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { logger } from "../util/log.ts";
import { backoffMs, ClaimLoop } from "./loop.ts";
import { type OutboxEvent, render, signatureHeaders } from "./envelope.ts";
import { type CallResult, type OutboundRules, post } from "./send.ts";
import type { WebhookFormat } from "./types.ts";
import { openWebhookSecret, type SecretCipher } from "./secrets.ts";

const log = logger("webhooks");

/** Timing of the worker and its retries. */
export interface WorkerOptions extends OutboundRules {
  /** How often the outbox is read (ms). */
  pollMs: number;
  /** First retry delay (ms); doubles with each attempt, with full jitter. */
  retryBaseMs: number;
  /** Longest delay between two attempts (ms). */
  retryMaxDelayMs: number;
  /** After this long since the event was queued, a delivery is given up (`failed`). */
  retryWindowMs: number;
  /** Failed attempts in a row after which the subscription is marked failing. */
  failingAfter: number;
  /** Deliveries in flight at most per instance. */
  concurrency: number;
  /** The cipher of the signing secrets at rest (secrets.ts). */
  keys: SecretCipher;
}

/** What the worker reports to metrics. */
export interface WorkerObserver {
  attempt(result: "delivered" | "retry" | "failed", seconds: number): void;
}

export { backoffMs };

interface Claimed {
  id: string;
  attempts: number;
  created_at: Date | string;
  subscription_id: string;
  url: string;
  format: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: Date | string | null;
  event_id: string;
  type: string;
  subject: string | null;
  time: Date | string;
  data: string;
}

export class DeliveryWorker extends ClaimLoop<Claimed> {
  constructor(private db: Kysely<Database>, private opts: WorkerOptions, private observer?: WorkerObserver) {
    super("webhooks", opts);
  }

  /** Claim the due heads of the subscriptions (leased to this instance). */
  protected async claim(room: number): Promise<Claimed[]> {
    const leaseMs = this.opts.timeoutMs + 30_000;
    const claimed = await this.db.transaction().execute(async (tx) => {
      const ids = await sql<{ id: string }>`
        with heads as (
          select distinct on (subscription_id) id from webhook_deliveries
          where state = 'pending' order by subscription_id, id
        )
        select d.id::text as id from webhook_deliveries d join heads h on h.id = d.id
        where d.next_at <= now() and (d.lease_until is null or d.lease_until < now())
        order by d.id limit ${room}
        for update of d skip locked`.execute(tx);
      if (!ids.rows.length) return [];
      const list = ids.rows.map((r) => sql`${r.id}::bigint`);
      await tx.updateTable("webhook_deliveries")
        .set({ lease_until: sql`now() + make_interval(secs => ${leaseMs / 1000})` })
        .where(sql`id`, "in", list).execute();
      const rows = await sql<Claimed>`
        select d.id::text as id, d.attempts, d.created_at, d.subscription_id, s.url, s.format, s.secret,
          s.previous_secret, s.previous_secret_until, e.id as event_id, e.type, e.subject, e.time, e.data
        from webhook_deliveries d join webhook_subscriptions s on s.id = d.subscription_id
          join webhook_events e on e.id = d.event_id
        where d.id in (${sql.join(list)}) order by d.id`.execute(tx);
      return rows.rows;
    });
    return claimed;
  }

  protected async handle(c: Claimed): Promise<void> {
    const event: OutboxEvent = {
      id: c.event_id,
      type: c.type,
      subject: c.subject,
      time: new Date(c.time),
      data: JSON.parse(c.data),
    };
    const { body, contentType } = render(c.format as WebhookFormat, event);
    const secrets = [await openWebhookSecret(this.opts.keys, c.subscription_id, c.secret)];
    if (c.previous_secret && c.previous_secret_until && new Date(c.previous_secret_until) > new Date()) {
      secrets.push(await openWebhookSecret(this.opts.keys, c.subscription_id, c.previous_secret));
    }
    const headers = {
      "content-type": contentType,
      ...await signatureHeaders(event.id, Math.floor(Date.now() / 1000), body, secrets),
    };
    const r = await post(c.url, headers, body, this.opts);
    await this.#record(c, r);
  }

  async #record(c: Claimed, r: CallResult): Promise<void> {
    const ok = r.status !== null && r.status >= 200 && r.status < 300;
    const attempt = c.attempts + 1;
    const age = Date.now() - new Date(c.created_at).getTime();
    let delay = r.retryAfterSeconds !== null
      ? r.retryAfterSeconds * 1000
      : backoffMs(attempt, this.opts.retryBaseMs, this.opts.retryMaxDelayMs);
    const giveUp = !ok && age + delay > this.opts.retryWindowMs;
    if (giveUp) delay = 0;
    const state = ok ? "delivered" : giveUp ? "failed" : "pending";
    const response = r.response ?? null;
    await this.db.transaction().execute(async (tx) => {
      await tx.insertInto("webhook_attempts").values({
        delivery_id: c.id,
        attempt,
        status: r.status,
        duration_ms: r.durationMs,
        error: r.error,
        response,
      }).execute();
      await tx.updateTable("webhook_deliveries").set({
        state,
        attempts: attempt,
        lease_until: null,
        next_at: sql`now() + make_interval(secs => ${delay / 1000})`,
        finished_at: state === "pending" ? null : new Date(),
        last_status: r.status,
        last_duration_ms: r.durationMs,
        last_error: r.error,
        last_response: response,
      }).where(sql`id`, "=", sql`${c.id}::bigint`).execute();
      if (ok) {
        await tx.updateTable("webhook_subscriptions").set({
          consecutive_failures: 0,
          failing: false,
          last_success_at: new Date(),
        }).where("id", "=", c.subscription_id).execute();
      } else {
        await tx.updateTable("webhook_subscriptions").set({
          consecutive_failures: sql`consecutive_failures + 1`,
          failing: sql`consecutive_failures + 1 >= ${this.opts.failingAfter}`,
          last_failure_at: new Date(),
        }).where("id", "=", c.subscription_id).execute();
      }
    });
    this.observer?.attempt(ok ? "delivered" : giveUp ? "failed" : "retry", r.durationMs / 1000);
    if (!ok) {
      log.info("Webhook delivery {id} to subscription {sub}: attempt {n} {what}", {
        id: c.id,
        sub: c.subscription_id,
        n: attempt,
        what: r.status !== null ? `answered ${r.status}` : r.error ?? "failed",
      });
    }
  }
}
