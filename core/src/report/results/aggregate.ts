/** Latency aggregates of a run (ms). */
export interface Aggregate {
  /** Number of samples. */
  count: number;
  /** Smallest latency (ms). */
  min_ms: number;
  /** Largest latency (ms). */
  max_ms: number;
  /** Mean latency (ms). */
  mean_ms: number;
  /** 50th percentile latency (ms). */
  p50_ms: number;
  /** 95th percentile latency (ms). */
  p95_ms: number;
  /** 99th percentile latency (ms). */
  p99_ms: number;
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** Percentile by linear interpolation between closest ranks (Hyndman-Fan type 7, as numpy's default). */
export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) throw new RangeError("no samples");
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.ceil(h);
  // 0 <= lo <= hi < sorted.length for p in [0, 1].
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!);
}

export function aggregateSamples(samples: number[]): Aggregate {
  const s = [...samples].sort((a, b) => a - b);
  const min = s[0];
  const max = s.at(-1);
  if (min === undefined || max === undefined) throw new RangeError("no samples");
  const sum = s.reduce((a, b) => a + b, 0);
  return {
    count: s.length,
    min_ms: round3(min),
    max_ms: round3(max),
    mean_ms: round3(sum / s.length),
    p50_ms: round3(percentile(s, 0.5)),
    p95_ms: round3(percentile(s, 0.95)),
    p99_ms: round3(percentile(s, 0.99)),
  };
}

/** Share of samples strictly slower than `target` (exact). */
export function shareAbove(samples: number[], target: number): number {
  return samples.filter((x) => x > target).length / samples.length;
}

/** A k6 `--summary-export` trend (http_req_duration) with p(99) (needs --summary-trend-stats). */
export interface K6Trend {
  avg: number;
  min: number;
  med: number;
  max: number;
  "p(90)"?: number;
  "p(95)": number;
  "p(99)": number;
}

export function aggregateK6(trend: K6Trend, count: number): Aggregate {
  return {
    count,
    min_ms: round3(trend.min),
    max_ms: round3(trend.max),
    mean_ms: round3(trend.avg),
    p50_ms: round3(trend.med),
    p95_ms: round3(trend["p(95)"]),
    p99_ms: round3(trend["p(99)"]),
  };
}

/**
 * Share of requests slower than `target`, interpolated from a k6 trend's known points
 * (min=0, med=0.5, p90, p95, p99, max=1) — an estimate, documented as such.
 */
export function shareAboveK6(trend: K6Trend, target: number): number {
  const pts: Array<[number, number]> = [[trend.min, 0], [trend.med, 0.5]];
  if (trend["p(90)"] !== undefined) pts.push([trend["p(90)"], 0.9]);
  pts.push([trend["p(95)"], 0.95], [trend["p(99)"], 0.99], [trend.max, 1]);
  pts.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  // At least five points (min, med, p95, p99, max), and 1 <= i < pts.length in the loop.
  if (target < pts[0]![0]) return 1;
  if (target >= pts[pts.length - 1]![0]) return 0;
  for (let i = 1; i < pts.length; i++) {
    const [x0, q0] = pts[i - 1]!;
    const [x1, q1] = pts[i]!;
    if (target >= x0 && target < x1) {
      const q = x1 === x0 ? q1 : q0 + (q1 - q0) * (target - x0) / (x1 - x0);
      return 1 - q;
    }
  }
  return 0;
}

/** Error budget burned in percent for a p99 objective (1% of requests may exceed the target). */
export function budgetBurnedPct(shareSlower: number): number {
  return Math.round(shareSlower / 0.01 * 100 * 10) / 10;
}
