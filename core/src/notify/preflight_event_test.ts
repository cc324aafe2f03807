import assert from "node:assert/strict";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";

/** The `dutlab.preflight.failed` events in the outbox, oldest first. */
const events = async (db: Parameters<Parameters<typeof dbTest>[1]>[0]) =>
  (await db.kysely.selectFrom("webhook_events").select(["type", "subject", "data"])
    .where("type", "=", "dutlab.preflight.failed").orderBy("time").execute())
    .map((e) => ({ ...e, data: JSON.parse(e.data) as Record<string, unknown> }));

dbTest(
  "a failing pre-flight is an event whether asked for on its own or at a run's start; a dry-run or asOf one is not",
  async (db) => {
    const { app, auth } = await testServices(db, fixtureModules());
    const sub = await app.request(
      "/api/admin/webhooks",
      jsonReq("POST", {
        name: "pf",
        url: "https://hooks.example/pf",
        eventTypes: ["dutlab.preflight.failed"],
      }, auth),
    );
    assert.equal(sub.status, 201);
    const preflight = (body: Record<string, unknown>) =>
      app.request(
        "/api/test-runs/preflight",
        jsonReq("POST", { planIdentifier: "fixture-plan", ...body }, auth),
      );
    // No device: no check applies, so the pre-flight does not pass (422).
    const r = await preflight({});
    assert.equal(r.status, 422);
    const result = await r.json() as { summary: string };
    let evs = await events(db);
    assert.equal(evs.length, 1);
    assert.equal(evs[0]!.subject, "fixture-plan");
    assert.deepEqual(evs[0]!.data, {
      planIdentifier: "fixture-plan",
      summary: result.summary,
      failedChecks: [],
      trigger: "request",
      runStarted: false,
      executionId: null,
    });
    // A dry run evaluates nothing; asOf asks about the past: neither is an event.
    assert.equal((await preflight({ dryRun: true })).status, 200);
    assert.equal((await preflight({ asOf: new Date(Date.now() - 60_000).toISOString() })).status, 422);
    assert.equal((await events(db)).length, 1);
    // At a run's start, refused by its gate, then started (ungated) over it.
    const gated = await app.request(
      "/api/test-runs",
      jsonReq("POST", { planIdentifier: "fixture-plan", requirePreflightPass: true }, auth),
    );
    assert.equal(gated.status, 422);
    const start = await app.request(
      "/api/test-runs",
      jsonReq("POST", { planIdentifier: "fixture-plan" }, auth),
    );
    assert.equal(start.status, 201);
    const { executionId } = await start.json() as { executionId: string };
    evs = await events(db);
    assert.deepEqual(evs.slice(1).map((e) => [e.data.trigger, e.data.runStarted, e.data.executionId]), [
      ["run-start", false, null],
      ["run-start", true, executionId],
    ]);
  },
);
