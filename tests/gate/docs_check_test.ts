/**
 * The documentation checks of issue 47: `tools/dev/docs_check.ts` (relative links, anchors, code spans broken
 * across lines) and `tools/gen_config_docs.ts` (the variable table of docs/configuration.md, generated from
 * EnvSchema).
 */
import assert from "node:assert/strict";

const ROOT = new URL("../..", import.meta.url);
const DOCS_CHECK = new URL("../../tools/dev/docs_check.ts", import.meta.url).pathname;
const GEN_CONFIG_DOCS = new URL("../../tools/gen_config_docs.ts", import.meta.url).pathname;

/** Run a tool as `deno task` would, in the repository, with the parent's environment. */
async function run(args: string[]): Promise<{ code: number; out: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--frozen", ...args],
    cwd: ROOT,
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
  const text = await Deno.readTextFile(new URL("docs/configuration.md", ROOT));
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
