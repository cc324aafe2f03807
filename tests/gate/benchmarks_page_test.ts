/**
 * BENCHMARKS.md is generated (issue 47 point 4): `tools/dev/gen_benchmarks.ts --check` passes on the
 * repository, fails on a page whose figure was edited by hand (naming the command that regenerates it), and
 * the generator fails when a figure its targets table names is missing from the results file.
 */
import assert from "node:assert/strict";

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
