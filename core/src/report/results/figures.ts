import type { Figure, ResultFigures } from "../types.ts";
import type { K6Figures } from "./k6.ts";

/** Optional counts submitted with raw latency samples (from the load generator). */
export interface RawCounts {
  requests?: number;
  failedRequests?: number;
  bytesSent?: number;
  bytesReceived?: number;
  durationS?: number;
}

/** 3 decimals, or 4 significant digits below 1 (a 0.00025 % error rate must not print as 0). */
const r3 = (x: number) => Math.abs(x) < 1 && x !== 0 ? Number(x.toPrecision(4)) : Math.round(x * 1000) / 1000;
const fig = (
  value: number,
  unit: string,
  source: Figure["source"],
  exactness: Figure["exactness"],
  basis: string,
): Figure => ({ value: r3(value), unit, source, exactness, basis });

/** A figure per second over `duration`, exact only when the duration is. */
function perSecond(total: number, unit: string, duration: Figure, basis: string): Figure | null {
  // A duration so short that the rate overflows (5e-323 s) has no rate either.
  if (!(duration.value > 0) || !Number.isFinite(total / duration.value)) return null;
  return fig(total / duration.value, unit, "service", duration.exactness, `${basis} / ${duration.basis}`);
}

/**
 * The figures of raw latency samples with optional counts. Counts given are the load generator's; what is
 * missing is computed by the service (the request count from the samples, the duration from the run's
 * start and finish, which include setup and so is an estimate).
 */
export function rawFigures(samples: number, counts: RawCounts, runDurationS: number): ResultFigures {
  const lg = (v: number, unit: string, name: string) =>
    fig(v, unit, "load-generator", "exact", `${name} as submitted`);
  const durationS = counts.durationS !== undefined
    ? lg(counts.durationS, "s", "durationS")
    : fig(runDurationS, "s", "service", "estimated", "the run's start-to-finish time");
  const requests = counts.requests !== undefined
    ? lg(counts.requests, "requests", "requests")
    : fig(samples, "requests", "service", "exact", "number of latency samples");
  const failedRequests = counts.failedRequests !== undefined
    ? lg(counts.failedRequests, "requests", "failedRequests")
    : null;
  const bytesSent = counts.bytesSent !== undefined ? lg(counts.bytesSent, "bytes", "bytesSent") : null;
  const bytesReceived = counts.bytesReceived !== undefined
    ? lg(counts.bytesReceived, "bytes", "bytesReceived")
    : null;
  const bytes = bytesSent || bytesReceived ? (bytesSent?.value ?? 0) + (bytesReceived?.value ?? 0) : null;
  return {
    durationS,
    requests,
    requestsPerSecond: perSecond(requests.value, "requests/s", durationS, "requests"),
    failedRequests,
    errorRatePct: failedRequests && requests.value > 0
      ? fig(failedRequests.value / requests.value * 100, "%", "service", "exact", "failedRequests / requests")
      : null,
    bytesSent,
    bytesReceived,
    bitsPerSecond: bytes === null
      ? null
      : perSecond(bytes * 8, "bit/s", durationS, "(bytes sent + received) × 8"),
    iterations: null,
  };
}

/** The figures of a k6 summary: k6's own counters and rates, and bits/s computed from its byte rates. */
export function k6Figures(k: K6Figures, runDurationS: number): ResultFigures {
  const lg = (v: number, unit: string, basis: string) => fig(v, unit, "load-generator", "exact", basis);
  const durationS = k.testRunDurationMs !== null
    ? lg(k.testRunDurationMs / 1000, "s", "k6 state.testRunDurationMs")
    : k.requests.rate
    ? fig(k.requests.count / k.requests.rate, "s", "service", "estimated", "k6 http_reqs count / rate")
    : fig(runDurationS, "s", "service", "estimated", "the run's start-to-finish time");
  const present = [k.dataSent, k.dataReceived].filter((x) => x !== null);
  const bytes = present.length ? present.reduce((a, x) => a + x.count, 0) : null;
  const allRates = present.length > 0 && present.every((x) => x.rate !== null);
  return {
    durationS,
    requests: lg(k.requests.count, "requests", "k6 http_reqs count"),
    requestsPerSecond: k.requests.rate !== null
      ? lg(k.requests.rate, "requests/s", "k6 http_reqs rate")
      : perSecond(k.requests.count, "requests/s", durationS, "k6 http_reqs count"),
    failedRequests: lg(k.failed.failed, "requests", "k6 http_req_failed passes (requests that failed)"),
    errorRatePct: lg(k.failed.rate * 100, "%", "k6 http_req_failed rate"),
    bytesSent: k.dataSent ? lg(k.dataSent.count, "bytes", "k6 data_sent count") : null,
    bytesReceived: k.dataReceived ? lg(k.dataReceived.count, "bytes", "k6 data_received count") : null,
    bitsPerSecond: bytes === null ? null : allRates
      ? fig(
        present.reduce((a, x) => a + x.rate!, 0) * 8,
        "bit/s",
        "service",
        "exact",
        "(k6 data_sent rate + data_received rate) × 8",
      )
      : perSecond(bytes * 8, "bit/s", durationS, "(k6 data_sent + data_received) × 8"),
    iterations: k.iterations ? lg(k.iterations.count, "iterations", "k6 iterations count") : null,
  };
}
