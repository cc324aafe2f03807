/**
 * The outbox (issue 51 point 3): an event is written in the transaction of the change it describes, with one
 * delivery row per matching subscription, so a crash never loses one and a rolled-back change never sends
 * one. The delivery worker (worker.ts) reads the rows after commit. When no subscription matches, nothing is
 * written (one small read of the subscriptions is the whole cost).
 */
import type { Kysely } from "kysely";
import type { Database } from "../db/schema.ts";
import {
  type EventFacets,
  filtersMatch,
  type SubscribableType,
  type WebhookEventMap,
  type WebhookFilters,
} from "./types.ts";

/** Writes outbox events inside a caller's transaction (the seam the run service, poll store and lab use). */
export type OutboxWriter = <T extends SubscribableType>(
  tx: Kysely<Database>,
  type: T,
  subject: string,
  data: WebhookEventMap[T],
  facets: EventFacets,
) => Promise<string | null>;

/**
 * Record `data` as an event of `type` about `subject` in `tx`, for every enabled subscription whose types and
 * filters match. Returns the event id (the CloudEvents `id`), or null when no subscription wanted it.
 */
export const enqueueEvent: OutboxWriter = async (tx, type, subject, data, facets) => {
  const subs = await tx.selectFrom("webhook_subscriptions").select(["id", "event_types", "filters"])
    .where("enabled", "=", true).execute();
  const ids = subs.filter((s) =>
    (JSON.parse(s.event_types) as string[]).includes(type) &&
    filtersMatch(JSON.parse(s.filters) as WebhookFilters, facets)
  ).map((s) => s.id);
  if (!ids.length) return null;
  const id = crypto.randomUUID();
  await tx.insertInto("webhook_events").values({
    id,
    type,
    subject,
    time: new Date(),
    data: JSON.stringify(data),
  }).execute();
  await tx.insertInto("webhook_deliveries").values(ids.map((s) => ({ subscription_id: s, event_id: id })))
    .execute();
  return id;
};
