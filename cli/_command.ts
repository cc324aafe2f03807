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
  /** `--verbose`: print every line of a list (a screenful and "N more" otherwise). */
  verbose: boolean;
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
  verbose: {
    type: "boolean",
    description: "Print every line of long lists (else a screenful, then how many more)",
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

/** The edit distance of two strings (insertions, deletions, substitutions and adjacent swaps each cost 1). */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        v = Math.min(v, d[i - 2]![j - 2]! + 1);
      }
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The known flag an unknown one most likely meant (`ouptut` → `out`), or null when none is close: within an
 * edit distance of 1 for names up to 4 characters, 2 beyond, or one name the start of the other
 * (`--output` → `--out`).
 */
export function nearestFlag(unknown: string, known: string[]): string | null {
  const name = unknown.toLowerCase();
  let best: { flag: string; distance: number } | null = null;
  for (const flag of known) {
    const distance = name.startsWith(flag) || flag.startsWith(name) ? 1 : editDistance(name, flag);
    if (distance <= (name.length <= 4 ? 1 : 2) && (best === null || distance < best.distance)) {
      best = { flag, distance };
    }
  }
  return best?.flag ?? null;
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
    const message = oneLine((e as Error).message).replace(/\. To specify a positional argument.*$/, "");
    const unknown = /^Unknown option '--([^']+)'$/.exec(message)?.[1];
    const near = unknown === undefined ? null : nearestFlag(unknown, Object.keys(all));
    throw usageOf(near ? `${message}; did you mean --${near}?` : message);
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
    verbose: flags.verbose === true,
    paint: painter(cfg.colour),
    svc: () => svc ??= service(cfg),
    usage: usageOf,
  });
}
