import assert from "node:assert/strict";

// The kit's face stays small: adapter and check authors read it whole. `deno doc --json` lists every name a
// user of `@dutlab/core/testing` sees (values and types alike); over 30 means something that only the
// repository's own tests use belongs in core/harness/, or a type a user never names belongs inline.
const MAX_NAMES = 30;
const face = new URL("./mod.ts", import.meta.url);

Deno.test("@dutlab/core/testing publishes at most 30 names (values and types, as deno doc lists them)", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", "--lock=deno.dev.lock", face.pathname],
    cwd: new URL("../..", import.meta.url),
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const doc = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    nodes: Record<string, { symbols?: Array<{ name: string }> }>;
  };
  const names = Object.values(doc.nodes).flatMap((n) => (n.symbols ?? []).map((s) => s.name));
  assert.ok(names.length > 0, "deno doc lists the kit's names");
  assert.ok(
    names.length <= MAX_NAMES,
    `@dutlab/core/testing publishes ${names.length} names (at most ${MAX_NAMES}): ${names.sort().join(", ")}`,
  );
});

Deno.test("@dutlab/core/testing re-exports files of the kit only, none of core/src", async () => {
  const text = await Deno.readTextFile(face);
  const from = [...text.matchAll(/\bfrom\s*"([^"]+)"/g)].map((m) => m[1]!);
  assert.ok(from.length > 0);
  for (const spec of from) assert.match(spec, /^\.\/[a-z_]+\.ts$/, `mod.ts exports from ${spec}`);
});
