/**
 * Fixture test: NX-API DME answers built from the vendor's object model documentation (no public capture
 * of a switch's NX-API REST answers was found; see testdata/README.md), replayed through the adapter.
 */
import assert from "node:assert/strict";
import { replayCase } from "@dutlab/core/testing";
import adapter from "./mod.ts";
import { childrenOf, objectsOf } from "./_dme.ts";

Deno.test("fixture ntp-admin-disabled: providers listed while datetimeClkPol.adminSt is disabled are no time source", async () => {
  const { snaps, expected, replay } = await replayCase(
    adapter,
    new URL("./testdata/ntp-admin-disabled", import.meta.url),
  );
  assert.deepEqual(replay.unmatched, []);
  // deno-lint-ignore no-explicit-any
  const ntp = snaps.find((s) => s.label === "ntp_config")!.payload as any;
  const [pol] = objectsOf(ntp, "datetimeClkPol");
  assert.ok(pol, "no datetimeClkPol object");
  assert.equal(pol.attributes.adminSt, "disabled");
  assert.equal(childrenOf(pol, "datetimeNtpProvider").length, expected.listedProviders);
});
