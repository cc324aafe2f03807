import { parseArgs } from "node:util";
import { type Config, loadConfig } from "./_config.ts";
import { type CliError, EXIT, oneLine, usage } from "./_exit.ts";
import { type Service, service } from "./_client.ts";
import { type Colour, painter } from "./_output.ts";

/** One flag of a command. */
export interface Flag {
  type: "string" | "boolean";
  /** May be given more than once (a list). */
  multiple?: boolean;
  short?: string;
  /** The value's placeholder in the help (`FILE`, `ID`). */
  value?: string;
  description: string;
}

/** What a command's `run` gets. */
export interface Ctx {
  flags: Record<string, string | boolean | string[] | undefined>;
  args: string[];
  cfg: Config;
  /** `--json`: print the service's JSON answer. */
  json: boolean;
  paint: (c: Colour, s: string) => string;
  /** The connected API (throws the usage error when no token was given). */
  svc(): Service;
  /** A usage error of this command (exit 2), pointing at its help. */
  usage(message: string): CliError;
}

/** One command (`dutlab devices list`). */
export interface Command {
  path: string[];
  summary: string;
  /** Positional arguments in the usage line, e.g. `<device>...`. */
  args?: string;
  /** Fewest and most positional arguments. */
  arity: [number, number];
  flags?: Record<string, Flag>;
  /** More help text (exit codes, examples). */
  more?: string;
  /** Rewrites the arguments before parsing (e.g. a bare `--prune` to `--prune=disable`). */
  preparse?: (argv: string[]) => string[];
  run(ctx: Ctx): Promise<number>;
}

/** Flags every command takes. */
export const GLOBAL_FLAGS: Record<string, Flag> = {
  json: { type: "boolean", description: "Print the service's JSON answer instead of a table" },
  url: {
    type: "string",
    value: "URL",
    description: "The service (default: $DUT_URL, else http://localhost:8080)",
  },
  "token-file": {
    type: "string",
    value: "FILE",
    description: "Read the bearer token from FILE (default: $DUT_TOKEN)",
  },
  help: { type: "boolean", short: "h", description: "Show this help" },
};

const flagUsage = (name: string, f: Flag) =>
  `${f.short ? `-${f.short}, ` : "    "}--${name}${f.type === "string" ? ` ${f.value ?? "VALUE"}` : ""}${
    f.multiple ? " (repeatable)" : ""
  }`;

/** The help of one command. */
export function commandHelp(cmd: Command): string {
  const flags = Object.entries(cmd.flags ?? {});
  const rows = (list: Array<[string, Flag]>) => {
    const left = list.map(([n, f]) => flagUsage(n, f));
    const w = Math.max(...left.map((l) => l.length));
    return list.map(([, f], i) => `  ${left[i]!.padEnd(w)}  ${f.description}`).join("\n");
  };
  return [
    `${cmd.summary}`,
    "",
    `Usage: dutlab ${cmd.path.join(" ")}${cmd.args ? ` ${cmd.args}` : ""}${flags.length ? " [flags]" : ""}`,
    ...(flags.length ? ["", "Flags:", rows(flags)] : []),
    "",
    "Global flags:",
    rows(Object.entries(GLOBAL_FLAGS)),
    ...(cmd.more ? ["", cmd.more] : []),
    "",
  ].join("\n");
}

/** Parses a command's arguments and runs it. */
export async function runCommand(cmd: Command, argv: string[]): Promise<number> {
  const all = { ...GLOBAL_FLAGS, ...cmd.flags };
  const name = `dutlab ${cmd.path.join(" ")}`;
  const usageOf = (m: string) => usage(`${m} (see '${name} --help')`);
  let parsed;
  try {
    parsed = parseArgs({
      args: cmd.preparse ? cmd.preparse(argv) : argv,
      options: Object.fromEntries(
        Object.entries(all).map(([n, f]) => [n, {
          type: f.type,
          ...(f.multiple ? { multiple: true } : {}),
          ...(f.short ? { short: f.short } : {}),
        }]),
      ),
      strict: true,
      allowPositionals: true,
    });
  } catch (e) {
    // node:util's messages, cut before their advice on positionals that look like flags.
    throw usageOf(oneLine((e as Error).message).replace(/\. To specify a positional argument.*$/, ""));
  }
  const flags = parsed.values as Ctx["flags"];
  if (flags.help) {
    Deno.stdout.writeSync(new TextEncoder().encode(commandHelp(cmd)));
    return EXIT.ok;
  }
  const [min, max] = cmd.arity;
  const n = parsed.positionals.length;
  if (n < min) throw usageOf(`Missing ${cmd.args ?? "arguments"}`);
  if (n > max) throw usageOf(`Unexpected argument ${JSON.stringify(parsed.positionals[max])}`);
  const cfg = await loadConfig({
    url: flags.url as string | undefined,
    tokenFile: flags["token-file"] as string | undefined,
  });
  let svc: Service | undefined;
  return await cmd.run({
    flags,
    args: parsed.positionals,
    cfg,
    json: flags.json === true,
    paint: painter(cfg.colour),
    svc: () => svc ??= service(cfg),
    usage: usageOf,
  });
}
