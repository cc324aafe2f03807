/**
 * Bounded print of the annexes that grow with the lab (issue 49 point 1): past {@link PRINT_ROWS} items, an
 * annex table prints its counts, the failed and skipped items (at most {@link PRINT_PROBLEMS}) and the
 * passing items aggregated (per check, per vendor and role, per label), then says how many items are left
 * out of print and where they are: the PDF's attached `annex-<id>.json` and `.csv` and report.json.
 *
 * @module
 */
import type { ComponentChildren } from "preact";
import { int } from "./page/format.ts";

/** An annex with at most this many items prints them all, one row each (the report as before). */
export const PRINT_ROWS = 60;
/** Failed and skipped items printed one by one in a bounded annex. */
export const PRINT_PROBLEMS = 150;

/** The statement under a bounded table: how many items are not printed and where they are. */
export function LeftOut({ id, total, shown }: { id: string; total: number; shown: number }) {
  if (total <= shown) return null;
  return (
    <p class="muted" data-left-out={total - shown}>
      {int.format(total - shown)} of {int.format(total)}{" "}
      item(s) are not printed one by one. All of them are in this PDF's attached files{" "}
      <span class="mono">annex-{id}.json</span> (exact body) and{" "}
      <span class="mono">annex-{id}.csv</span>, and in report.json.
    </p>
  );
}

/** A table of aggregate rows: a label and its counts. */
export function Aggregate(
  { head, rows, attr }: { head: string[]; rows: ComponentChildren[][]; attr: string },
) {
  return (
    <table class="annex-table" data-annex-aggregate={attr}>
      <thead>
        <tr>{head.map((h) => <th key={h}>{h}</th>)}</tr>
      </thead>
      <tbody>
        {rows.map((r, i) => <tr key={i}>{r.map((c, j) => <td key={j}>{c}</td>)}</tr>)}
      </tbody>
    </table>
  );
}

/** Counts per key, keys in first-seen order. */
export function countBy<T>(items: T[], key: (t: T) => string): Map<string, number> {
  const m = new Map<string, number>();
  for (const t of items) m.set(key(t), (m.get(key(t)) ?? 0) + 1);
  return m;
}

/** `a 3 · b 2`: counts of a map as one line. */
export const counts = (m: Map<string, number>) => [...m].map(([k, n]) => `${k} ${int.format(n)}`).join(" · ");
