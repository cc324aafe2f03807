/**
 * `deno task bench --compare OLD.json [--against NEW.json]`: every figure of a results file beside the same
 * figure (scenario, name and scalar params) of a previous run, with the ratio new ÷ old, marking the figures
 * worse beyond a threshold. Rates (`…/s`, `…/min`) and figures whose target is a lower bound (`>= 0.3`,
 * `≥ 0.9`: throughput ratios, devices reached in a scan) are better higher; every other figure is better lower.
 *
 * @module
 */
import type { Figure } from "./_util.ts";

/** One compared figure. */
export interface CompareRow {
  key: string;
  unit: string;
  old: number | null;
  new: number | null;
  /** new ÷ old; null when either side is missing or old is 0. */
  ratio: number | null;
  /** Worse than the old figure by more than the threshold. */
  worse: boolean;
}

/** Whether a larger value of this figure is better: a rate, or a target that sets a lower bound. */
export const higherIsBetter = (f: Pick<Figure, "unit" | "target">): boolean =>
  f.unit.endsWith("/s") || f.unit.endsWith("/min") || /^\s*(>=|≥)/.test(f.target ?? "");

/**
 * Params that scenarios record beside a figure but that are themselves measured (load average, byte counts,
 * other timings, the `asOf` instant), so they differ from run to run: not part of a figure's identity. Found
 * by comparing full runs s23 and s24, where they left 147 figures of 429 unpaired. A scenario that records
 * another measured value as a param adds its name here.
 */
export const MEASURED_PARAMS: ReadonlySet<string> = new Set([
  "archiveBytes",
  "asOf",
  "beforeScanMiB",
  "calls",
  "claims",
  "cpuMsPerPoll",
  "cpuS",
  "debugLines",
  "files",
  "firstScanS",
  "floor",
  "htmlBytes",
  "idleBrowserPssMiB",
  "loadAvg",
  "mean",
  "newPayloads",
  "p50",
  "p95",
  "p95Ms",
  "payloadRows",
  "payloadsTableB",
  "pdfBytes",
  "pgliteMs",
  "postgresCpuMsPerPoll",
  "postgresCpuUsPerSnapshot",
  "postgresMs",
  "renderMs",
  "reportBytes",
  "responseBytes",
  "rssAfterPdfMiB",
  "rssBeforeMiB",
  "rssMinuteAfterMiB",
  "second",
  "snapshotsTableB",
  "wallS",
]);

/** The identity of a figure across runs: scenario, name and its scalar params but the measured ones. */
export function figureKey(f: Figure): string {
  const params = Object.entries(f.params ?? {}).filter(([k, v]) =>
    typeof v !== "object" && !MEASURED_PARAMS.has(k)
  )
    .sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}=${v}`).join(" ");
  return `${f.scenario} / ${f.name}${params ? ` [${params}]` : ""}`;
}

/**
 * Compare two runs' figures; `threshold` 0.2 marks figures more than 20 % worse. Figures pair by scenario, name
 * and scalar params but {@link MEASURED_PARAMS}; a figure left unpaired (a measured param not in that list)
 * pairs with the only unpaired figure of the same scenario and name on the other side.
 */
export function compareFigures(oldFigs: Figure[], newFigs: Figure[], threshold = 0.2): CompareRow[] {
  const olds = new Map(oldFigs.map((f) => [figureKey(f), f]));
  const pairs: Array<[string, Figure | undefined, Figure | undefined]> = [];
  const unpairedNew: Figure[] = [];
  for (const n of newFigs) {
    const key = figureKey(n);
    const o = olds.get(key);
    if (o) {
      olds.delete(key);
      pairs.push([key, o, n]);
    } else unpairedNew.push(n);
  }
  const byName = (f: Figure) => `${f.scenario} / ${f.name}`;
  for (const n of unpairedNew) {
    const sameNew = unpairedNew.filter((x) => byName(x) === byName(n));
    const sameOld = [...olds.entries()].filter(([, o]) => byName(o) === byName(n));
    if (sameNew.length === 1 && sameOld.length === 1) {
      olds.delete(sameOld[0]![0]);
      pairs.push([figureKey(n), sameOld[0]![1], n]);
    } else pairs.push([figureKey(n), undefined, n]);
  }
  for (const [key, o] of olds) pairs.push([key, o, undefined]);
  return pairs.map(([key, o, n]) => row(key, (n ?? o)!, o?.value ?? null, n?.value ?? null, threshold));
}

function row(key: string, f: Figure, o: number | null, n: number | null, threshold: number): CompareRow {
  const ratio = o !== null && n !== null && o !== 0 ? n / o : null;
  const worse = ratio !== null &&
    (higherIsBetter(f) ? ratio < 1 / (1 + threshold) : ratio > 1 + threshold);
  return { key, unit: f.unit, old: o, new: n, ratio, worse };
}

/** The compare table as text lines. */
export function formatCompare(rows: CompareRow[]): string[] {
  const cells = rows.map((r) => [
    r.key,
    r.unit,
    r.old === null ? "—" : String(r.old),
    r.new === null ? "—" : String(r.new),
    r.ratio === null ? "—" : `${r.ratio.toFixed(2)}×`,
    r.worse ? "WORSE" : "",
  ]);
  const head = ["figure", "unit", "old", "new", "new/old", ""];
  const widths = head.map((h, i) => Math.min(90, Math.max(h.length, ...cells.map((c) => c[i]!.length))));
  const fmt = (c: string[]) =>
    c.map((s, i) => (i >= 2 && i <= 4 ? s.padStart(widths[i]!) : s.padEnd(widths[i]!)));
  return [
    fmt(head).join("  ").trimEnd(),
    widths.map((w) => "-".repeat(w)).join("  "),
    ...cells.map((c) => fmt(c).join("  ").trimEnd()),
  ];
}

/** Read the figures of a results file written by `bench/main.ts`. */
export async function readFigures(path: string): Promise<Figure[]> {
  const data = JSON.parse(await Deno.readTextFile(path)) as { figures?: Figure[] };
  if (!Array.isArray(data.figures)) throw new Error(`${path}: no "figures" array (not a bench results file)`);
  return data.figures;
}
