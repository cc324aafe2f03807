import assert from "node:assert/strict";
import { labDecryptState } from "./assemble.ts";
import type { StartState } from "../lab/state.ts";

const lab = (...states: Array<"on" | "off" | "unknown">): StartState => ({
  devices: [],
  decrypt: Object.fromEntries(
    states.map((state, i) => [`fw-${i}`, { state, snapshotId: null, ruleCount: null }]),
  ),
});

Deno.test("the lab's decrypt state is the firewalls' common state, mixed when they differ", () => {
  assert.equal(labDecryptState(lab()), "unknown", "no firewall");
  assert.equal(labDecryptState(lab("unknown", "unknown")), "unknown");
  assert.equal(labDecryptState(lab("on", "on")), "on");
  assert.equal(labDecryptState(lab("off")), "off");
  assert.equal(labDecryptState(lab("on", "unknown")), "on", "an unreadable firewall does not count");
  assert.equal(labDecryptState(lab("on", "off")), "mixed");
  assert.equal(labDecryptState(lab("off", "unknown", "on")), "mixed");
});
