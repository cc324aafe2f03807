/**
 * `deno task docs:config` (issue 47): the table of environment variables in docs/configuration.md, generated
 * from `EnvSchema` (core/src/runtime/config.ts) so that it cannot drift from what the service parses.
 *
 * One row per schema key, in the schema's order: the variable, its default, its meaning. The meaning is the
 * field's `.meta({ description })`; the default is what `EnvSchema.parse({})` gives for the key when that is a
 * literal (a string or a number), else the field's `.meta({ defaultLabel })` (`unset`, `generated (embedded)`,
 * a default applied outside the schema). A key without a description, a key without a literal default nor a
 * label, and a label that contradicts the schema's literal default are errors (exit 1).
 *
 * The table is written between the lines `<!-- env-table:start … -->` and `<!-- env-table:end -->`; the rest of
 * the file is left as it is. The result is what `deno fmt` makes of it (the project's settings), so the file
 * stays fmt-clean. `--check` writes nothing and exits 1 when the file's table differs from the rendering;
 * `--file PATH` works on another file than docs/configuration.md (tests).
 */
import { fmtMarkdown } from "./_fmt_md.ts";
import { EnvSchema } from "../core/ops.ts";

const ROOT = new URL("..", import.meta.url);
const START = /^<!-- env-table:start\b.*-->[ \t]*$/m;
const END = /^<!-- env-table:end -->[ \t]*$/m;

/** One variable as documented. */
export interface EnvRow {
  name: string;
  /** Markdown of the default column. */
  default: string;
  /** Markdown of the meaning column. */
  meaning: string;
}

/** The rows of the table from the schema, and every problem of its documentation. */
export function envRows(): { rows: EnvRow[]; problems: string[] } {
  const defaults: Record<string, unknown> = EnvSchema.parse({});
  const rows: EnvRow[] = [];
  const problems: string[] = [];
  for (const [name, field] of Object.entries(EnvSchema.shape)) {
    const meta: Record<string, unknown> = field.meta() ?? {};
    const meaning = typeof meta.description === "string" ? meta.description.trim() : "";
    if (!meaning) problems.push(`${name}: no description; add .meta({ description: "…" }) to its field`);
    const value = defaults[name];
    const label = meta.defaultLabel;
    let shown: string;
    if (typeof value === "string" || typeof value === "number") {
      shown = codeSpan(String(value));
      if (label !== undefined && label !== shown) {
        problems.push(
          `${name}: defaultLabel ${JSON.stringify(label)} but EnvSchema.parse({}) gives ${shown}`,
        );
      }
    } else if (typeof label === "string" && label.trim()) {
      shown = label.trim();
    } else {
      shown = "";
      problems.push(
        `${name}: the schema gives no literal default (${JSON.stringify(value) ?? "undefined"}); ` +
          `add .meta({ defaultLabel: "…" }) saying what applies (unset, generated, …)`,
      );
    }
    rows.push({ name, default: shown, meaning });
  }
  return { rows, problems };
}

/** `value` as a Markdown code span, fenced with more backticks than it holds in a row. */
function codeSpan(value: string): string {
  const longest = Math.max(0, ...[...value.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = "`".repeat(longest + 1);
  return longest ? `${fence} ${value} ${fence}` : `${fence}${value}${fence}`;
}

/** A table cell: one line, with its pipes escaped (also inside code spans, as GFM tables need). */
function cell(markdown: string): string {
  return markdown.replace(/\s*\n\s*/g, " ").replace(/(?<!\\)\|/g, "\\|");
}

/** The Markdown table of `rows` (before `deno fmt` aligns it). */
export function renderTable(rows: EnvRow[]): string {
  const lines = ["| variable | default | meaning |", "| --- | --- | --- |"];
  for (const r of rows) lines.push(`| ${cell(codeSpan(r.name))} | ${cell(r.default)} | ${cell(r.meaning)} |`);
  return lines.join("\n");
}

/** The file's text split around its markers: before and including the start line, the table, the end on. */
function regions(text: string, file: string): { head: string; table: string; tail: string } {
  const start = START.exec(text);
  const end = END.exec(text);
  if (!start || !end || end.index < start.index) {
    throw new Error(
      `${file}: needs the lines <!-- env-table:start … --> and <!-- env-table:end --> in order`,
    );
  }
  const headEnd = start.index + start[0].length;
  return { head: text.slice(0, headEnd), table: text.slice(headEnd, end.index), tail: text.slice(end.index) };
}

/**
 * The file's text with the table between its markers replaced by the rendering of `rows`, as `deno fmt`
 * lays it out in the file; only the text between the markers changes.
 */
export async function withTable(text: string, rows: EnvRow[], file = "the file"): Promise<string> {
  const { head, tail } = regions(text, file);
  const formatted = await fmtMarkdown(`${head}\n\n${renderTable(rows)}\n\n${tail}`);
  return head + regions(formatted, "deno fmt's output").table + tail;
}

if (import.meta.main) {
  const check = Deno.args.includes("--check");
  const at = Deno.args.indexOf("--file");
  const path = at >= 0 && Deno.args[at + 1] ? Deno.args[at + 1]! : "docs/configuration.md";
  const file = at >= 0 ? path : new URL(path, ROOT);
  const { rows, problems } = envRows();
  for (const p of problems) console.error(`core/src/runtime/config.ts: ${p}`);
  if (problems.length) Deno.exit(1);
  const text = await Deno.readTextFile(file);
  const next = await withTable(text, rows, path);
  if (check) {
    if (next !== text) {
      const current = regions(text, path).table.split("\n");
      const wanted = regions(next, path).table.split("\n");
      const i = wanted.findIndex((line, n) => line !== current[n]);
      const first = i < 0 ? current.length : i;
      console.error(
        `${path}: the variable table differs from EnvSchema (first at table line ${first + 1}); ` +
          `run deno task docs:config\n  file:   ${current[first] ?? "(nothing)"}\n  schema: ${
            wanted[first] ?? "(nothing)"
          }`,
      );
      Deno.exit(1);
    }
    console.log(`${path}: the variable table is current (${rows.length} variables)`);
  } else if (next !== text) {
    await Deno.writeTextFile(file, next);
    console.log(`wrote ${path}: ${rows.length} variables`);
  } else {
    console.log(`${path}: the variable table is current (${rows.length} variables)`);
  }
}
