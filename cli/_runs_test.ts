import assert from "node:assert/strict";
import { runLine } from "./_runs.ts";

Deno.test("a run's line labels its number, execution id and plan", () => {
  const run = {
    runId: 12,
    executionId: "0b9f4c1e-3f7a-4d2b-9c8e-5a6b7c8d9e0f",
    planIdentifier: "ngfw-throughput-decrypt-on",
    status: "finished",
    outcome: "passed",
    verdict: { value: "inconclusive" },
    reportSha256: "ab".repeat(32),
  };
  assert.equal(
    runLine({ paint: (_, s) => s }, run as never),
    "run 12 (execution 0b9f4c1e-3f7a-4d2b-9c8e-5a6b7c8d9e0f, plan ngfw-throughput-decrypt-on) finished: " +
      `verdict inconclusive, outcome passed, report sha256:${"ab".repeat(32)}`,
  );
});
