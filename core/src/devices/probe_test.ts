import assert from "node:assert/strict";
import { connectionDetail } from "./probe.ts";

Deno.test("a connection test without a CPU figure does not claim a CPU monitor", () => {
  const none = connectionDetail(
    { cpuPercent: null, cpuDetail: "the controller exposes no CPU figure: x" },
    12,
  );
  assert.equal(
    none,
    "Authentication succeeded; no CPU figure: the controller exposes no CPU figure: x; latency 12 ms.",
  );
  assert.doesNotMatch(none, /CPU monitor reachable/);
  assert.equal(
    connectionDetail({ cpuPercent: 7, cpuDetail: "CPU 7% from GET /cpu" }, 3, " Pinned."),
    "Authentication succeeded; CPU monitor reachable: CPU 7% from GET /cpu; latency 3 ms. Pinned.",
  );
});
