import assert from "node:assert/strict";
import type { CheckSnapshot, Plan } from "@dutlab/core";
import { checkApplies, evaluateCheck } from "@dutlab/core/testing";
import sw from "@dutlab/adapter-vendor-a-switch";
import bmc from "@dutlab/adapter-vendor-a-bmc";
import ngfw from "@dutlab/adapter-vendor-a-ngfw";
import ngfwB from "@dutlab/adapter-vendor-b-ngfw";
import check from "./mod.ts";

const NOW = new Date("2026-11-21T10:00:00Z");
const plan: Plan = {
  identifier: "unit-plan",
  displayName: "Unit plan",
  description: "",
  tlsDecrypt: "on",
  sloTargetP99Ms: 100,
  deploymentMode: "inline-routed",
  phases: [],
  vendors: ["vendor-a-ngfw", "vendor-b-ngfw", "vendor-a-switch", "vendor-a-bmc"],
  deviceRoles: ["ngfw", "switch", "bmc"],
  parameters: {},
};
const device = (vendor: string) => ({ id: "d-1", hostname: "fw-1", vendor, deviceRole: "ngfw" });
const snapshot = (vendor: string, payload: unknown): CheckSnapshot => ({
  id: "41",
  deviceId: "d-1",
  endpointLabel: "deploy_status",
  vendor,
  payload,
  payloadSha256: "a".repeat(64),
  collectedAt: NOW,
});
/** What the engine reports for this payload of a vendor-a-ngfw device (read through the adapter's facts). */
const run = (payload: unknown) =>
  evaluateCheck(check, device("vendor-a-ngfw"), plan, snapshot("vendor-a-ngfw", payload), {
    now: NOW,
    facts: ngfw.facts ?? {},
  });

/** An FDM `deploy_status` payload: deployment jobs and pending changes, as the adapter stores them. */
const deployStatus = (jobs: Array<[string, number]>, pending = 0) => ({
  deployments: {
    items: jobs.map(([state, queuedTime]) => ({ type: "deploymentstatus", state, queuedTime })),
  },
  pendingChanges: {
    items: Array.from({ length: pending }, (_, i) => ({ entityType: "accessrule", entityName: `r${i}` })),
  },
});

const ADAPTERS = {
  "vendor-a-ngfw": ngfw,
  "vendor-b-ngfw": ngfwB,
  "vendor-a-switch": sw,
  "vendor-a-bmc": bmc,
} as const;

Deno.test("ngfw-deploy-clean applies to vendor-a-ngfw devices of the plan only", () => {
  assert.equal(check.label, "deploy_status");
  assert.deepEqual(check.needs, ["deployState"]);
  assert.equal(checkApplies(check, device("vendor-a-ngfw"), plan, ngfw), true);
  for (const v of ["vendor-b-ngfw", "vendor-a-switch", "vendor-a-bmc"] as const) {
    assert.equal(checkApplies(check, device(v), plan, ADAPTERS[v]), false, v);
  }
  assert.equal(
    checkApplies(check, device("vendor-a-ngfw"), { ...plan, vendors: ["vendor-b-ngfw"] }, ngfw),
    false,
  );
  assert.equal(evaluateCheck(check, device("vendor-a-switch"), plan, null, { now: NOW, facts: {} }), null);
});

Deno.test("ngfw-deploy-clean passes when the newest job is DEPLOYED and nothing is pending", () => {
  const r = run(deployStatus([["DEPLOY_FAILED", 1], ["DEPLOYED", 2]]));
  assert.equal(r?.status, "pass");
  assert.equal(r?.pass, true);
  assert.equal(r?.detail, "deployment state DEPLOYED, 0 pending change(s)");
  assert.deepEqual(r?.evidence, {
    snapshotId: "41",
    payloadSha256: "a".repeat(64),
    collectedAt: NOW.toISOString(),
  });
});

Deno.test("ngfw-deploy-clean fails on pending changes and names their number", () => {
  const r = run(deployStatus([["DEPLOYED", 1]], 2));
  assert.equal(r?.status, "fail");
  assert.equal(r?.pass, false);
  assert.equal(
    r?.detail,
    "deployment state DEPLOYED, 2 pending change(s); deploy or discard the pending changes",
  );
});

Deno.test("ngfw-deploy-clean fails when the newest job is not DEPLOYED", () => {
  const r = run(deployStatus([["DEPLOYED", 1], ["DEPLOYING", 5]], 1));
  assert.equal(r?.status, "fail");
  assert.equal(
    r?.detail,
    "deployment state DEPLOYING, 1 pending change(s); expected DEPLOYED; deploy or discard the pending changes",
  );
  const never = run(deployStatus([]));
  assert.equal(never?.status, "fail");
  assert.match(never!.detail, /^deployment state NO_DEPLOYMENT, 0 pending change\(s\); expected DEPLOYED$/);
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

Deno.test("ngfw-deploy-clean does not apply without a deployState reading; evaluate refuses one", () => {
  const s = snapshot("vendor-b-ngfw", deployStatus([["DEPLOYED", 1]]));
  const ctx = { now: NOW, facts: ngfwB.facts ?? {} };
  assert.equal(evaluateCheck(check, device("vendor-b-ngfw"), plan, s, ctx), null);
  assert.throws(() => check.evaluate(s, plan, ctx), /vendor vendor-b-ngfw offers no deployState reading/);
});
