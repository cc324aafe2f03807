import { CliError, EXIT } from "./_exit.ts";

const enc = new TextEncoder();

/** Writes text to stdout. */
export function out(text: string): void {
  Deno.stdout.writeSync(enc.encode(text.endsWith("\n") || text === "" ? text : text + "\n"));
}

/** Writes a line to stderr (progress, notes: stdout stays the result). */
export function note(text: string): void {
  Deno.stderr.writeSync(enc.encode(text + "\n"));
}

/** Lines a list prints before it says how many more there are (`--verbose` prints all). */
export const SCREENFUL = 20;

/**
 * At most a screenful of `lines` (all with `verbose`), then one line saying how many more `what` there are
 * and how to see them: summaries first, the complete data one flag away (issue 49).
 */
export function bounded(lines: string[], verbose: boolean, what: string, limit = SCREENFUL): string[] {
  if (verbose || lines.length <= limit) return lines;
  return [
    ...lines.slice(0, limit),
    `… and ${lines.length - limit} more ${what} (--verbose for all, --json for the data)`,
  ];
}

/** Names joined with ", ", at most `limit` of them (all with `verbose`), then "and N more". */
export function boundedNames(names: string[], verbose: boolean, limit = SCREENFUL): string {
  if (verbose || names.length <= limit) return names.join(", ");
  return `${names.slice(0, limit).join(", ")} and ${names.length - limit} more (--verbose for all)`;
}

/**
 * Progress lines of a long per-device command (`snapshot --all`): all of them for a screenful of devices or
 * with `verbose`; past that only failures, up to a screenful, and at the end one line saying how many were
 * not printed. `write` prints a line.
 */
export class BoundedProgress {
  #failedShown = 0;
  #hiddenOk = 0;
  #hiddenFailed = 0;
  readonly #all: boolean;

  constructor(total: number, verbose: boolean, readonly write: (line: string) => void) {
    this.#all = verbose || total <= SCREENFUL;
  }

  /** One device's line; `failed` lines are preferred when lines are left out. */
  line(text: string, failed: boolean): void {
    if (this.#all) return this.write(text);
    if (failed && this.#failedShown < SCREENFUL) {
      this.#failedShown++;
      return this.write(text);
    }
    if (failed) this.#hiddenFailed++;
    else this.#hiddenOk++;
  }

  /** The line saying what was left out, if anything was (printed by `write`). */
  end(): void {
    const n = this.#hiddenOk + this.#hiddenFailed;
    if (n === 0) return;
    this.write(
      `… ${n} more device line(s) not printed (${this.#hiddenOk} ok, ${this.#hiddenFailed} failed; ` +
        "--verbose for all, --json for the data)",
    );
  }
}

/** Pretty JSON on stdout (`--json`). */
export function printJson(value: unknown): void {
  out(JSON.stringify(value, null, 2));
}

const COLOURS = { green: 32, red: 31, yellow: 33, dim: 2, bold: 1 } as const;
export type Colour = keyof typeof COLOURS;

/** A painter: ANSI colour when `on`, the text as is otherwise. */
export function painter(on: boolean) {
  return (c: Colour, s: string) => on ? `\x1b[${COLOURS[c]}m${s}\x1b[0m` : s;
}

/** The colour of a status word (pass, ok, fail, …), or null. */
export function statusColour(s: string): Colour | null {
  if (/^(pass|passed|ok|active|true)$/.test(s)) return "green";
  if (/^(fail|failed|error|invalid|refused|false|unreachable|auth_failed|tls_error|timeout)$/.test(s)) {
    return "red";
  }
  if (/^(skipped|inconclusive|none|never|aborted|-)$/.test(s)) return "yellow";
  return null;
}

/**
 * A table as kubectl prints one: upper-case headers, columns padded to their widest cell, two spaces apart.
 * Cells are one line; `paint` colours status cells (after padding, so colour never shifts a column).
 */
export function table(
  headers: string[],
  rows: string[][],
  paint?: (c: Colour, s: string) => string,
  statusColumns: number[] = [],
): string {
  const clean = rows.map((r) => r.map((c) => c.replace(/\s+/g, " ")));
  const widths = headers.map((h, i) => Math.max(h.length, ...clean.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[], isHeader: boolean) =>
    cells.map((c, i) => {
      const padded = i === cells.length - 1 ? c : c.padEnd(widths[i]!);
      const colour = !isHeader && statusColumns.includes(i) ? statusColour(c) : null;
      return paint && colour ? paint(colour, padded) : padded;
    }).join("  ").trimEnd();
  return [line(headers.map((h) => h.toUpperCase()), true), ...clean.map((r) => line(r, false))].join("\n");
}

/** Writes `data` to `file` (a usage error, exit 2, when it cannot be written). */
export async function writeOut(file: string, data: string | Uint8Array): Promise<void> {
  try {
    if (typeof data === "string") await Deno.writeTextFile(file, data);
    else await Deno.writeFile(file, data);
  } catch (e) {
    throw new CliError(`Cannot write --out ${JSON.stringify(file)}: ${(e as Error).message}`, EXIT.usage);
  }
}

/** Reads a file the user named (`-`: stdin); a usage error when it cannot be read. */
export async function readIn(file: string, flag: string): Promise<string> {
  try {
    if (file === "-") return await new Response(Deno.stdin.readable).text();
    return await Deno.readTextFile(file);
  } catch (e) {
    throw new CliError(`Cannot read ${flag} ${JSON.stringify(file)}: ${(e as Error).message}`, EXIT.usage);
  }
}

/** JSON read from a file the user named; a usage error when it is not JSON. */
export async function readJson(file: string, flag: string): Promise<unknown> {
  const text = await readIn(file, flag);
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CliError(`${flag} ${JSON.stringify(file)} is not JSON: ${(e as Error).message}`, EXIT.usage);
  }
}
