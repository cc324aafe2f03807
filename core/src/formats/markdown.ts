import type { ResultSet } from "./result_set.ts";

/**
 * One GitHub-flavoured Markdown table cell: HTML markup characters as entities (a job summary renders HTML),
 * backslash and pipe escaped, line breaks as `<br>`.
 */
export function markdownCell(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/\\/g, "\\\\").replace(/\|/g, "\\|").replace(/\r\n|\r|\n/g, "<br>");
}

/**
 * Markdown for a job summary or a merge-request comment: a bold summary line (PASS or FAIL, then the
 * result's summary), an empty line and a GFM table with one row per case.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { ResultSet } from "./result_set.ts";
 * // The values a caller has; the example type-checks (deno check --doc) and is not run.
 * async function example(set: ResultSet) {
 *   assert.ok(renderMarkdown(set).startsWith(set.pass ? "**PASS**" : "**FAIL**"));
 * }
 * ```
 */
export function renderMarkdown(set: ResultSet): string {
  const row = (cells: string[]) => `| ${cells.map(markdownCell).join(" | ")} |`;
  const rows = set.suites.flatMap((s) => s.cases.map((c) => row(c.cells)));
  return [
    `**${set.pass ? "PASS" : "FAIL"}** ${markdownCell(set.summary)}`,
    "",
    row(set.columns),
    `| ${set.columns.map(() => "---").join(" | ")} |`,
    ...rows,
    "",
  ].join("\n");
}
