/**
 * The chat formatters' bodies (issue 51 point 5) against the shapes their receivers publish: a Slack incoming
 * webhook takes `text` (notification and fallback) and Block Kit `blocks` (a `section` with a `mrkdwn` text
 * object of at most 3,000 characters; `&`, `<`, `>` escaped); a Microsoft Teams incoming webhook or Workflows
 * "post to a channel when a webhook request is received" takes `{ type: "message", attachments: [{ contentType:
 * "application/vnd.microsoft.card.adaptive", content: <Adaptive Card> }] }`, the card judged by Microsoft's
 * Adaptive Cards 1.4 JSON schema (testdata/README.md).
 */
import assert from "node:assert/strict";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";
import {
  adaptiveCardErrors,
  startReceiver,
  testWorker,
  until,
  verifyDelivery,
} from "../../harness/webhook_receiver.ts";
import { type OutboxEvent, render, SLACK_SECTION_MAX, slackMessage, teamsMessage } from "./envelope.ts";
import type { WebhookEventMap } from "./types.ts";

const at = new Date("2026-11-29T04:00:00Z");
const ev = <T extends keyof WebhookEventMap>(type: T, data: WebhookEventMap[T]): OutboxEvent => ({
  id: crypto.randomUUID(),
  type,
  subject: "s",
  time: at,
  data: data as unknown as Record<string, unknown>,
});

/** One event of every type, with text a chat client would misread if it were not escaped. */
const EVENTS: OutboxEvent[] = [
  ev("dutlab.run.finished", {
    executionId: "run-1",
    planIdentifier: "plan <a> & b",
    verdict: "pass",
    outcome: "passed",
    endedAt: at.toISOString(),
    reportUrl: "https://dutlab.example/api/test-runs/run-1/report",
    reportSha256: "ab".repeat(32),
  }),
  ev("dutlab.preflight.failed", {
    planIdentifier: "plan-1",
    summary: "1 of 3 checks failed: <!channel> fw1 unreachable",
    failedChecks: [{ checkId: "reach", deviceId: "d1", message: "unreachable" }],
    trigger: "request",
    runStarted: false,
    executionId: null,
  }),
  ev("dutlab.device.status_changed", {
    deviceId: "d1",
    hostname: "fw1",
    vendor: "paloalto",
    from: "ok",
    to: "auth_failed",
    detail: "401 from the device",
  }),
  ev("dutlab.alert.raised", {
    name: "TLSDecryptModeChanged",
    executionId: "run-1",
    deviceId: "d1",
    hostname: "fw1",
    from: "decrypt",
    to: "no-decrypt",
    snapshotId: "1",
    at: at.toISOString(),
  }),
  ev("dutlab.lab.synced", {
    labName: "lab",
    generation: 3,
    created: ["a"],
    updated: [],
    deleted: ["b", "c"],
  }),
  ev("dutlab.webhook.ping", { subscriptionId: "sub", message: "Test ping from dutlab" }),
];

type Slack = { text: string; blocks: Array<{ type: string; text: { type: string; text: string } }> };
type Teams = {
  type: string;
  attachments: Array<{ contentType: string; contentUrl: null; content: Record<string, unknown> }>;
};

Deno.test("Slack: text and one mrkdwn section per message, escaped, within Block Kit's limits", () => {
  for (const e of EVENTS) {
    const m = slackMessage(e) as unknown as Slack;
    assert.deepEqual(Object.keys(m).sort(), ["blocks", "text"], e.type);
    assert.ok(m.text.length > 0 && m.text.length <= 4000, e.type);
    assert.equal(m.blocks.length, 1);
    const [b] = m.blocks;
    assert.equal(b!.type, "section");
    assert.equal(b!.text.type, "mrkdwn");
    assert.ok(b!.text.text.length > 0 && b!.text.text.length <= SLACK_SECTION_MAX);
    // No raw control sequence survives: every `<` opens the one link the formatter writes.
    for (const t of [m.text, b!.text.text]) {
      assert.doesNotMatch(t.replace(/<https:[^|>]+\|Open the report>/g, ""), /[<>]/, `${e.type}: ${t}`);
    }
  }
  const run = slackMessage(EVENTS[0]!) as unknown as Slack;
  assert.match(run.blocks[0]!.text.text, /^\*Run run-1 finished: PASS\*\n/);
  assert.match(run.blocks[0]!.text.text, /plan &lt;a&gt; &amp; b/);
  assert.ok(
    run.blocks[0]!.text.text.endsWith(
      "\n<https://dutlab.example/api/test-runs/run-1/report|Open the report>",
    ),
  );
  assert.match(run.text, /PASS https:\/\/dutlab\.example\//);
  assert.match((slackMessage(EVENTS[1]!) as unknown as Slack).text + "", /Pre-flight failed for plan plan-1/);
  // A long text is cut to the section's limit, the link kept.
  const long = slackMessage({
    ...EVENTS[0]!,
    data: { ...EVENTS[0]!.data, planIdentifier: "p".repeat(5000) },
  });
  const t = (long as unknown as Slack).blocks[0]!.text.text;
  assert.equal(t.length <= SLACK_SECTION_MAX, true);
  assert.ok(t.endsWith("|Open the report>"));
});

Deno.test("Teams: a message with one Adaptive Card attachment that Microsoft's 1.4 schema accepts", () => {
  for (const e of EVENTS) {
    const m = teamsMessage(e) as unknown as Teams;
    assert.equal(m.type, "message");
    assert.equal(m.attachments.length, 1);
    const [a] = m.attachments;
    assert.equal(a!.contentType, "application/vnd.microsoft.card.adaptive");
    assert.equal(a!.content.type, "AdaptiveCard");
    assert.equal(a!.content.version, "1.4");
    assert.equal(adaptiveCardErrors(a!.content), null, e.type);
  }
  const card = (teamsMessage(EVENTS[0]!) as unknown as Teams).attachments[0]!.content as {
    body: Array<{ text: string }>;
    actions: Array<{ type: string; url: string }>;
  };
  assert.equal(card.body[0]!.text, "Run run-1 finished: PASS");
  assert.deepEqual(card.actions.map((x) => [x.type, x.url]), [
    ["Action.OpenUrl", "https://dutlab.example/api/test-runs/run-1/report"],
  ]);
  // The judge does judge: a card the schema forbids is refused.
  assert.notEqual(adaptiveCardErrors({ ...card, type: "AdaptiveCard", body: [{ type: "TextBlock" }] }), null);
  assert.notEqual(
    adaptiveCardErrors({
      type: "AdaptiveCard",
      version: "1.4",
      body: [],
      actions: [{ type: "Action.OpenUrl" }],
    }),
    null,
  );
});

dbTest("a Teams subscription receives the card as application/json, signed", async (db) => {
  const { app, auth, svc } = await testServices(db, fixtureModules());
  const rx = startReceiver();
  const worker = testWorker(svc);
  try {
    const res = await app.request(
      "/api/admin/webhooks",
      jsonReq("POST", {
        name: "teams",
        url: rx.url("/t"),
        allowHttp: true,
        format: "teams",
        eventTypes: ["dutlab.lab.synced"],
      }, auth),
    );
    const sub = await res.json() as { id: string; secret: string };
    assert.equal(res.status, 201);
    worker.start();
    await app.request(`/api/admin/webhooks/${sub.id}/ping`, jsonReq("POST", undefined, auth));
    await until(() => rx.got.length === 1, 10_000, "the ping");
    const got = rx.got[0]!;
    assert.equal(got.headers["content-type"], "application/json");
    const m = verifyDelivery(got, sub.secret) as unknown as Teams;
    assert.equal(adaptiveCardErrors(m.attachments[0]!.content), null);
    assert.equal(render("teams", EVENTS[5]!).contentType, "application/json");
  } finally {
    await worker.stop();
    await rx.close();
  }
});
