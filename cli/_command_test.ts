import assert from "node:assert/strict";
import { nearestFlag, runCommand } from "./_command.ts";
import { CliError, EXIT } from "./_exit.ts";
import { COMMANDS } from "./_main.ts";

const command = (path: string) => COMMANDS.find((c) => c.path.join(" ") === path)!;

/** The usage error `dutlab <path> ...args` stops with (before it reads a config or calls the service). */
async function refusal(path: string, args: string[]): Promise<CliError> {
  const e = await runCommand(command(path), args).then(() => null, (e) => e);
  assert.ok(e instanceof CliError, `dutlab ${path} ${args.join(" ")} is refused`);
  assert.equal(e.code, EXIT.usage);
  return e;
}

Deno.test("an unknown flag close to a known one of the command gets a did-you-mean", async () => {
  const cases: Array<[string, string[], string]> = [
    ["runs finish", ["run-1", "--outcom", "passed"], "outcome"],
    ["runs finish", ["run-1", "--sample", "s.json"], "samples"],
    ["runs finish", ["run-1", "--k7", "k6.json"], "k6"],
    ["runs get", ["run-1", "--output", "r.json"], "out"],
    ["devices list", ["--jsno"], "json"],
    ["devices list", ["--token-flie", "t"], "token-file"],
  ];
  for (const [path, args, flag] of cases) {
    const e = await refusal(path, args);
    const unknown = args.find((a) => a.startsWith("--"))!;
    assert.equal(
      e.message,
      `Unknown option '${unknown}'; did you mean --${flag}? (see 'dutlab ${path} --help')`,
    );
  }
});

Deno.test("an unknown flag far from every known one gets no suggestion", async () => {
  const e = await refusal("runs finish", ["run-1", "--bogus"]);
  assert.equal(e.message, "Unknown option '--bogus' (see 'dutlab runs finish --help')");
});

Deno.test("nearestFlag: within 1 edit up to 4 characters, 2 beyond, or one the start of the other", () => {
  const known = ["out", "outcome", "json", "limit", "status"];
  assert.equal(nearestFlag("ot", known), "out");
  assert.equal(nearestFlag("jsn", known), "json");
  assert.equal(nearestFlag("lmiit", known), "limit");
  assert.equal(nearestFlag("STATUS", known), "status");
  assert.equal(nearestFlag("xyz", known), null);
  assert.equal(nearestFlag("verbose", known), null);
});
