/**
 * Helpers for the test-run and report tests: register devices through the API, snapshot them through the
 * manual snapshot endpoint, start and finish runs, and a k6 `--summary-export` document.
 */
import assert from "node:assert/strict";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { jsonReq } from "./app.ts";
import type { SimulatedDevice } from "@dutlab/core/testing";

export type App = OpenAPIHono;
export type Auth = Record<string, string>;

/** Register a device (self-signed TLS, pinned on first connect) and return its id. */
export async function register(
  app: App,
  auth: Auth,
  vendor: string,
  hostname: string,
  dev: { sim: { url: string }; credentials: { username: string; password: string } },
): Promise<string> {
  const res = await app.request(
    "/api/admin/dut/devices",
    jsonReq("POST", {
      hostname,
      vendor,
      baseUrl: dev.sim.url,
      username: dev.credentials.username,
      password: dev.credentials.password,
      tlsVerifyMode: "self-signed",
    }, auth),
  );
  const body = await res.json();
  assert.equal(res.status, 201, JSON.stringify(body));
  return body.deviceId;
}

/** One manual poll (spec 4.4); asserts it succeeded. */
export async function snapshot(
  app: App,
  auth: Auth,
  deviceId: string,
): Promise<{ lastPollError: string; lastPollAt: string }> {
  const res = await app.request(
    `/api/admin/dut/devices/${deviceId}/snapshot`,
    jsonReq("POST", undefined, auth),
  );
  const body = await res.json();
  assert.equal(body.ok, true, JSON.stringify(body));
  return body;
}

/** `POST /api/test-runs`; asserts 201. */
export async function startRun(
  app: App,
  auth: Auth,
  body: Record<string, unknown>,
): Promise<Record<string, unknown> & { executionId: string }> {
  const res = await app.request("/api/test-runs", jsonReq("POST", body, auth));
  const run = await res.json();
  assert.equal(res.status, 201, JSON.stringify(run));
  return run;
}

/** `POST /api/test-runs/{id}/finish`; asserts 200. */
export async function finishRun(
  app: App,
  auth: Auth,
  executionId: string,
  body: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const res = await app.request(`/api/test-runs/${executionId}/finish`, jsonReq("POST", body, auth));
  const run = await res.json();
  assert.equal(res.status, 200, JSON.stringify(run));
  return run;
}

/** `GET /api/test-runs/{id}/report.json`: status, headers and the exact text. */
export async function fetchReport(app: App, auth: Auth, executionId: string) {
  const res = await app.request(`/api/test-runs/${executionId}/report.json`, { headers: auth });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** Close simulators, ignoring the ones already closed. */
export async function closeAll(sims: SimulatedDevice[]): Promise<void> {
  await Promise.allSettled(sims.map((s) => s.close()));
}

/**
 * A k6 `--summary-export` file as k6 writes it (flat trend values, a submetric, counters, rates,
 * `root_group`), run with `--summary-trend-stats "avg,min,med,max,p(90),p(95),p(99)"` so that the
 * trends carry p(99). Shaped after real summary-export output; the numbers are ours.
 */
export function k6SummaryExport(): { metrics: Record<string, unknown>; root_group: unknown } {
  const duration = {
    avg: 18.402716,
    min: 3.1187,
    med: 14.90235,
    max: 412.5531,
    "p(90)": 31.204467,
    "p(95)": 44.80152,
    "p(99)": 97.33018,
  };
  return {
    metrics: {
      http_req_blocked: {
        avg: 0.2,
        min: 0.05,
        med: 0.1,
        max: 40.2,
        "p(90)": 0.2,
        "p(95)": 0.31,
        "p(99)": 1.2,
      },
      "http_req_duration{expected_response:true}": { ...duration },
      http_req_failed: { passes: 0, fails: 12000, value: 0 },
      http_reqs: { count: 12000, rate: 199.87 },
      iterations: { count: 12000, rate: 199.87 },
      checks: { passes: 12000, fails: 0, value: 1 },
      data_received: { count: 84213000, rate: 1402646.1 },
      vus: { value: 40, min: 40, max: 40 },
      http_req_duration: duration,
    },
    root_group: {
      name: "",
      path: "",
      id: "d41d8cd98f00b204e9800998ecf8427e",
      groups: {},
      checks: {
        "status is 200": {
          name: "status is 200",
          path: "::status is 200",
          id: "6210a8cd14cd70477eba5c5e4cb3fb5f",
          passes: 12000,
          fails: 0,
        },
      },
    },
  };
}

/** The samples 1, 2, …, n in a fixed shuffled order. */
export function shuffledRange(n: number): number[] {
  const a = Array.from({ length: n }, (_, i) => i + 1);
  let seed = 7;
  for (let i = a.length - 1; i > 0; i--) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    const j = seed % (i + 1);
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/**
 * The JSON of `handleSummary(data)` as current k6 releases pass it (`{type, contains, values,
 * thresholds: {<expr>: {ok}}}` per metric, `state.testRunDurationMs`), for a 90-second run with 434 failed
 * requests of 12,000 and a crossed `http_req_failed` threshold. Shaped after k6's summary code
 * (`js/summary.go`, summarizeMetricsToObject); the numbers are ours.
 */
export function k6HandleSummary(): Record<string, unknown> {
  const trend = {
    avg: 18.402716,
    min: 3.1187,
    med: 14.90235,
    max: 412.5531,
    "p(90)": 31.204467,
    "p(95)": 44.80152,
    "p(99)": 97.33018,
  };
  return {
    root_group: { name: "", path: "", id: "d41d8cd98f00b204e9800998ecf8427e", groups: [], checks: [] },
    options: { summaryTrendStats: ["avg", "min", "med", "max", "p(90)", "p(95)", "p(99)"], noColor: false },
    state: { isStdOutTTY: false, isStdErrTTY: false, testRunDurationMs: 90012.5 },
    metrics: {
      http_req_duration: {
        type: "trend",
        contains: "time",
        values: trend,
        thresholds: { "p(95)<500": { ok: true } },
      },
      http_reqs: { type: "counter", contains: "default", values: { count: 12000, rate: 133.3148 } },
      http_req_failed: {
        type: "rate",
        contains: "default",
        values: { rate: 0.036166666666666666, passes: 434, fails: 11566 },
        thresholds: { "rate<0.01": { ok: false } },
      },
      data_sent: { type: "counter", contains: "data", values: { count: 1620000, rate: 17997.5 } },
      data_received: { type: "counter", contains: "data", values: { count: 84213000, rate: 935577.5 } },
      iterations: { type: "counter", contains: "default", values: { count: 12000, rate: 133.3148 } },
      checks: { type: "rate", contains: "default", values: { rate: 0.963833, passes: 11566, fails: 434 } },
      vus: { type: "gauge", contains: "default", values: { value: 40, min: 40, max: 40 } },
    },
  };
}
