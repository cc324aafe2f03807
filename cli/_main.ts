import denoJson from "./deno.json" with { type: "json" };
import { type Command, commandHelp, GLOBAL_FLAGS, runCommand } from "./_command.ts";
import { CliError, EXIT, oneLine } from "./_exit.ts";
import { deviceCommands } from "./_devices.ts";
import { labCommands } from "./_lab.ts";
import { netboxCommands } from "./_netbox.ts";
import { runCommands } from "./_runs.ts";
import { tokenCommands } from "./_tokens.ts";
import { webhookCommands } from "./_webhooks.ts";
import { reservationCommands } from "./_reservations.ts";
import { note, out } from "./_output.ts";

/** Every command, in the order the help lists them. */
export const COMMANDS: Command[] = [
  ...deviceCommands,
  ...labCommands,
  ...netboxCommands,
  ...runCommands,
  ...reservationCommands,
  ...tokenCommands,
  ...webhookCommands,
];

const EXIT_TABLE = `Exit codes:
  0  success; pre-flight passed; the verdict is pass
  1  checks failed, the verdict is not pass, a regression, or the service refused (409, 422)
  2  usage: unknown command or flag, bad or missing value (also the service's 400)
  3  service unreachable or unavailable (5xx), or the token is not accepted (401, 403)
  4  not found (404): no such device, run, plan or token`;

function topHelp(): string {
  const w = Math.max(...COMMANDS.map((c) => c.path.join(" ").length));
  return [
    "dutlab: the command-line client of a dutlab service (HTTP API only).",
    "",
    "Usage: dutlab <command> [arguments] [flags]",
    "",
    "Commands:",
    ...COMMANDS.map((c) => `  ${c.path.join(" ").padEnd(w)}  ${c.summary}`),
    "",
    "Environment: DUT_URL (default http://localhost:8080), DUT_TOKEN (or --token-file FILE), NO_COLOR.",
    `Global flags: ${Object.keys(GLOBAL_FLAGS).map((f) => `--${f}`).join(", ")}.`,
    "Run 'dutlab <command> --help' for a command's flags.",
    "",
    EXIT_TABLE,
    "",
  ].join("\n");
}

function groupHelp(group: string): string {
  const cmds = COMMANDS.filter((c) => c.path[0] === group);
  const w = Math.max(...cmds.map((c) => c.path.join(" ").length));
  return [
    `Usage: dutlab ${group} <${cmds.map((c) => c.path[1]).join("|")}> [arguments] [flags]`,
    "",
    ...cmds.map((c) => `  ${c.path.join(" ").padEnd(w)}  ${c.summary}`),
    "",
    `Run 'dutlab ${group} <command> --help' for a command's flags.`,
    "",
  ].join("\n");
}

/** Runs `dutlab` with `args`; returns the exit code (docs/ci.md "Command-line client"). Never throws. */
export async function main(args: string[]): Promise<number> {
  try {
    const [first, second] = args;
    if (first === undefined || first === "help" || first === "--help" || first === "-h") {
      out(topHelp());
      return first === undefined ? EXIT.usage : EXIT.ok;
    }
    if (first === "--version" || first === "version") {
      out(`dutlab ${denoJson.version}`);
      return EXIT.ok;
    }
    const single = COMMANDS.find((c) => c.path.length === 1 && c.path[0] === first);
    if (single) return await runCommand(single, args.slice(1));
    const group = COMMANDS.filter((c) => c.path[0] === first);
    if (group.length === 0) {
      throw new CliError(`Unknown command ${JSON.stringify(first)} (see 'dutlab --help')`, EXIT.usage);
    }
    if (second === undefined || second === "--help" || second === "-h") {
      out(groupHelp(first));
      return second === undefined ? EXIT.usage : EXIT.ok;
    }
    const cmd = group.find((c) => c.path[1] === second);
    if (!cmd) {
      throw new CliError(
        `Unknown command "${first} ${second}" (one of ${group.map((c) => c.path[1]).join(", ")})`,
        EXIT.usage,
      );
    }
    return await runCommand(cmd, args.slice(2));
  } catch (e) {
    if (e instanceof CliError) {
      note(`dutlab: ${e.message}`);
      return e.code;
    }
    // Never a stack: one line, and the code of a failed command.
    note(`dutlab: ${oneLine(e instanceof Error ? `${e.name}: ${e.message}` : String(e))}`);
    return EXIT.failed;
  }
}

export { commandHelp };
