import assert from "node:assert/strict";
import { commandHelp, COMMANDS } from "./_main.ts";

Deno.test("devices rm --help says the device's snapshots are deleted with it (spec 2.2 rule 2)", () => {
  const help = commandHelp(COMMANDS.find((c) => c.path.join(" ") === "devices rm")!);
  assert.match(help, /^Delete a device and all its snapshots\n/);
  assert.match(help, /snapshots are deleted with it/);
  assert.doesNotMatch(help, /kept/);
});
