import assert from "node:assert/strict";
import { childEnv, INHERITED_VARIABLES } from "./process.ts";

Deno.test("childEnv keeps the cache, proxy and CA variables and removes only dutlab's own", () => {
  const from: Record<string, string> = { PATH: "/bin", DUT_DATA_DIR: "/x", DATABASE_URL: "postgres://h/d" };
  for (const k of INHERITED_VARIABLES) from[k] ??= `value-of-${k}`;
  from.SOME_OTHER = "kept";
  const env = childEnv({ PORT: "1234" }, { from, remove: ["SOME_OTHER"] });
  for (const k of INHERITED_VARIABLES) assert.equal(env[k], from[k], k);
  assert.equal(env.DUT_DATA_DIR, undefined);
  assert.equal(env.DATABASE_URL, undefined);
  assert.equal(env.SOME_OTHER, undefined);
  assert.equal(env.PORT, "1234");
  assert.equal(env.NO_COLOR, "1");
});

Deno.test("a child started with childEnv sees the parent's DENO_DIR and proxy variables", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "console.log(JSON.stringify(Deno.env.toObject()))"],
    clearEnv: true,
    env: childEnv({ DUT_LOG_FORMAT: "json" }),
    stdout: "piped",
  }).output();
  assert.equal(out.code, 0);
  const seen = JSON.parse(new TextDecoder().decode(out.stdout));
  for (const k of INHERITED_VARIABLES) assert.equal(seen[k], Deno.env.get(k), k);
  assert.equal(seen.DUT_LOG_FORMAT, "json");
});

Deno.test("with clearEnv, a dutlab variable of the parent does not reach the child", async () => {
  const had = Deno.env.get("DUT_LOG_LEVEL");
  Deno.env.set("DUT_LOG_LEVEL", "debug");
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "console.log(JSON.stringify(Deno.env.toObject()))"],
      clearEnv: true,
      env: childEnv(),
      stdout: "piped",
    }).output();
    const seen = JSON.parse(new TextDecoder().decode(out.stdout));
    assert.equal(seen.DUT_LOG_LEVEL, undefined);
    assert.equal(seen.PATH, Deno.env.get("PATH"));
  } finally {
    if (had === undefined) Deno.env.delete("DUT_LOG_LEVEL");
    else Deno.env.set("DUT_LOG_LEVEL", had);
  }
});
