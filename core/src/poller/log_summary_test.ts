/**
 * Logs that summarise (issue 49 point 4): a scan of 1,000 unreachable devices and 500 unauthenticated
 * requests each write a handful of `info`-or-above lines; `debug` keeps every line.
 */
import assert from "node:assert/strict";
import { configure, type LogRecord, reset } from "@logtape/logtape";
import { Hono } from "hono";
import type { DeviceRow } from "../devices/store.ts";
import type { Services } from "../runtime/services.ts";
import { bearerAuth, refusalLog } from "../http/auth.ts";
import { logPoll, pollLog } from "./poll_log.ts";
import { LogSummary } from "../util/log_summary.ts";

async function capture(): Promise<LogRecord[]> {
  const records: LogRecord[] = [];
  await configure({
    reset: true,
    sinks: { mem: (r) => records.push(r) },
    loggers: [
      { category: ["dutlab"], lowestLevel: "debug", sinks: ["mem"] },
      { category: ["logtape", "meta"], lowestLevel: "error", sinks: [] },
    ],
  });
  return records;
}
const atInfo = (rs: LogRecord[]) => rs.filter((r) => r.level !== "debug" && r.level !== "trace");
const text = (r: LogRecord) => r.message.map(String).join("");

Deno.test("a scan of 1,000 unreachable devices logs at most 20 lines at info; debug keeps all", async () => {
  const records = await capture();
  try {
    for (const scan of [1, 2]) {
      const before = records.length;
      for (let i = 0; i < 1000; i++) {
        const row = {
          hostname: `fw${i}.lab.test`,
          vendor: "paloalto",
          last_poll_status: scan === 1 ? null : "unreachable",
        } as unknown as DeviceRow;
        const status = i % 10 === 0 ? "timeout" : "unreachable";
        logPoll(row, { status, error: "connect ECONNREFUSED", snapshots: [] } as never, 3);
      }
      pollLog.flush();
      const lines = records.slice(before);
      const info = atInfo(lines);
      assert.equal(lines.filter((r) => r.level === "debug").length, 1000, "debug keeps every poll");
      assert.ok(info.length <= 20, `scan ${scan}: ${info.length} lines at info or above`);
      if (scan === 1) {
        // 5 devices named, then one line per status with its count and the first hostnames.
        assert.equal(info.length, 7, info.map(text).join("\n"));
        const unreachable = info.find((r) =>
          text(r).includes("unreachable") && text(r).includes("more device")
        )!;
        assert.match(
          text(unreachable),
          /Polls of 896 more device\(s\) failed in \d+ s: unreachable: fw5\.lab\.test, fw6/,
        );
        assert.match(text(unreachable), /and 891 more$/);
        assert.ok(
          info.some((r) => /Polls of 99 more device\(s\) failed .*: timeout: fw10\.lab\.test/.test(text(r))),
        );
      } else {
        assert.equal(
          info.length,
          6,
          "status unchanged for 900: only the 100 changed ones (5 named, 1 summary)",
        );
      }
    }
  } finally {
    await reset();
  }
});

Deno.test("500 unauthenticated requests write a few log lines", async () => {
  const records = await capture();
  try {
    const svc = {
      tokens: { resolve: () => Promise.resolve(null) },
      metrics: { authRefused: { inc: () => {} } },
    } as unknown as Services;
    const app = new Hono();
    app.use("*", bearerAuth(svc));
    app.get("/api/devices", (c) => c.text("never"));
    for (let i = 0; i < 500; i++) {
      const headers: Record<string, string> = i % 2 ? { authorization: "Bearer wrong" } : {};
      const res = await app.request(`/api/devices?page=${i}`, { headers });
      assert.equal(res.status, 401);
      await res.body?.cancel();
    }
    refusalLog.flush();
    const info = atInfo(records);
    assert.equal(records.filter((r) => r.level === "debug").length, 500);
    assert.ok(info.length <= 5, info.map(text).join("\n"));
    const total = info.reduce((n, r) => n + (Number(r.properties.count) || 1), 0);
    assert.equal(total, 500, "every refusal is in a line or a count");
  } finally {
    await reset();
  }
});

Deno.test("LogSummary starts a new interval after intervalMs and writes the previous one's summary", () => {
  let now = 1_000;
  const lines: string[] = [];
  const s = new LogSummary({
    intervalMs: 60_000,
    individual: 1,
    examples: 2,
    emit: (l) => lines.push(`${l.key} ${l.count} ${l.examples.join(",")} ${l.seconds}`),
  }, () => now);
  assert.equal(s.note("missing", "a"), true);
  assert.equal(s.note("missing", "b"), false);
  assert.equal(s.note("missing", "b"), false);
  assert.equal(s.note("invalid", "c"), false);
  now += 61_000;
  assert.equal(s.note("missing", "d"), true, "a new interval logs its first event again");
  assert.deepEqual(lines, ["missing 2 b 61", "invalid 1 c 61"]);
  s.flush();
  assert.deepEqual(lines.length, 2, "nothing counted in the new interval");
});
