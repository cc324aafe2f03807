import type { ResultSet } from "./result_set.ts";

/** One RFC 4180 field: quoted (inner quotes doubled) when it holds a comma, quote, CR or LF. */
export function csvField(s: string): string {
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/**
 * RFC 4180 CSV: a header row (the set's columns), one record per case, CRLF after every record.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { ResultSet } from "./result_set.ts";
 * // The values a caller has; the example type-checks (deno check --doc) and is not run.
 * async function example(set: ResultSet) {
 *   assert.ok(renderCsv(set).endsWith("\r\n"));
 * }
 * ```
 */
export function renderCsv(set: ResultSet): string {
  const rec = (cells: string[]) => cells.map(csvField).join(",") + "\r\n";
  return rec(set.columns) + set.suites.flatMap((s) => s.cases.map((c) => rec(c.cells))).join("");
}
