import assert from "node:assert/strict";
import {
  aggregateK6,
  aggregateSamples,
  budgetBurnedPct,
  type K6Trend,
  percentile,
  shareAbove,
  shareAboveK6,
} from "./aggregate.ts";

Deno.test("percentiles interpolate linearly between closest ranks (numpy's default)", () => {
  // numpy.percentile([15, 20, 35, 40, 50], [50, 95, 99]) == [35, 48, 49.6]
  const s = [15, 20, 35, 40, 50];
  assert.equal(percentile(s, 0.5), 35);
  assert.equal(percentile(s, 0.95), 48);
  assert.ok(Math.abs(percentile(s, 0.99) - 49.6) < 1e-9);
  assert.equal(percentile(s, 0), 15);
  assert.equal(percentile(s, 1), 50);
  assert.throws(() => percentile([], 0.5), RangeError);
});

Deno.test("sample aggregates are exact whatever the order of the samples", () => {
  const samples = [7, 3, 10, 1, 9, 2, 8, 4, 6, 5];
  const before = [...samples];
  assert.deepEqual(aggregateSamples(samples), {
    count: 10,
    min_ms: 1,
    max_ms: 10,
    mean_ms: 5.5,
    p50_ms: 5.5,
    p95_ms: 9.55,
    p99_ms: 9.91,
  });
  assert.deepEqual(samples, before, "the input is not reordered");
  assert.deepEqual(aggregateSamples([42.25]), {
    count: 1,
    min_ms: 42.25,
    max_ms: 42.25,
    mean_ms: 42.25,
    p50_ms: 42.25,
    p95_ms: 42.25,
    p99_ms: 42.25,
  });
  // Values are rounded to the microsecond (3 decimals of a millisecond).
  assert.equal(aggregateSamples([1, 2, 2]).mean_ms, 1.667);
});

Deno.test("error budget burned is the share slower than the target over the 1 % a p99 objective allows", () => {
  const samples = Array.from({ length: 200 }, (_, i) => i + 1); // 1..200 ms
  assert.equal(shareAbove(samples, 198), 0.01); // 199 and 200
  assert.equal(budgetBurnedPct(shareAbove(samples, 198)), 100);
  assert.equal(budgetBurnedPct(shareAbove(samples, 199)), 50);
  assert.equal(budgetBurnedPct(shareAbove(samples, 200)), 0, "a sample equal to the target is not slower");
  assert.equal(budgetBurnedPct(shareAbove(samples, 190)), 500);
  assert.equal(budgetBurnedPct(0.015), 150);
});

const trend: K6Trend = {
  avg: 11.25,
  min: 2,
  med: 8,
  max: 100,
  "p(90)": 16,
  "p(95)": 22,
  "p(99)": 40,
};

Deno.test("a k6 trend maps med to p50 and keeps its own p(95) and p(99)", () => {
  assert.deepEqual(aggregateK6(trend, 5850), {
    count: 5850,
    min_ms: 2,
    max_ms: 100,
    mean_ms: 11.25,
    p50_ms: 8,
    p95_ms: 22,
    p99_ms: 40,
  });
});

Deno.test("the k6 error budget is interpolated between the exported trend points", () => {
  // 31 ms lies halfway between p(95) = 22 and p(99) = 40: 3 % slower, 300 % of the budget.
  assert.equal(budgetBurnedPct(shareAboveK6(trend, 31)), 300);
  assert.equal(budgetBurnedPct(shareAboveK6(trend, 40)), 100, "at p(99) exactly 1 % is slower");
  assert.equal(shareAboveK6(trend, 100), 0, "nothing is slower than the max");
  assert.equal(shareAboveK6(trend, 1), 1, "everything is slower than a target under the min");
  assert.ok(Math.abs(shareAboveK6(trend, 12) - 0.3) < 1e-12, "between med and p(90)");
  const noP90 = { ...trend, "p(90)": undefined };
  assert.ok(Math.abs(shareAboveK6(noP90, 15) - 0.275) < 1e-12, "p(90) is optional");
});
