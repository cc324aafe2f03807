import assert from "node:assert/strict";
import { Foreground } from "./foreground.ts";

Deno.test("the API counts as busy while a request is answered and quietMs after the last one", async () => {
  const fg = new Foreground(50);
  assert.equal(fg.busy, false, "nothing answered yet");
  const a = fg.enter();
  const b = fg.enter();
  assert.equal(fg.busy, true);
  a();
  a(); // a second end of the same request counts once
  assert.equal(fg.busy, true, "b is still in flight");
  await new Promise((r) => setTimeout(r, 80));
  assert.equal(fg.busy, true, "b is still in flight after quietMs");
  b();
  assert.equal(fg.busy, true, "within quietMs of the last answer");
  await new Promise((r) => setTimeout(r, 80));
  assert.equal(fg.busy, false, "quiet after quietMs");
});
