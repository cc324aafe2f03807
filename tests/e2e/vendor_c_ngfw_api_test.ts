/**
 * `vendor-c-ngfw` through the HTTP API with the enabled modules (modules.gen.ts): it is listed as available,
 * registers, tests its connection, snapshots the documented 9 labels and is pre-flighted (with a test plan
 * selecting it: the catalog's own plans are not edited here). A refused key, a pin mismatch, an HTML page and a
 * truncated XML body each give their documented status, never a 5xx, never a secret in the text.
 */
import assert from "node:assert/strict";
import { definePlugin } from "@dutlab/core";
import { dbTest } from "../../core/harness/db.ts";
import { jsonReq, testServices } from "../../core/harness/app.ts";
import { labControls, startSimulatedDevice } from "@dutlab/adapter-vendor-c-ngfw/sim";
import { CALLS } from "@dutlab/adapter-vendor-c-ngfw";
import { modules } from "../../modules.gen.ts";

const plans = definePlugin({
  name: "pan-plans",
  coreVersion: "^1.0.0",
  planCatalog: {
    catalogVersion: 1,
    plans: [{
      identifier: "pan-decrypt-on",
      displayName: "PAN-OS decrypt on",
      description: "a plan that selects vendor-c-ngfw firewalls",
      tlsDecrypt: "on",
      sloTargetP99Ms: 100,
      deploymentMode: "inline-routed",
      phases: [{ name: "steady", durationS: 60, load: { rps: 1 } }],
      vendors: ["vendor-c-ngfw"],
      deviceRoles: ["ngfw"],
      parameters: {},
    }],
  },
});

dbTest(
  "vendor-c-ngfw registers, tests its connection, snapshots 9 labels and passes pre-flight over the API",
  async (db) => {
    const { app, auth } = await testServices(db, {
      ...modules,
      plugins: [{ name: "@x/plugin-pan-plans", version: "0.0.1", module: plans }],
    });
    await using sim = await startSimulatedDevice();
    await labControls(sim).start?.();
    const list = await (await app.request("/api/admin/dut/devices", { headers: auth })).json();
    const vendor = list.vendors.find((v: { key: string }) => v.key === "vendor-c-ngfw");
    assert.equal(vendor.available, true);

    const register = async (hostname: string, credentials: { username: string; password: string }) => {
      const res = await app.request(
        "/api/admin/dut/devices",
        jsonReq("POST", {
          hostname,
          vendor: "vendor-c-ngfw",
          baseUrl: sim.url,
          ...credentials,
          tlsVerifyMode: "self-signed",
        }, auth),
      );
      assert.equal(res.status, 201);
      return (await res.json()).deviceId as string;
    };
    const id = await register("pa-1", sim.passwordCredentials);
    const test =
      await (await app.request(`/api/admin/dut/devices/${id}/test`, jsonReq("POST", undefined, auth)))
        .json();
    assert.equal(test.ok, true, JSON.stringify(test));
    const snap = await app.request(`/api/admin/dut/devices/${id}/snapshot`, jsonReq("POST", undefined, auth));
    const poll = await snap.json();
    assert.equal(poll.ok, true, JSON.stringify(poll));
    assert.equal(poll.lastPollError, "collected 9 snapshot(s)");

    const pre = await app.request(
      "/api/test-runs/preflight",
      jsonReq("POST", { planIdentifier: "pan-decrypt-on" }, auth),
    );
    const body = await pre.json();
    assert.equal(pre.status, 200, JSON.stringify(body));
    assert.deepEqual(
      body.checks.map((c: { checkId: string; status: string }) => [c.checkId, c.status]).sort(),
      [
        ["ngfw-decrypt-state-matches-plan", "pass"],
        ["ngfw-deploy-clean", "pass"],
        ["ngfw-ha-state-sane", "pass"],
        ["ntp-source-configured", "pass"],
        ["snapshot-fresh", "pass"],
      ],
    );

    // Faults: each a documented status in the poll result, never a 5xx, never a secret.
    const secrets = [sim.passwordCredentials.password, ...sim.validKeys(), "LUFRPTwrongKey000000000=="];
    const faultPoll = async (deviceId: string) => {
      const r = await app.request(
        `/api/admin/dut/devices/${deviceId}/snapshot`,
        jsonReq("POST", undefined, auth),
      );
      assert.ok(r.status < 500, `HTTP ${r.status}`);
      const text = await r.text();
      for (const s of secrets) assert.ok(!text.includes(s), "a secret in the answer");
      const device = await (await app.request(`/api/admin/dut/devices/${deviceId}`, { headers: auth }))
        .json();
      for (const s of secrets) assert.ok(!JSON.stringify(device).includes(s), "a secret in the device view");
      return device.lastPollStatus as string;
    };
    const badKey = await register("pa-badkey", { username: "apikey", password: "LUFRPTwrongKey000000000==" });
    assert.equal(await faultPoll(badKey), "auth_failed");

    sim.overrides.set(
      CALLS.ha_status.cmd,
      () =>
        new Response("<!DOCTYPE html><html><body>Login</body></html>", {
          headers: { "content-type": "text/html" },
        }),
    );
    assert.equal(await faultPoll(id), "protocol_error");
    sim.overrides.set(
      CALLS.ha_status.cmd,
      () =>
        new Response('<response status="success"><result><enabled>yes</enabled><gro', {
          headers: { "content-type": "application/xml" },
        }),
    );
    assert.equal(await faultPoll(id), "protocol_error");
    sim.overrides.clear();
    assert.equal(await faultPoll(id), "ok");

    await sim.sim.rotateCertificate();
    assert.equal(await faultPoll(id), "tls_error", "the pin taken on the first connection no longer matches");
  },
);
