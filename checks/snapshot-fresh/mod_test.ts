import assert from "node:assert/strict";
import type { CheckSnapshot, Plan } from "@dutlab/core";
import { checkApplies, evaluateCheck } from "@dutlab/core/testing";
import ngfwA from "@dutlab/adapter-vendor-a-ngfw";
import ngfwB from "@dutlab/adapter-vendor-b-ngfw";
import sw from "@dutlab/adapter-vendor-a-switch";
import bmc from "@dutlab/adapter-vendor-a-bmc";
import check, { MAX_AGE_MINUTES } from "./mod.ts";

const NOW = new Date("2026-11-21T10:00:00Z");
const VENDORS = ["vendor-a-ngfw", "vendor-b-ngfw", "vendor-a-switch", "vendor-a-bmc"] as const;
const plan: Plan = {
  identifier: "unit-plan",
  displayName: "Unit plan",
  description: "",
  tlsDecrypt: "on",
  sloTargetP99Ms: 100,
  deploymentMode: "inline-routed",
  phases: [],
  vendors: [...VENDORS],
  deviceRoles: ["ngfw", "switch", "bmc"],
  parameters: {},
};
const device = (vendor: string) => ({ id: "d-1", hostname: "dev-1", vendor, deviceRole: null });
const snapshot = (collectedAt: Date, payload: unknown = { model: "x" }): CheckSnapshot => ({
  id: "11",
  deviceId: "d-1",
  endpointLabel: "system_info",
  vendor: "vendor-a-switch",
  payload,
  payloadSha256: "e".repeat(64),
  collectedAt,
});
const ago = (ms: number) => new Date(NOW.getTime() - ms);
const run = (collectedAt: Date, payload?: unknown) =>
  evaluateCheck(check, device("vendor-a-switch"), plan, snapshot(collectedAt, payload), {
    now: NOW,
    facts: {},
  });

Deno.test("snapshot-fresh applies to every vendor the plan involves", () => {
  assert.equal(check.label, "system_info");
  assert.equal(MAX_AGE_MINUTES, 60);
  const adapters = {
    "vendor-a-ngfw": ngfwA,
    "vendor-b-ngfw": ngfwB,
    "vendor-a-switch": sw,
    "vendor-a-bmc": bmc,
  };
  for (const v of VENDORS) assert.equal(checkApplies(check, device(v), plan, adapters[v]), true, v);
  assert.equal(
    checkApplies(check, device("vendor-a-bmc"), { ...plan, vendors: ["vendor-a-ngfw"] }, bmc),
    false,
  );
});

Deno.test("snapshot-fresh passes under 60 minutes and fails at 60 minutes or more", () => {
  const fresh = run(ago(59 * 60_000 + 59_999));
  assert.equal(fresh?.status, "pass");
  assert.equal(
    fresh?.detail,
    "latest system_info snapshot is 59 min old (collected 2026-11-21T09:00:00.001Z; limit 60 min)",
  );
  const edge = run(ago(60 * 60_000));
  assert.equal(edge?.status, "fail");
  const old = run(ago(3 * 3600_000 + 5 * 60_000));
  assert.equal(old?.status, "fail");
  assert.equal(
    old?.detail,
    "latest system_info snapshot is 185 min old (collected 2026-11-21T06:55:00.000Z; limit 60 min): " +
      "take a snapshot, then re-run pre-flight",
  );
});

Deno.test("snapshot-fresh passes a snapshot stamped a little after the evaluation (clock skew)", () => {
  const r = run(new Date(NOW.getTime() + 2_000));
  assert.equal(r?.status, "pass");
  assert.match(r!.detail, /2 s after this evaluation \(clocks differ\)/);
});

Deno.test("snapshot-fresh reads no payload: any payload shape is fine", () => {
  for (const payload of [null, "x", [], { present: false }]) {
    assert.equal(run(ago(1000), payload)?.status, "pass");
  }
});
