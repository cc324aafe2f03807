/**
 * Issue 49, logs that summarise, through the whole app (every middleware, the error handler, the routes):
 * 500 requests without a valid token write a few lines at info or above, every refusal is counted in
 * them, and debug keeps one line each. (core/src/poller/log_summary_test.ts checks the same on the auth
 * middleware alone, and the scan of 1,000 unreachable devices.)
 */
import assert from "node:assert/strict";
import { configure, type LogRecord, reset } from "@logtape/logtape";
import { fixtureModules } from "@dutlab/core/testing";
import { dbTest } from "../../core/harness/db.ts";
import { refusalLog } from "../../core/harness/core.ts";
import { testServices } from "../../core/harness/app.ts";

dbTest("500 unauthenticated requests to the app write at most a few log lines", async (db) => {
  const { app } = await testServices(db, fixtureModules());
  const records: LogRecord[] = [];
  await configure({
    reset: true,
    sinks: { mem: (r) => records.push(r) },
    loggers: [
      { category: [], lowestLevel: "debug", sinks: ["mem"] },
      { category: ["logtape", "meta"], lowestLevel: "error", sinks: [] },
    ],
  });
  try {
    refusalLog.flush();
    const paths = ["/api/admin/dut/devices", "/api/test-runs", "/api/admin/tokens", "/api/admin/testbeds"];
    const statuses = new Set<number>();
    for (let i = 0; i < 500; i++) {
      const headers: Record<string, string> = i % 3 === 0
        ? {}
        : { authorization: i % 3 === 1 ? "Bearer wrong-token-0123456789" : "Basic x" };
      const res = await app.request(`${paths[i % paths.length]}?n=${i}`, { headers });
      statuses.add(res.status);
      await res.body?.cancel();
    }
    refusalLog.flush();
    assert.ok([...statuses].every((s) => s === 401 || s === 403), `statuses ${[...statuses]}`);
    const info = records.filter((r) => r.level !== "debug" && r.level !== "trace");
    const text = info.map((r) => r.message.map(String).join("")).join("\n");
    assert.ok(info.length <= 6, `${info.length} lines at info or above:\n${text}`);
    const counted = info.reduce(
      (n, r) => n + (typeof r.properties.count === "number" ? r.properties.count : 1),
      0,
    );
    assert.equal(counted, 500, `every refusal is in a line or a count:\n${text}`);
  } finally {
    await reset();
  }
}, { only: ["postgres"] });
