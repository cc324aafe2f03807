import assert from "node:assert/strict";
import { checkFixture } from "@dutlab/core/testing";
import ngfwA from "@dutlab/adapter-vendor-a-ngfw";
import ngfwB from "@dutlab/adapter-vendor-b-ngfw";
import sw from "@dutlab/adapter-vendor-a-switch";
import bmc from "@dutlab/adapter-vendor-a-bmc";
import check, { MAX_AGE_MINUTES } from "./mod.ts";

const VENDORS = ["vendor-a-ngfw", "vendor-b-ngfw", "vendor-a-switch", "vendor-a-bmc"] as const;
const fx = checkFixture(check, { adapters: [ngfwA, ngfwB, sw, bmc] });
const ago = (ms: number) => new Date(fx.now.getTime() - ms);
const run = (collectedAt: Date, payload: unknown = { model: "x" }) =>
  fx.run("vendor-a-switch", payload, { snapshot: { collectedAt } });

Deno.test("snapshot-fresh applies to every vendor the plan involves", () => {
  assert.equal(check.label, "system_info");
  assert.equal(MAX_AGE_MINUTES, 60);
  for (const v of VENDORS) assert.equal(fx.applies(v), true, v);
  assert.equal(fx.applies("vendor-a-bmc", { plan: { ...fx.plan, vendors: ["vendor-a-ngfw"] } }), false);
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
  const r = run(new Date(fx.now.getTime() + 2_000));
  assert.equal(r?.status, "pass");
  assert.match(r!.detail, /2 s after this evaluation \(clocks differ\)/);
});

Deno.test("snapshot-fresh reads no payload: any payload shape is fine", () => {
  for (const payload of [null, "x", [], { present: false }]) {
    assert.equal(run(ago(1000), payload)?.status, "pass");
  }
});
