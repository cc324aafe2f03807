/**
 * BENCHMARKS.md is generated (issue 47 point 4): `tools/dev/gen_benchmarks.ts --check` passes on the
 * repository and fails on a page whose figure was edited by hand, naming the command that regenerates it.
 */
import assert from "node:assert/strict";

const ROOT = new URL("..", import.meta.url).pathname;
const TOOL = `${ROOT}tools/dev/gen_benchmarks.ts`;

async function check(...args: string[]) {
  const o = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--lock=deno.dev.lock", TOOL, "--check", ...args],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: o.code, out: dec.decode(o.stdout) + dec.decode(o.stderr) };
}

Deno.test("BENCHMARKS.md is the rendering of its results file and bench/METHOD.md", async () => {
  const r = await check();
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /is current \(rendered from bench\/results-full-s\d+\.json\)/);
  const page = await Deno.readTextFile(`${ROOT}BENCHMARKS.md`);
  assert.ok(page.split("\n").length <= 401, "BENCHMARKS.md stays within 400 lines");
});

Deno.test("a figure edited by hand in BENCHMARKS.md makes the check fail", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "dutlab-bench-page-" });
  try {
    const page = await Deno.readTextFile(`${ROOT}BENCHMARKS.md`);
    const edited = page.replace(/ 4\.89 s \|/, " 3.89 s |");
    assert.notEqual(edited, page, "the page shows the N = 1,000 PostgreSQL scan time");
    await Deno.writeTextFile(`${tmp}/BENCHMARKS.md`, edited);
    const r = await check("--page", `${tmp}/BENCHMARKS.md`);
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /is stale: .* run `npx -y deno@2\.9\.6 task bench:md`/);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
