/**
 * BENCHMARKS.md is generated (issue 47 point 4): `tools/dev/gen_benchmarks.ts --check` passes on the
 * repository, fails on a page whose figure was edited by hand (naming the command that regenerates it), and
 * the generator fails when a figure its targets table names is missing from the results file.
 */
import assert from "node:assert/strict";
import { compareFigures, formatCompare, readFigures } from "../../bench/_compare.ts";
import type { Figure } from "../../bench/_util.ts";
import { DEFAULT_RESULTS } from "../../tools/dev/gen_benchmarks.ts";

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
  // instance rows, its results file, its method section and the 100,000-device paper model), plus 36 for
  // issue 49's lab of 5,000 devices (its rows, its results file, its method section), plus 20 for issue 53's
  // scan scenario (its rows with and without the PGlite worker, its results file, the worker's figures).
  assert.ok(page.split("\n").length <= 531, "BENCHMARKS.md stays within 530 lines");
});

Deno.test("a figure edited by hand in BENCHMARKS.md makes the check fail", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "dutlab-bench-page-" });
  try {
    const page = await Deno.readTextFile(`${ROOT}BENCHMARKS.md`);
    // The N = 1,000 PostgreSQL scan time, one second more (whatever the rendered run measured).
    const edited = page.split("\n").map((line) =>
      /\| time to poll all N devices \(one scan\) +\| n=1,000, backend=postgres +\|/.test(line)
        ? line.replace(/ (\d+(?:\.\d+)?) s \|/, (_, v: string) => ` ${(Number(v) + 1).toFixed(2)} s |`)
        : line
    ).join("\n");
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
    const results = JSON.parse(await Deno.readTextFile(`${ROOT}/${DEFAULT_RESULTS}`)) as {
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
const fig = (
  name: string,
  value: number | null,
  unit: string,
  params?: Record<string, unknown>,
  target?: string,
): Figure => ({ scenario: "s", name, value, unit, params, command: "x", ...(target ? { target } : {}) });

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
          fig("measured param", 10, "ms", { elapsedS: 2.11 }),
          fig("per instance", 10, "ms", { instance: 1, loadAvg: "2.36 1.64 1.26" }),
          fig("per instance", 20, "ms", { instance: 2, loadAvg: "1.01 1.61 1.34" }),
          fig("throughput ratio up", 1.05, "ratio", undefined, ">= 0.3, p99 <= 100 ms"),
          fig("throughput ratio down", 1.05, "ratio", undefined, ">= 0.3, p99 <= 100 ms"),
          fig("per minute", 3000, "polls/min"),
          fig("bounded above", 1.05, "ratio", undefined, "≤ 1.5"),
        ],
      }),
    );
    const rows = compareFigures(await readFigures(oldPath), [
      fig("latency", 150, "ms", { n: 10 }), // 1.5× slower: worse
      fig("latency", 110, "ms", { n: 20 }), // 1.1×: within 20 %
      fig("rate", 100, "req/s"), // half the throughput: worse
      fig("rate2", 400, "req/s"), // better
      fig("new", 1, "s"),
      fig("measured param", 30, "ms", { elapsedS: 1.7 }), // pairs by scenario and name: 3× worse
      // Two figures of one name whose load average differs: a listed measured param, not their identity.
      fig("per instance", 11, "ms", { instance: 1, loadAvg: "0.97 1.2 0.99" }),
      fig("per instance", 40, "ms", { instance: 2, loadAvg: "0.09 0.71 0.83" }), // 2× worse
      // A lower-bound target makes higher better (s24's `--compare` flagged a better throughput ratio).
      fig("throughput ratio up", 1.3, "ratio", undefined, ">= 0.3, p99 <= 100 ms"),
      fig("throughput ratio down", 0.8, "ratio", undefined, ">= 0.3, p99 <= 100 ms"), // worse
      fig("per minute", 2000, "polls/min"), // a third fewer polls: worse
      fig("bounded above", 1.3, "ratio", undefined, "≤ 1.5"), // worse
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
    assert.deepEqual(byKey["s / measured param [elapsedS=1.7]"]!.ratio, 3);
    assert.deepEqual([
      byKey["s / per instance [instance=1]"]!.ratio,
      byKey["s / per instance [instance=2]"]!.ratio,
    ], [
      1.1,
      2,
    ]);
    assert.deepEqual(byKey["s / throughput ratio up"]!.worse, false);
    assert.deepEqual(byKey["s / throughput ratio down"]!.worse, true);
    assert.deepEqual(byKey["s / per minute"]!.worse, true);
    assert.deepEqual(byKey["s / bounded above"]!.worse, true);
    assert.deepEqual(rows.filter((r) => r.worse).length, 7);
    const text = formatCompare(rows).join("\n");
    assert.deepEqual(text.includes("1.50×"), true);
    assert.deepEqual(text.split("\n").filter((l) => l.endsWith("WORSE")).length, 7);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// The documentation checks of issue 47: `tools/dev/docs_check.ts` (relative links, anchors, code spans broken
// across lines) and `tools/gen_config_docs.ts` (the variable table of docs/configuration.md, generated from
// EnvSchema).
const ROOT_URL = new URL("../..", import.meta.url);
const DOCS_CHECK = new URL("../../tools/dev/docs_check.ts", import.meta.url).pathname;
const GEN_CONFIG_DOCS = new URL("../../tools/gen_config_docs.ts", import.meta.url).pathname;

/** Run a tool as `deno task` would, in the repository, with the parent's environment. */
async function run(args: string[]): Promise<{ code: number; out: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--frozen", ...args],
    cwd: ROOT_URL,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, out: new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr) };
}

const docsCheck = (root: string) => run(["--lock=deno.dev.lock", DOCS_CHECK, "--root", root]);

async function tempTree(files: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "dutlab-docs-" });
  for (const [name, text] of Object.entries(files)) {
    const path = `${dir}/${name}`;
    await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    await Deno.writeTextFile(path, text);
  }
  return dir;
}

/** A small documented tree whose every link, anchor and code span is right. */
const CLEAN: Record<string, string> = {
  "README.md": [
    "# dutlab",
    "",
    "See [the operations page](docs/ops.md), [its start-up](docs/ops.md#start-up-and-shutdown), the",
    "[second start-up](docs/ops.md#start-up-and-shutdown-1), [the schema](core/mod.ts) and",
    "[the `PORT` variable](#the-port-variable). External: [Deno](https://deno.land/#x).",
    "",
    "## The `PORT` variable",
    "",
    "Run `deno task serve` then ``a `tick` inside``.",
    "",
    "```sh",
    "echo `not a span",
    "[not a link](nowhere.md)",
    "```",
    "",
  ].join("\n"),
  "docs/ops.md": [
    "# Operations",
    "",
    "## Start-up and shutdown",
    "",
    "## Start-up and shutdown",
    "",
    '<a id="pinned"></a>',
    "",
    "- back to [the README](../README.md#dutlab) and [here](#pinned)",
    "",
    "~~~",
    "`still code",
    "~~~",
    "",
  ].join("\n"),
  "core/mod.ts": "export {};\n",
  "adapters/vendor-x/README.md":
    "# vendor-x\n\n[core](../../core/) and [ops](../../docs/ops.md#operations)\n",
};

Deno.test("docs_check passes a clean tree and names the file and line of each broken link, anchor and span", async () => {
  const clean = await tempTree(CLEAN);
  const broken = await tempTree({
    ...CLEAN,
    "docs/ci.md": "# CI\n\nText first.\n\nThen [the missing page](./missing.md) here.\n",
    "docs/x.md": "# X\n\n- an item\n- with [a wrong anchor](ops.md#start-up)\n",
    "adapters/vendor-x/README.md": "# vendor-x\n\nA command like `deno task\nserve` is wrapped.\n",
  });
  try {
    const ok = await docsCheck(clean);
    assert.equal(ok.code, 0, ok.out);
    assert.match(ok.out, /3 Markdown files, 9 relative links checked \(6 with an anchor; 1 external/, ok.out);
    const r = await docsCheck(broken);
    assert.equal(r.code, 1, r.out);
    const problems = r.out.split("\n").filter((l) => /^\S+:\d+: /.test(l));
    assert.deepEqual(problems, [
      "docs/ci.md:5: link to ./missing.md: no such file",
      "docs/x.md:4: anchor #start-up not found in docs/ops.md",
      "adapters/vendor-x/README.md:3: inline code span breaks across lines",
    ]);
  } finally {
    await Deno.remove(clean, { recursive: true });
    await Deno.remove(broken, { recursive: true });
  }
});

Deno.test("docs/configuration.md's variable table is the rendering of EnvSchema; a changed meaning fails", async () => {
  const current = await run([GEN_CONFIG_DOCS, "--check"]);
  assert.equal(current.code, 0, current.out);
  const text = await Deno.readTextFile(new URL("docs/configuration.md", ROOT_URL));
  const row = "| `DUT_POLL_SCAN_SECONDS` ";
  assert.ok(text.includes(row), "the table has a row per variable");
  const dir = await Deno.makeTempDir({ prefix: "dutlab-config-docs-" });
  const copy = `${dir}/configuration.md`;
  try {
    await Deno.writeTextFile(copy, text.replace("worker scan period", "worker scan interval"));
    const stale = await run([GEN_CONFIG_DOCS, "--check", "--file", copy]);
    assert.equal(stale.code, 1, stale.out);
    assert.match(stale.out, /the variable table differs from EnvSchema/);
    assert.match(stale.out, /worker scan interval/);
    assert.equal(await Deno.readTextFile(copy), text.replace("worker scan period", "worker scan interval"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
