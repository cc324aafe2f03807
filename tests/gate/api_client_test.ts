/**
 * Issue 21: a TypeScript client generated from the OpenAPI document (openapi-typescript, committed in
 * cli/generated, where the CLI imports it, and checked for staleness) drives every documented operation through openapi-fetch.
 * `deno check` type-checks each call against the document; the test fails when an operation is not called.
 */
import assert from "node:assert/strict";
import createClient from "openapi-fetch";
import { dbTest } from "../../core/harness/db.ts";
import { testServices } from "../../core/harness/app.ts";
import { fixtureModules, startFixtureDevice } from "@dutlab/core/testing";
import type { paths } from "../../cli/generated/dutlab-api.ts";
import { CLIENT_FILE, generateClient } from "../../tools/gen_api_client.ts";
import { generatedDevices, PEER_TOKEN, startNetBoxPeer } from "../../tools/netbox_peer.ts";

Deno.test("the committed client types match the served document", async () => {
  assert.equal(await Deno.readTextFile(CLIENT_FILE), await generateClient(), "run `deno task api:client`");
});

dbTest("a generated client calls every operation of the document", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const doc = await (await app.request("/api/openapi.json")).json();
  const called = new Set<string>();
  const templates = Object.entries(doc.paths as Record<string, Record<string, { operationId: string }>>)
    .flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => ({
        re: new RegExp(`^${path.replace(/[.]/g, "\\.").replace(/\{[^}]+\}/g, "[^/]+")}$`),
        method: method.toUpperCase(),
        id: op.operationId,
      }))
    );
  const client = createClient<paths>({
    baseUrl: "http://127.0.0.1",
    headers: auth,
    fetch: async (req: Request) => {
      const path = new URL(req.url).pathname;
      const op = templates.find((t) => t.method === req.method && t.re.test(path));
      if (op) called.add(op.id);
      return await app.request(req);
    },
  });
  const sim = await startFixtureDevice();
  try {
    assert.equal((await client.GET("/healthz")).data?.status, "ok");
    assert.equal((await client.GET("/readyz")).data?.status, "ready");
    assert.match((await client.GET("/metrics", { parseAs: "text" })).data ?? "", /dutlab_polls_total/);
    assert.equal((await client.GET("/api/openapi.json")).response.status, 200);
    assert.match((await client.GET("/api/docs", { parseAs: "text" })).data ?? "", /swagger-ui/);
    const asset = await client.GET("/api/docs/assets/{file}", {
      params: { path: { file: "init.js" } },
      parseAs: "text",
    });
    assert.equal(asset.response.status, 200);

    const created = await client.POST("/api/admin/dut/devices", {
      body: {
        hostname: "client-fw",
        vendor: "fixture-fw",
        baseUrl: sim.sim.url,
        username: "admin",
        password: sim.state.password,
        tlsVerifyMode: "insecure",
        pollIntervalSeconds: 300,
        enabled: true,
      },
    });
    const id = created.data!.deviceId;
    const one = await client.GET("/api/admin/dut/devices/{id}", { params: { path: { id } } });
    assert.equal(one.data?.hostname, "client-fw");
    const page = await client.GET("/api/admin/dut/devices", {
      params: { query: { limit: 10, q: "client" } },
    });
    assert.equal(page.data?.devices.length, 1);
    assert.equal(page.data?.nextCursor, null);
    const patched = await client.PATCH("/api/admin/dut/devices/{id}", {
      params: { path: { id } },
      body: { notes: "typed client" },
    });
    assert.equal(patched.data?.notes, "typed client");
    const test = await client.POST("/api/admin/dut/devices/{id}/test", { params: { path: { id } } });
    assert.equal(test.data?.ok, true, test.data?.detail ?? "");
    const snap = await client.POST("/api/admin/dut/devices/{id}/snapshot", { params: { path: { id } } });
    assert.equal(snap.data?.lastPollStatus, "ok");
    const snaps = await client.GET("/api/admin/dut/snapshots", { params: { query: { deviceId: id } } });
    const sid = snaps.data!.snapshots[0]!.id;
    const s1 = await client.GET("/api/admin/dut/snapshots/{id}", { params: { path: { id: sid } } });
    assert.equal(s1.data?.id, sid);
    // Issue 22: a second poll of the unchanged device diffs empty and lists no change.
    await client.POST("/api/admin/dut/devices/{id}/snapshot", { params: { path: { id } } });
    const again = await client.GET("/api/admin/dut/snapshots", { params: { query: { deviceId: id } } });
    const diff = await client.GET("/api/admin/dut/snapshots/{id}/diff", {
      params: { path: { id: again.data!.snapshots[0]!.id } },
    });
    assert.deepEqual([diff.data?.equal, diff.data?.patch], [true, []]);
    const changes = await client.GET("/api/admin/dut/devices/{id}/changes", { params: { path: { id } } });
    assert.deepEqual(changes.data?.changes, []);

    const plans = await client.GET("/api/test-runs/plans");
    const planIdentifier = plans.data!.plans[0]!.identifier;
    const pf = await client.POST("/api/test-runs/preflight", { body: { planIdentifier } });
    assert.ok(pf.response.status === 200 || pf.response.status === 422);
    const run = await client.POST("/api/test-runs", { body: { planIdentifier, licenseId: "ACME-1" } });
    const executionId = run.data!.executionId;
    const runs = await client.GET("/api/test-runs", { params: { query: { status: "active" } } });
    assert.deepEqual(runs.data?.runs.map((r) => r.executionId), [executionId]);
    const got = await client.GET("/api/test-runs/{executionId}", { params: { path: { executionId } } });
    // The run is served as JSON or, with ?format=, as text: the typed data is the union of both.
    assert.equal(typeof got.data === "object" ? got.data.status : got.data, "active");
    const fin = await client.POST("/api/test-runs/{executionId}/finish", {
      params: { path: { executionId } },
      body: { outcome: "passed", results: { latencySamplesMs: [1, 2, 3] } },
    });
    assert.equal(fin.data?.status, "finished");
    const rep = await client.GET("/api/test-runs/{executionId}/report.json", {
      params: { path: { executionId } },
    });
    assert.equal(rep.response.headers.get("x-report-sha256"), fin.data?.reportSha256);
    const keys = await client.GET("/api/report-keys");
    assert.ok((keys.data?.keys.length ?? 0) >= 1);
    assert.equal(keys.data?.certificates.length, 1);
    const envelope = await client.GET("/api/test-runs/{executionId}/report.dsse.json", {
      params: { path: { executionId } },
    });
    assert.equal(
      envelope.response.headers.get("x-report-signature-key"),
      rep.response.headers.get("x-report-signature-key"),
    );
    const attestations = await client.GET("/api/test-runs/{executionId}/attestations", {
      params: { path: { executionId } },
    });
    assert.deepEqual(attestations.data?.attestations.map((a) => a.predicateType), [
      "urn:dutlab:predicate:test-report:v1",
      "https://in-toto.io/attestation/test-result/v0.1",
    ]);
    // A share link that was never issued, without a token (a sent token is judged alone): 403 without
    // starting a browser.
    const pdf = await client.GET("/api/test-runs/{executionId}/report.pdf", {
      params: { path: { executionId }, query: { exp: "1", sig: "forged" } },
      headers: { authorization: null },
      parseAs: "arrayBuffer",
    });
    assert.equal(pdf.response.status, 403);
    const evidence = await client.GET("/api/test-runs/{executionId}/evidence", {
      params: { path: { executionId }, query: { exp: "1", sig: "forged" } },
      headers: { authorization: null },
      parseAs: "arrayBuffer",
    });
    assert.equal(evidence.response.status, 403);
    const replay = await client.POST("/api/test-runs/{executionId}/replay", {
      params: { path: { executionId } },
    });
    assert.equal(replay.data?.reproduced, true, JSON.stringify(replay.data?.lines));
    // One finished run is no comparison: both routes refuse it with a 4xx (core/src/runs/compare_test.ts compares).
    const cmp = await client.POST("/api/test-runs/compare", { body: { executionIds: [executionId] } });
    assert.equal(cmp.response.status, 400);
    const cmpGet = await client.GET("/api/test-runs/compare", {
      params: { query: { ids: executionId, format: "junit" } },
      parseAs: "text",
    });
    assert.equal(cmpGet.response.status, 400);
    const cmpPage = await client.GET("/runs/compare", {
      params: { query: { ids: executionId } },
      parseAs: "text",
    });
    assert.ok(
      cmpPage.response.status >= 400 && cmpPage.response.status < 500,
      String(cmpPage.response.status),
    );
    const verifier = await client.GET("/verify-report.ts", { parseAs: "text" });
    assert.match(verifier.data ?? "", /verify_report\.ts/);
    const share = await client.POST("/api/test-runs/{executionId}/share", {
      params: { path: { executionId } },
    });
    const link = new URL(share.data!.url);
    const html = await client.GET("/runs/{executionId}/report", {
      params: {
        path: { executionId },
        query: { exp: link.searchParams.get("exp")!, sig: link.searchParams.get("sig")! },
      },
      parseAs: "text",
    });
    assert.equal(html.response.status, 200);

    const del = await client.DELETE("/api/admin/dut/devices/{id}", { params: { path: { id } } });
    assert.equal(del.data?.ok, true);

    const events = await client.GET("/api/events", {
      params: { header: { "Last-Event-ID": "0" } },
      parseAs: "stream",
    });
    const reader = events.data!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes("event: device.changed")) text += (await reader.read()).value ?? "";
    await reader.cancel();
    assert.match(text, /^event: stream\.open$/m);

    const tok = await client.POST("/api/admin/tokens", { body: { name: "typed", role: "viewer" } });
    assert.equal(tok.data?.role, "viewer");
    const toks = await client.GET("/api/admin/tokens");
    assert.deepEqual(toks.data?.tokens.map((t) => t.name), ["typed"]);
    const rev = await client.DELETE("/api/admin/tokens/{id}", { params: { path: { id: tok.data!.id } } });
    assert.ok(rev.data?.revokedAt);
    const audit = await client.GET("/api/admin/audit", {
      params: { query: { method: "DELETE", limit: 10 } },
    });
    assert.deepEqual(audit.data?.entries.map((e) => e.route), [
      "/api/admin/tokens/:id",
      "/api/admin/dut/devices/:id",
    ]);
    const pruned = await client.POST("/api/admin/dut/snapshots/prune", {
      body: { olderThanDays: 30, keepOnePer: "hour", dryRun: true },
    });
    assert.equal(pruned.data?.dryRun, true);
    assert.equal(pruned.data?.snapshots, 0);
    const prunes = await client.GET("/api/admin/dut/snapshot-prunes");
    assert.deepEqual(prunes.data?.prunes, [], "a dry run is not recorded");
    const backup = await client.GET("/api/admin/backup", { parseAs: "arrayBuffer" });
    assert.ok((backup.data as ArrayBuffer).byteLength > 0);
    const schema = await client.GET("/api/lab.schema.json", { parseAs: "json" });
    assert.equal(
      (schema.data as { $schema?: string }).$schema,
      "https://json-schema.org/draft/2020-12/schema",
    );
    const lab = {
      apiVersion: "dutlab/v1" as const,
      kind: "Lab" as const,
      metadata: { name: "client-lab" },
      credentials: { admin: { username: "admin", password: "env:CLIENT_LAB_PASSWORD" } },
      devices: [{
        hostname: "client-lab-fw",
        vendor: "fixture-fw",
        baseUrl: "https://127.0.0.1:9",
        credential: "admin",
      }],
    };
    const plan = await client.POST("/api/admin/dut/lab/plan", { body: { lab, secrets: { admin: "pw" } } });
    assert.equal(plan.data?.summary.create, 1);
    const applied = await client.POST("/api/admin/dut/lab/apply", {
      body: {
        lab,
        secrets: { admin: "pw" },
        expectedGeneration: plan.data!.generation,
        planHash: plan.data!.planHash,
      },
    });
    assert.equal(applied.data?.generation, 1);

    // NetBox (issue 50): an import from the local peer, the recorded syncs, a run's journal write-back.
    const peer = startNetBoxPeer({ devices: generatedDevices(3) });
    try {
      const netbox = { url: peer.url, token: PEER_TOKEN };
      const imported = await client.POST("/api/admin/dut/lab/from-netbox", {
        body: {
          netbox,
          filters: [{ name: "site", value: "lab-a" }],
          mapping: {
            apiVersion: "dutlab/v1",
            kind: "NetBoxMapping",
            lab: "client-netbox",
            vendor: [{ match: {}, vendor: "fixture-fw" }],
            managementUrl: { from: "primaryIp", port: 8443 },
            rules: [{ match: {}, credential: "admin" }],
            credentials: { admin: { username: "admin", password: "env:CLIENT_NB_PASSWORD" } },
          },
        },
      });
      assert.equal(imported.data?.lab.devices.length, 1);
      const syncs = await client.GET("/api/admin/dut/netbox/syncs");
      assert.equal(syncs.data?.syncs.length, 1);
      const journal = await client.POST("/api/admin/dut/runs/{executionId}/netbox-journal", {
        params: { path: { executionId } },
        body: { netbox },
      });
      assert.equal(journal.response.status, 200);
      const shown = await client.GET("/api/admin/dut/runs/{executionId}/netbox-journal", {
        params: { path: { executionId } },
      });
      assert.equal(shown.data?.executionId, executionId);
    } finally {
      await peer.close();
    }
    // Testbeds and reservations (docs/reservations.md).
    const tb = await client.PUT("/api/admin/testbeds/{name}", {
      params: { path: { name: "client-tb" } },
      body: { selector: { hostnames: ["client-lab-fw"] } },
    });
    assert.deepEqual(tb.data?.devices.map((d) => d.hostname), ["client-lab-fw"]);
    assert.equal((await client.GET("/api/admin/testbeds")).data?.testbeds.length, 1);
    const tbOne = await client.GET("/api/admin/testbeds/{name}", { params: { path: { name: "client-tb" } } });
    assert.equal(tbOne.data?.name, "client-tb");
    const res = await client.POST("/api/admin/reservations", {
      body: { testbed: "client-tb", leaseSeconds: 60 },
    });
    assert.equal(res.data?.state, "held");
    const rid = { params: { path: { id: res.data!.id } } };
    assert.equal((await client.GET("/api/admin/reservations/{id}", rid)).data?.holder, "bootstrap-admin");
    assert.equal((await client.GET("/api/admin/reservations")).data?.reservations.length, 1);
    assert.equal(
      (await client.POST("/api/admin/reservations/{id}/renew", { ...rid, body: {} })).data?.state,
      "held",
    );
    const released = await client.POST("/api/admin/reservations/{id}/release", {
      ...rid,
      body: { reason: "done" },
    });
    assert.equal(released.data?.endReason, "released by bootstrap-admin: done");
    const gone = await client.DELETE("/api/admin/testbeds/{name}", {
      params: { path: { name: "client-tb" } },
    });
    assert.equal(gone.data?.ok, true);
    // Webhook subscriptions (docs/notifications.md): a loopback receiver that is never started, so the ping
    // stays queued (redeliver of a pending delivery is a 409, as documented).
    const hook = await client.POST("/api/admin/webhooks", {
      body: { name: "client-hook", url: "https://127.0.0.1:9/hook", eventTypes: ["dutlab.run.finished"] },
    });
    assert.match(hook.data?.secret ?? "", /^whsec_/);
    const hid = { params: { path: { id: hook.data!.id } } };
    assert.equal((await client.GET("/api/admin/webhooks")).data?.subscriptions.length, 1);
    assert.equal((await client.GET("/api/admin/webhooks/{id}", hid)).data?.name, "client-hook");
    const renamed = await client.PATCH("/api/admin/webhooks/{id}", {
      ...hid,
      body: { name: "client-hook-2" },
    });
    assert.equal(renamed.data?.name, "client-hook-2");
    const rotated = await client.POST("/api/admin/webhooks/{id}/rotate-secret", {
      ...hid,
      body: { overlapSeconds: 0 },
    });
    assert.notEqual(rotated.data?.secret, hook.data?.secret);
    const ping = await client.POST("/api/admin/webhooks/{id}/ping", hid);
    assert.equal(ping.response.status, 202);
    const deliveries = await client.GET("/api/admin/webhooks/{id}/deliveries", {
      params: { path: { id: hook.data!.id }, query: { limit: 10 } },
    });
    assert.equal(deliveries.data?.deliveries[0]?.eventType, "dutlab.webhook.ping");
    const redelivered = await client.POST("/api/admin/webhooks/{id}/deliveries/{deliveryId}/redeliver", {
      params: { path: { id: hook.data!.id, deliveryId: ping.data!.deliveryId } },
    });
    assert.equal(redelivered.response.status, 409);
    assert.equal((await client.DELETE("/api/admin/webhooks/{id}", hid)).data?.name, "client-hook-2");
  } finally {
    await sim.sim.close();
  }
  const all = new Set(templates.map((t) => t.id));
  assert.deepEqual([...all].filter((id) => !called.has(id)).sort(), [], "operations never called");
});
