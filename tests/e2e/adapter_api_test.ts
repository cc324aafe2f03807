/**
 * An adapter through the HTTP API with the enabled modules (modules.gen.ts), for every enabled adapter whose
 * simulator exports an `apiCase` (its expectations, kept in its own member): it is listed as available,
 * registers, tests its connection, snapshots its documented labels and is pre-flighted (with a test plan
 * selecting it: the catalog's own plans are not edited here). A refused key and each fault of the case give
 * their documented status, never a 5xx, never a secret in the text; a rotated certificate fails the pin.
 */
import assert from "node:assert/strict";
import { definePlugin } from "@dutlab/core";
import type { SimulatedDevice } from "@dutlab/core/testing";
import { dbTest } from "../../core/harness/db.ts";
import { jsonReq, testServices } from "../../core/harness/app.ts";
import { adaptersWhere } from "../../core/harness/lab.ts";
import { modules } from "../../modules.gen.ts";

/** What an adapter's simulator declares about itself through the API (see adapters' `apiCase`). */
interface ApiCase {
  labels: number;
  preflight: Array<[string, string]>;
  credentials(dev: SimulatedDevice): { username: string; password: string };
  badCredentials: { username: string; password: string };
  secrets(dev: SimulatedDevice): string[];
  faults: Array<{ apply(dev: SimulatedDevice): void; status: string }>;
}

for (const a of adaptersWhere(modules, () => true)) {
  const sims = await a.sim() as Awaited<ReturnType<typeof a.sim>> & { apiCase?: ApiCase };
  const apiCase = sims.apiCase;
  if (!apiCase) continue;
  const { labControls, startSimulatedDevice } = sims;
  const plans = definePlugin({
    name: "one-vendor-plans",
    coreVersion: "^1.0.0",
    planCatalog: {
      catalogVersion: 1,
      plans: [{
        identifier: "one-vendor-decrypt-on",
        displayName: `${a.vendor} decrypt on`,
        description: `a plan that selects ${a.vendor} firewalls`,
        tlsDecrypt: "on",
        sloTargetP99Ms: 100,
        deploymentMode: "inline-routed",
        phases: [{ name: "steady", durationS: 60, load: { rps: 1 } }],
        vendors: [a.vendor],
        deviceRoles: a.adapter.deviceRoles.slice(0, 1),
        parameters: {},
      }],
    },
  });

  dbTest(
    `${a.vendor} registers, tests its connection, snapshots ${apiCase.labels} labels and passes pre-flight over the API`,
    async (db) => {
      const { app, auth } = await testServices(db, {
        ...modules,
        plugins: [{ name: "@x/plugin-one-vendor-plans", version: "0.0.1", module: plans }],
      });
      await using sim = await startSimulatedDevice();
      await labControls(sim).start?.();
      const list = await (await app.request("/api/admin/dut/devices", { headers: auth })).json();
      const vendor = list.vendors.find((v: { key: string }) => v.key === a.vendor);
      assert.equal(vendor.available, true);

      const register = async (hostname: string, credentials: { username: string; password: string }) => {
        const res = await app.request(
          "/api/admin/dut/devices",
          jsonReq("POST", {
            hostname,
            vendor: a.vendor,
            baseUrl: sim.sim.url,
            ...credentials,
            tlsVerifyMode: "self-signed",
          }, auth),
        );
        assert.equal(res.status, 201);
        return (await res.json()).deviceId as string;
      };
      const id = await register("pa-1", apiCase.credentials(sim));
      const test =
        await (await app.request(`/api/admin/dut/devices/${id}/test`, jsonReq("POST", undefined, auth)))
          .json();
      assert.equal(test.ok, true, JSON.stringify(test));
      const snap = await app.request(
        `/api/admin/dut/devices/${id}/snapshot`,
        jsonReq("POST", undefined, auth),
      );
      const poll = await snap.json();
      assert.equal(poll.ok, true, JSON.stringify(poll));
      assert.equal(poll.lastPollError, `collected ${apiCase.labels} snapshot(s)`);

      const pre = await app.request(
        "/api/test-runs/preflight",
        jsonReq("POST", { planIdentifier: "one-vendor-decrypt-on" }, auth),
      );
      const body = await pre.json();
      assert.equal(pre.status, 200, JSON.stringify(body));
      assert.deepEqual(
        body.checks.map((c: { checkId: string; status: string }) => [c.checkId, c.status]).sort(),
        apiCase.preflight,
      );

      // Faults: each a documented status in the poll result, never a 5xx, never a secret.
      const secrets = apiCase.secrets(sim);
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
        for (const s of secrets) {
          assert.ok(!JSON.stringify(device).includes(s), "a secret in the device view");
        }
        return device.lastPollStatus as string;
      };
      const badKey = await register("pa-badkey", apiCase.badCredentials);
      assert.equal(await faultPoll(badKey), "auth_failed");

      for (const f of apiCase.faults) {
        f.apply(sim);
        assert.equal(await faultPoll(id), f.status);
      }

      await sim.sim.rotateCertificate();
      assert.equal(
        await faultPoll(id),
        "tls_error",
        "the pin taken on the first connection no longer matches",
      );
    },
  );
}
