import assert from "node:assert/strict";
import { type CheckCase, checkCases, checkFixture } from "@dutlab/core/testing";
import sw from "@dutlab/adapter-vendor-a-switch";
import bmc from "@dutlab/adapter-vendor-a-bmc";
import ngfw from "@dutlab/adapter-vendor-a-ngfw";
import ngfwB from "@dutlab/adapter-vendor-b-ngfw";
import check from "./mod.ts";

const fx = checkFixture(check, { adapters: [ngfw, ngfwB, sw, bmc], plan: { tlsDecrypt: "on" } });
/** What the engine reports for this payload of a vendor-a-ngfw device (read through the adapter's facts). */
const run = (payload: unknown) =>
  fx.run("vendor-a-ngfw", payload, { snapshot: { id: "41", payloadSha256: "a".repeat(64) } });

/** An FDM `deploy_status` payload: deployment jobs and pending changes, as the adapter stores them. */
const deployStatus = (jobs: Array<[string, number]>, pending = 0) => ({
  deployments: {
    items: jobs.map(([state, queuedTime]) => ({ type: "deploymentstatus", state, queuedTime })),
  },
  pendingChanges: {
    items: Array.from({ length: pending }, (_, i) => ({ entityType: "accessrule", entityName: `r${i}` })),
  },
});

Deno.test("ngfw-deploy-clean applies to vendor-a-ngfw devices of the plan only", () => {
  assert.equal(check.label, "deploy_status");
  assert.deepEqual(check.needs, ["deployState"]);
  assert.equal(fx.applies("vendor-a-ngfw"), true);
  for (const v of ["vendor-b-ngfw", "vendor-a-switch", "vendor-a-bmc"]) assert.equal(fx.applies(v), false, v);
  assert.equal(fx.applies("vendor-a-ngfw", { plan: { ...fx.plan, vendors: ["vendor-b-ngfw"] } }), false);
  assert.equal(fx.run("vendor-a-switch", deployStatus([["DEPLOYED", 1]])), null);
});

Deno.test("ngfw-deploy-clean passes when the newest job is DEPLOYED and nothing is pending", () => {
  const r = run(deployStatus([["DEPLOY_FAILED", 1], ["DEPLOYED", 2]]));
  assert.equal(r?.status, "pass");
  assert.equal(r?.pass, true);
  assert.equal(r?.detail, "deployment state DEPLOYED, 0 pending change(s)");
  assert.deepEqual(r?.evidence, {
    snapshotId: "41",
    payloadSha256: "a".repeat(64),
    collectedAt: fx.now.toISOString(),
  });
});

/** A case: a vendor-a-ngfw `deploy_status` snapshot (id 41) holding `payload`. */
const row = (name: string, payload: unknown, expect: CheckCase["expect"]) => ({
  name,
  vendor: "vendor-a-ngfw",
  payload,
  options: { snapshot: { id: "41", payloadSha256: "a".repeat(64) } },
  expect,
});

Deno.test("ngfw-deploy-clean fails on pending changes and names their number", () => {
  checkCases(fx, [
    row("two pending changes", deployStatus([["DEPLOYED", 1]], 2), {
      status: "fail",
      pass: false,
      detail: "deployment state DEPLOYED, 2 pending change(s); deploy or discard the pending changes",
    }),
  ]);
});

Deno.test("ngfw-deploy-clean fails when the newest job is not DEPLOYED", () => {
  checkCases(fx, [
    row("newest job DEPLOYING", deployStatus([["DEPLOYED", 1], ["DEPLOYING", 5]], 1), {
      status: "fail",
      detail:
        "deployment state DEPLOYING, 1 pending change(s); expected DEPLOYED; deploy or discard the pending changes",
    }),
    row("never deployed", deployStatus([]), {
      status: "fail",
      detail: /^deployment state NO_DEPLOYMENT, 0 pending change\(s\); expected DEPLOYED$/,
    }),
  ]);
});

Deno.test("ngfw-deploy-clean reports an error, not a fail, for a payload it cannot read", () => {
  for (const payload of [{}, { deployments: [], pendingChanges: [] }, null, "DEPLOYED"]) {
    const r = run(payload);
    assert.equal(r?.status, "error", JSON.stringify(payload));
    assert.equal(r?.pass, false);
    assert.match(r!.detail, /^check error: could not evaluate the deploy_status payload \(.+\)$/);
    assert.ok(r?.evidence, "an error still cites the snapshot it could not read");
  }
});

Deno.test("ngfw-deploy-clean does not apply without a deployState reading", () => {
  // The check carries no guard: an evaluation handed no such reading is the engine's error, asserted for
  // every check in tests/e2e/preflight_engine_test.ts.
  const payload = deployStatus([["DEPLOYED", 1]]);
  assert.equal(fx.run("vendor-b-ngfw", payload), null);
});
