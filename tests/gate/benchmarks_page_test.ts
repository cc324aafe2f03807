/**
 * BENCHMARKS.md is generated (issue 47 point 4): `tools/dev/gen_benchmarks.ts --check` passes on the
 * repository, fails on a page whose figure was edited by hand (naming the command that regenerates it), and
 * the generator fails when a figure its targets table names is missing from the results file.
 */
import assert from "node:assert/strict";
import { compareFigures, formatCompare, readFigures } from "../../bench/_compare.ts";
import type { Figure } from "../../bench/_util.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const TOOL = `${ROOT}tools/dev/gen_benchmarks.ts`;

/** The generator as `deno task bench:md` runs it, in the inherited environment. */
async function generator(...args: string[]) {
  const o = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--lock=deno.dev.lock", TOOL, ...args],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: o.code, out: dec.decode(o.stdout) + dec.decode(o.stderr) };
}

Deno.test("BENCHMARKS.md is the rendering of its results file and bench/METHOD.md", async () => {
  const r = await generator("--check");
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /is current \(rendered from bench\/results-full-s\d+\.json\)/);
  const page = await Deno.readTextFile(`${ROOT}BENCHMARKS.md`);
  // 400 lines, plus 10 for issue 50's NetBox scenario (its targets, its results file, its method section),
  // plus 15 for issue 53's floors (its targets table beside the guards), plus 14 for issue 51's webhook
  // scenario (its rows, its results file, its method section), plus 35 for issue 48's scale-out (the 1-2-3
  // instance rows, its results file, its method section and the 100,000-device paper model).
  assert.ok(page.split("\n").length <= 475, "BENCHMARKS.md stays within 474 lines");
});

Deno.test("a figure edited by hand in BENCHMARKS.md makes the check fail", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "dutlab-bench-page-" });
  try {
    const page = await Deno.readTextFile(`${ROOT}BENCHMARKS.md`);
    const edited = page.replace(/ 4\.89 s \|/, " 3.89 s |");
    assert.notEqual(edited, page, "the page shows the N = 1,000 PostgreSQL scan time");
    await Deno.writeTextFile(`${tmp}/BENCHMARKS.md`, edited);
    const r = await generator("--check", "--page", `${tmp}/BENCHMARKS.md`);
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /is stale: .* run `npx -y deno@2\.9\.6 task bench:md`/);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("a renamed figure that the targets table names fails the generator", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "dutlab-bench-page-" });
  try {
    const results = JSON.parse(await Deno.readTextFile(`${ROOT}bench/results-full-s14.json`)) as {
      figures: Array<{ scenario: string; name: string }>;
    };
    const fig = results.figures.find((f) => f.scenario === "diffs" && f.name.endsWith(", p95"));
    assert.ok(fig, "the run has the diff's p95");
    fig.name = "diff, p95";
    await Deno.writeTextFile(`${tmp}/results.json`, JSON.stringify(results));
    await Deno.copyFile(`${ROOT}BENCHMARKS.md`, `${tmp}/BENCHMARKS.md`);
    const r = await generator(
      "--check",
      "--results",
      `${tmp}/results.json`,
      "--page",
      `${tmp}/BENCHMARKS.md`,
    );
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /0 figures match .*diff of two 1 MiB payloads, p95.*update TARGET_ROWS/);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

// `deno task bench --compare` (bench/_compare.ts): two results files' figures side by side.
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
