/**
 * Webhook subscriptions (issue 51 points 1 and 4): create (the secret is in the answer once), list, read,
 * change, delete, rotate the secret with an overlap (both secrets sign until it ends), the delivery log, a
 * redelivery and a test ping. The HTTP routes (http/routes_webhooks.ts) audit every change.
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { ConflictError, NotFoundError } from "../errors.ts";
import { newSecret } from "./envelope.ts";
import { sealWebhookSecret, type SecretCipher } from "./secrets.ts";
import type { SubscribableType, WebhookFilters, WebhookFormat } from "./types.ts";

/** A subscription as the API shows it: never its secret. */
export interface SubscriptionView {
  id: string;
  name: string;
  url: string;
  format: WebhookFormat;
  eventTypes: SubscribableType[];
  filters: WebhookFilters;
  allowHttp: boolean;
  enabled: boolean;
  /** True after repeated failed attempts in a row (DUT_WEBHOOK_FAILING_AFTER); cleared by a success. */
  failing: boolean;
  consecutiveFailures: number;
  lastSuccessAt: string | null;
  lastFailureAt: string | null;
  /** Until when the previous secret still signs (after a rotation), or null. */
  previousSecretUntil: string | null;
  createdAt: string;
  updatedAt: string;
}

/** Input of a new subscription. */
export interface SubscriptionInput {
  name: string;
  url: string;
  format?: WebhookFormat;
  eventTypes: SubscribableType[];
  filters?: WebhookFilters;
  allowHttp?: boolean;
  enabled?: boolean;
}

/** One delivery of the log. */
export interface DeliveryView {
  id: string;
  eventId: string;
  eventType: string;
  state: "pending" | "delivered" | "failed";
  attempts: number;
  createdAt: string;
  nextAttemptAt: string | null;
  finishedAt: string | null;
  statusCode: number | null;
  durationMs: number | null;
  error: string | null;
  /** The first bytes (up to 1 KiB) of the last response. */
  response: string | null;
  /** Every attempt, oldest first. */
  attemptLog: Array<{
    attempt: number;
    at: string;
    statusCode: number | null;
    durationMs: number;
    error: string | null;
    response: string | null;
  }>;
}

type Row = Database["webhook_subscriptions"];
const iso = (d: unknown) => d == null ? null : new Date(d as string).toISOString();

function view(r: { [K in keyof Row]: unknown }): SubscriptionView {
  return {
    id: r.id as string,
    name: r.name as string,
    url: r.url as string,
    format: r.format as WebhookFormat,
    eventTypes: JSON.parse(r.event_types as string),
    filters: JSON.parse(r.filters as string),
    allowHttp: r.allow_http as boolean,
    enabled: r.enabled as boolean,
    failing: r.failing as boolean,
    consecutiveFailures: r.consecutive_failures as number,
    lastSuccessAt: iso(r.last_success_at),
    lastFailureAt: iso(r.last_failure_at),
    previousSecretUntil: r.previous_secret_until && new Date(r.previous_secret_until as string) > new Date()
      ? iso(r.previous_secret_until)
      : null,
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
  };
}

export class Subscriptions {
  /** `keys` encrypt the signing secrets at rest (secrets.ts). */
  constructor(private db: Kysely<Database>, private keys: SecretCipher) {}

  async create(input: SubscriptionInput): Promise<SubscriptionView & { secret: string }> {
    const secret = newSecret();
    const id = crypto.randomUUID();
    await this.db.insertInto("webhook_subscriptions").values({
      id,
      name: input.name,
      url: input.url,
      format: input.format ?? "cloudevents",
      event_types: JSON.stringify([...new Set(input.eventTypes)]),
      filters: JSON.stringify(input.filters ?? {}),
      allow_http: input.allowHttp ?? false,
      enabled: input.enabled ?? true,
      secret: await sealWebhookSecret(this.keys, id, secret),
    }).execute();
    return { ...(await this.get(id)), secret };
  }

  async list(): Promise<SubscriptionView[]> {
    return (await this.db.selectFrom("webhook_subscriptions").selectAll().orderBy("created_at").orderBy("id")
      .execute()).map(view);
  }

  async get(id: string): Promise<SubscriptionView> {
    const r = await this.db.selectFrom("webhook_subscriptions").selectAll().where("id", "=", id)
      .executeTakeFirst();
    if (!r) throw new NotFoundError(`No webhook subscription "${id}"`);
    return view(r);
  }

  async update(id: string, patch: Partial<SubscriptionInput>): Promise<SubscriptionView> {
    await this.get(id);
    const set: Partial<Record<keyof Row, unknown>> = { updated_at: new Date() };
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.url !== undefined) set.url = patch.url;
    if (patch.format !== undefined) set.format = patch.format;
    if (patch.eventTypes !== undefined) set.event_types = JSON.stringify([...new Set(patch.eventTypes)]);
    if (patch.filters !== undefined) set.filters = JSON.stringify(patch.filters);
    if (patch.allowHttp !== undefined) set.allow_http = patch.allowHttp;
    if (patch.enabled !== undefined) set.enabled = patch.enabled;
    // A re-enabled or changed endpoint starts with a clean failure count.
    if (patch.url !== undefined || patch.enabled) {
      Object.assign(set, { consecutive_failures: 0, failing: false });
    }
    await this.db.updateTable("webhook_subscriptions").set(set as never).where("id", "=", id).execute();
    return await this.get(id);
  }

  async delete(id: string): Promise<SubscriptionView> {
    const v = await this.get(id);
    await this.db.deleteFrom("webhook_subscriptions").where("id", "=", id).execute();
    return v;
  }

  /** A new secret; the old one keeps signing (beside it) for `overlapSeconds`. The new one is returned once. */
  async rotateSecret(id: string, overlapSeconds: number): Promise<SubscriptionView & { secret: string }> {
    await this.get(id);
    const secret = newSecret();
    await this.db.updateTable("webhook_subscriptions").set({
      previous_secret: overlapSeconds > 0 ? sql<string>`secret` : null,
      previous_secret_until: overlapSeconds > 0 ? new Date(Date.now() + overlapSeconds * 1000) : null,
      secret: await sealWebhookSecret(this.keys, id, secret),
      updated_at: new Date(),
    } as never).where("id", "=", id).execute();
    return { ...(await this.get(id)), secret };
  }

  /** The most recent deliveries of a subscription, newest first. */
  async deliveries(id: string, limit: number): Promise<DeliveryView[]> {
    await this.get(id);
    const rows = await this.db.selectFrom("webhook_deliveries as d").innerJoin(
      "webhook_events as e",
      "e.id",
      "d.event_id",
    )
      .select([
        sql<string>`d.id::text`.as("id"),
        "d.event_id",
        "e.type",
        "d.state",
        "d.attempts",
        "d.created_at",
        "d.next_at",
        "d.finished_at",
        "d.last_status",
        "d.last_duration_ms",
        "d.last_error",
        "d.last_response",
      ])
      .where("d.subscription_id", "=", id).orderBy(sql`d.id`, "desc").limit(limit).execute();
    const attempts = rows.length
      ? await this.db.selectFrom("webhook_attempts").selectAll().select(
        sql<string>`delivery_id::text`.as("delivery_id"),
      )
        .where(sql`delivery_id`, "in", rows.map((r) => sql`${r.id}::bigint`)).orderBy("attempt").execute()
      : [];
    return rows.map((r) => ({
      id: r.id,
      eventId: r.event_id,
      eventType: r.type,
      state: r.state as DeliveryView["state"],
      attempts: r.attempts,
      createdAt: iso(r.created_at)!,
      nextAttemptAt: r.state === "pending" ? iso(r.next_at) : null,
      finishedAt: iso(r.finished_at),
      statusCode: r.last_status,
      durationMs: r.last_duration_ms,
      error: r.last_error,
      response: r.last_response,
      attemptLog: attempts.filter((a) => a.delivery_id === r.id).map((a) => ({
        attempt: a.attempt,
        at: iso(a.at)!,
        statusCode: a.status,
        durationMs: a.duration_ms,
        error: a.error,
        response: a.response,
      })),
    }));
  }

  /**
   * Send a delivered or failed delivery again: a new delivery of the same event (same `id`, so receivers can
   * deduplicate) at the end of the subscription's queue.
   */
  async redeliver(id: string, deliveryId: string): Promise<{ deliveryId: string }> {
    await this.get(id);
    if (!/^\d{1,18}$/.test(deliveryId)) throw new NotFoundError(`No delivery "${deliveryId}" of "${id}"`);
    const d = await this.db.selectFrom("webhook_deliveries").select(["event_id", "state"])
      .where(sql`id`, "=", sql`${deliveryId}::bigint`).where("subscription_id", "=", id).executeTakeFirst();
    if (!d) throw new NotFoundError(`No delivery "${deliveryId}" of "${id}"`);
    if (d.state === "pending") throw new ConflictError(`Delivery "${deliveryId}" is still pending`);
    const r = await this.db.insertInto("webhook_deliveries").values({
      subscription_id: id,
      event_id: d.event_id,
    })
      .returning(sql<string>`id::text`.as("id")).executeTakeFirstOrThrow();
    return { deliveryId: r.id };
  }

  /** Queue a `dutlab.webhook.ping` event to this subscription only (enabled or not: a test of the endpoint). */
  async ping(id: string): Promise<{ eventId: string; deliveryId: string }> {
    await this.get(id);
    const eventId = crypto.randomUUID();
    return await this.db.transaction().execute(async (tx) => {
      await tx.insertInto("webhook_events").values({
        id: eventId,
        type: "dutlab.webhook.ping",
        subject: id,
        time: new Date(),
        data: JSON.stringify({ subscriptionId: id, message: "Test ping from dutlab" }),
      }).execute();
      const r = await tx.insertInto("webhook_deliveries").values({ subscription_id: id, event_id: eventId })
        .returning(sql<string>`id::text`.as("id")).executeTakeFirstOrThrow();
      return { eventId, deliveryId: r.id };
    });
  }

  /** How many subscriptions are marked failing (the metric). */
  async failingCount(): Promise<number> {
    const r = await this.db.selectFrom("webhook_subscriptions").select(sql<string>`count(*)::text`.as("n"))
      .where("failing", "=", true).executeTakeFirstOrThrow();
    return Number(r.n);
  }
}
