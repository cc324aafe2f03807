import assert from "node:assert/strict";
import { type CheckCase, checkCases, checkFixture } from "@dutlab/core/testing";
import ngfwA from "@dutlab/adapter-vendor-a-ngfw";
import ngfwB from "@dutlab/adapter-vendor-b-ngfw";
import sw from "@dutlab/adapter-vendor-a-switch";
import bmc from "@dutlab/adapter-vendor-a-bmc";
import check, { MAX_AGE_MINUTES } from "./mod.ts";

const VENDORS = ["vendor-a-ngfw", "vendor-b-ngfw", "vendor-a-switch", "vendor-a-bmc"] as const;
const fx = checkFixture(check, { adapters: [ngfwA, ngfwB, sw, bmc] });
const ago = (ms: number) => new Date(fx.now.getTime() - ms);

Deno.test("snapshot-fresh applies to every vendor the plan involves", () => {
  assert.equal(check.label, "system_info");
  assert.equal(MAX_AGE_MINUTES, 60);
  for (const v of VENDORS) assert.equal(fx.applies(v), true, v);
  assert.equal(fx.applies("vendor-a-bmc", { plan: { ...fx.plan, vendors: ["vendor-a-ngfw"] } }), false);
});

/** A case: a `vendor-a-switch` snapshot collected at `collectedAt` holding `payload`. */
const row = (
  name: string,
  collectedAt: Date,
  expect: CheckCase["expect"],
  payload: unknown = { model: "x" },
) => ({
  name,
  vendor: "vendor-a-switch",
  payload,
  options: { snapshot: { collectedAt } },
  expect,
});

Deno.test("snapshot-fresh passes under 60 minutes and fails at 60 minutes or more", () => {
  checkCases(fx, [
    row("59 min 59.999 s old", ago(59 * 60_000 + 59_999), {
      status: "pass",
      detail: "latest system_info snapshot is 59 min old (collected 2026-11-21T09:00:00.001Z; limit 60 min)",
    }),
    row("60 min old", ago(60 * 60_000), { status: "fail" }),
    row("185 min old", ago(3 * 3600_000 + 5 * 60_000), {
      status: "fail",
      detail:
        "latest system_info snapshot is 185 min old (collected 2026-11-21T06:55:00.000Z; limit 60 min): " +
        "take a snapshot, then re-run pre-flight",
    }),
  ]);
});

Deno.test("snapshot-fresh passes a snapshot stamped a little after the evaluation (clock skew)", () => {
  checkCases(fx, [
    row("2 s in the future", new Date(fx.now.getTime() + 2_000), {
      status: "pass",
      detail: /2 s after this evaluation \(clocks differ\)/,
    }),
  ]);
});

Deno.test("snapshot-fresh reads no payload: any payload shape is fine", () => {
  checkCases(
    fx,
    [null, "x", [], { present: false }].map((payload) =>
      row(`payload ${JSON.stringify(payload)}`, ago(1000), { status: "pass" }, payload)
    ),
  );
});
