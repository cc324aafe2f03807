/**
 * `deno task lab set` prints the device it changed without its password (issue 46 point 6): a setting
 * changed is no occasion to put a secret in a terminal's scrollback or a CI log; `lab show` has it.
 */
import assert from "node:assert/strict";
import { startLab } from "../../core/harness/serve.ts";

Deno.test("lab set prints the changed device and its settings, never a simulator's password", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dutlab-lab-set-" });
  const lab = await startLab(dir);
  try {
    const shown = await lab.show();
    assert.ok(shown.length > 0);
    const passwords = shown.map((d) => d.password);
    for (const p of passwords) assert.ok(p.length >= 8, "the simulators have passwords to leak");
    const d = shown[0]!;
    const r = await lab.run("set", d.vendor, "down=true");
    assert.equal(r.code, 0, r.stderr);
    const printed = JSON.parse(r.stdout);
    assert.equal(printed.vendor, d.vendor);
    assert.equal(printed.down, true);
    assert.deepEqual(printed.settings, { down: "true" });
    assert.equal("password" in printed, false);
    for (const p of passwords) {
      assert.ok(!r.stdout.includes(p) && !r.stderr.includes(p), "no password in the output of lab set");
    }
    assert.equal((await lab.run("set", d.vendor, "down=false")).code, 0);
  } finally {
    await lab.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
