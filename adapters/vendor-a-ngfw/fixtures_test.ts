/**
 * Fixture tests: the adapter polls FDM answers (certanet/firepyer captures of an FTD 6.6.1 box, completed
 * and varied from the FDM API reference where no capture exists; see testdata/README.md) through the replay
 * server, and the facts are compared with each case's expected.json.
 */
import assert from "node:assert/strict";
import { replayCase } from "@dutlab/core/testing";
import adapter from "./mod.ts";

const CASES = ["firepyer-ftd-6.6", "ntp-two-objects", "ssl-default-action-decrypt", "deploy-long-history"];
const dir = (c: string) => new URL(`./testdata/${c}`, import.meta.url);

for (const c of CASES) {
  Deno.test(`fixture ${c}: facts match expected.json`, async () => {
    const { replay } = await replayCase(adapter, dir(c));
    assert.deepEqual(replay.unmatched, [], "every request had a captured answer");
  });
}

Deno.test("fixture deploy-long-history: one request for the latest job, the history is never paged", async () => {
  const { replay, expected } = await replayCase(adapter, dir("deploy-long-history"));
  const deploy = replay.sim.requests.filter((r) => r.path === "/api/fdm/latest/operational/deploy");
  assert.equal(deploy.length, expected.deployRequests);
  assert.equal(deploy[0]!.query.get("limit"), "1");
  assert.equal(deploy[0]!.query.get("sort"), "-queuedTime");
});
