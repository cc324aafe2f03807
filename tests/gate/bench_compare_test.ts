import assert from "node:assert/strict";
import { compareFigures, formatCompare, readFigures } from "../../bench/_compare.ts";
import type { Figure } from "../../bench/_util.ts";

const fig = (name: string, value: number | null, unit: string, params?: Record<string, unknown>): Figure => ({
  scenario: "s",
  name,
  value,
  unit,
  params,
  command: "x",
});

Deno.test("bench --compare: ratio new ÷ old per figure, worse beyond the threshold in the unit's direction", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const oldPath = `${dir}/old.json`;
    await Deno.writeTextFile(
      oldPath,
      JSON.stringify({
        figures: [
          fig("latency", 100, "ms", { n: 10 }),
          fig("latency", 100, "ms", { n: 20 }),
          fig("rate", 200, "req/s"),
          fig("rate2", 200, "req/s"),
          fig("gone", 5, "s"),
          fig("measured param", 10, "ms", { wallS: 2.11 }),
        ],
      }),
    );
    const rows = compareFigures(await readFigures(oldPath), [
      fig("latency", 150, "ms", { n: 10 }), // 1.5× slower: worse
      fig("latency", 110, "ms", { n: 20 }), // 1.1×: within 20 %
      fig("rate", 100, "req/s"), // half the throughput: worse
      fig("rate2", 400, "req/s"), // better
      fig("new", 1, "s"),
      fig("measured param", 30, "ms", { wallS: 1.7 }), // pairs by scenario and name: 3× worse
    ]);
    const byKey = Object.fromEntries(rows.map((r) => [r.key, r]));
    assert.deepEqual(byKey["s / latency [n=10]"]!.ratio, 1.5);
    assert.deepEqual(byKey["s / latency [n=10]"]!.worse, true);
    assert.deepEqual(byKey["s / latency [n=20]"]!.worse, false);
    assert.deepEqual(byKey["s / rate"]!.ratio, 0.5);
    assert.deepEqual(byKey["s / rate"]!.worse, true);
    assert.deepEqual(byKey["s / rate2"]!.worse, false);
    assert.deepEqual([byKey["s / new"]!.old, byKey["s / new"]!.ratio], [null, null]);
    assert.deepEqual([byKey["s / gone"]!.new, byKey["s / gone"]!.worse], [null, false]);
    assert.deepEqual(byKey["s / measured param [wallS=1.7]"]!.ratio, 3);
    assert.deepEqual(rows.filter((r) => r.worse).length, 3);
    const text = formatCompare(rows).join("\n");
    assert.deepEqual(text.includes("1.50×"), true);
    assert.deepEqual(text.split("\n").filter((l) => l.endsWith("WORSE")).length, 3);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
