/**
 * What a delivery sends (issue 51 points 2 and 5): a CloudEvents 1.0 event in structured mode
 * (`application/cloudevents+json`), or a Slack or Microsoft Teams incoming-webhook message, each signed per
 * the Standard Webhooks specification (`webhook-id`, `webhook-timestamp`, `webhook-signature`).
 */
import type { WebhookFormat } from "./types.ts";

/** The CloudEvents `source` of every event of this service. */
export const EVENT_SOURCE = "/dutlab";

/** An outbox event as stored. */
export interface OutboxEvent {
  id: string;
  type: string;
  subject: string | null;
  time: Date;
  data: Record<string, unknown>;
}

/** The CloudEvents 1.0 JSON form of an event (structured content mode). */
export function cloudEvent(e: OutboxEvent): Record<string, unknown> {
  return {
    specversion: "1.0",
    id: e.id,
    source: EVENT_SOURCE,
    type: e.type,
    ...(e.subject ? { subject: e.subject } : {}),
    time: e.time.toISOString(),
    datacontenttype: "application/json",
    data: e.data,
  };
}

/** A one-line human summary and an optional link of an event (for the chat formats). */
function summary(e: OutboxEvent): { title: string; text: string; link: string | null } {
  const d = e.data as Record<string, string | number | null | string[]>;
  switch (e.type) {
    case "dutlab.run.finished":
      return {
        title: `Run ${d.executionId} finished: ${String(d.verdict).toUpperCase()}`,
        text: `Plan ${d.planIdentifier}, outcome ${d.outcome}, report SHA-256 ${d.reportSha256}`,
        link: String(d.reportUrl),
      };
    case "dutlab.preflight.failed":
      return {
        title: `Pre-flight failed for plan ${d.planIdentifier}${
          d.trigger === "request" ? "" : d.executionId ? " (run started over it)" : " (run refused)"
        }`,
        text: String(d.summary),
        link: null,
      };
    case "dutlab.device.status_changed":
      return { title: `Device ${d.hostname} is ${d.to}`, text: String(d.detail), link: null };
    case "dutlab.alert.raised":
      return {
        title: `${d.name} on ${d.hostname}`,
        text: `Decryption went ${d.from} → ${d.to} during run ${d.executionId}`,
        link: null,
      };
    case "dutlab.lab.synced": {
      const n = (k: string) => (d[k] as string[]).length;
      return {
        title: `Lab ${d.labName} synced (generation ${d.generation})`,
        text: `${n("created")} created, ${n("updated")} updated, ${n("deleted")} deleted`,
        link: null,
      };
    }
    case "dutlab.reservation.granted":
    case "dutlab.reservation.queued":
    case "dutlab.reservation.released":
    case "dutlab.reservation.expired": {
      const hosts = (d.devices as unknown as Array<{ hostname: string }>).map((x) => x.hostname).join(", ");
      const what = d.testbed ? `Testbed ${d.testbed}` : `Devices ${hosts}`;
      return {
        title: `${what} ${d.state === "held" ? "reserved" : d.state} (holder ${d.holder})`,
        text: [d.expiresAt ? `until ${d.expiresAt}` : null, d.reason, d.testbed ? hosts : null]
          .filter((x) => x).join("; "),
        link: null,
      };
    }
    case "dutlab.reservation.not_ready": {
      const each = (d.notReady as unknown as Array<Record<string, string>>)
        .map((f) => `${f.checkId} ${f.status} on ${f.hostname}`);
      return {
        title: `Not reserved for ${d.holder}: ${d.testbed ?? "devices"} not ready for ${d.planIdentifier}`,
        text: each.slice(0, 5).join("; ") + (each.length > 5 ? `; ${each.length - 5} more` : ""),
        link: null,
      };
    }
    default:
      return { title: `dutlab: ${e.type}`, text: String(d.message ?? ""), link: null };
  }
}

/** Slack's mrkdwn escapes (`&`, `<`, `>`). */
const slackEscape = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** Slack's limits: a section's text (3,000 characters) and a message's `text` (kept to 4,000, its advice). */
export const SLACK_SECTION_MAX = 3000;
export const SLACK_TEXT_MAX = 4000;

/** `s` cut to `max` characters, an ellipsis marking the cut. */
const clip = (s: string, max: number) => s.length <= max ? s : `${s.slice(0, max - 1)}…`;

/**
 * A Slack incoming-webhook message: `text` (the notification and the fallback; plain, escaped) and one
 * section block in mrkdwn with the link (Block Kit).
 */
export function slackMessage(e: OutboxEvent): Record<string, unknown> {
  const s = summary(e);
  const link = s.link ? `\n<${s.link}|Open the report>` : "";
  const body = clip(`*${slackEscape(s.title)}*\n${slackEscape(s.text)}`, SLACK_SECTION_MAX - link.length);
  return {
    text: clip(slackEscape(`${s.title}${s.link ? ` ${s.link}` : ""}`), SLACK_TEXT_MAX),
    blocks: [{ type: "section", text: { type: "mrkdwn", text: body + link } }],
  };
}

/** A Microsoft Teams incoming-webhook message carrying an Adaptive Card (1.4) with the link as an action. */
export function teamsMessage(e: OutboxEvent): Record<string, unknown> {
  const s = summary(e);
  return {
    type: "message",
    attachments: [{
      contentType: "application/vnd.microsoft.card.adaptive",
      contentUrl: null,
      content: {
        $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
        type: "AdaptiveCard",
        version: "1.4",
        body: [
          { type: "TextBlock", text: s.title, weight: "Bolder", size: "Medium", wrap: true },
          { type: "TextBlock", text: s.text, wrap: true },
        ],
        actions: s.link ? [{ type: "Action.OpenUrl", title: "Open the report", url: s.link }] : [],
      },
    }],
  };
}

/** The body and content type a subscription of `format` is sent for `e`. */
export function render(format: WebhookFormat, e: OutboxEvent): { body: string; contentType: string } {
  if (format === "slack") return { body: JSON.stringify(slackMessage(e)), contentType: "application/json" };
  if (format === "teams") return { body: JSON.stringify(teamsMessage(e)), contentType: "application/json" };
  return { body: JSON.stringify(cloudEvent(e)), contentType: "application/cloudevents+json; charset=utf-8" };
}

const b64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

/** A new signing secret: `whsec_` and the base64 of 32 random bytes (Standard Webhooks "Signature scheme"). */
export function newSecret(): string {
  return `whsec_${b64(crypto.getRandomValues(new Uint8Array(32)))}`;
}

/** The key bytes of a `whsec_` secret. */
function secretBytes(secret: string): Uint8Array<ArrayBuffer> {
  const raw = atob(secret.replace(/^whsec_/, ""));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

/**
 * The Standard Webhooks headers of one delivery: `webhook-signature` holds `v1,<base64 HMAC-SHA256 of
 * "id.timestamp.body">` for each secret (the current one, and the previous one during a rotation's overlap),
 * separated by spaces.
 */
export async function signatureHeaders(
  id: string,
  timestamp: number,
  body: string,
  secrets: string[],
): Promise<Record<string, string>> {
  const content = new TextEncoder().encode(`${id}.${timestamp}.${body}`);
  const sigs: string[] = [];
  for (const s of secrets) {
    const key = await crypto.subtle.importKey(
      "raw",
      secretBytes(s),
      { name: "HMAC", hash: "SHA-256" },
      false,
      [
        "sign",
      ],
    );
    sigs.push(`v1,${b64(new Uint8Array(await crypto.subtle.sign("HMAC", key, content)))}`);
  }
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": sigs.join(" "),
  };
}
