/**
 * The stylesheet of the print pages (the report and the run comparison), kept apart from the markup so the
 * sections stay readable: A4 portrait, running heads, the licence and "page n of N" in every footer.
 *
 * @module
 */

/** A CSS string literal; every character outside a safe set becomes a hex escape (no `</style>`). */
function cssString(s: string): string {
  let out = "";
  for (const ch of s) {
    out += /[A-Za-z0-9 .,:;_()\/+-]/.test(ch) ? ch : `\\${ch.codePointAt(0)!.toString(16)} `;
  }
  return `"${out}"`;
}

export const FONT_SANS =
  `-apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Liberation Sans", "Noto Sans", system-ui, sans-serif`;
const FONT_MONO =
  `ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", "DejaVu Sans Mono", monospace`;

/** The running heads and licence footer of a printed document (each page but the first has the heads). */
export interface PrintFrame {
  /** Top left, e.g. `Test-run report`. */
  title: string;
  /** Top right, e.g. the run and plan. */
  header: string;
  /** Bottom left of every page: the licence. */
  licence: string;
}

/**
 * The stylesheet of the print pages (the report and the run comparison): A4 portrait, "page n of N" and
 * the licence in the footer of every page, the same type, tables, badges and chips.
 */
export function printStylesheet(frame: PrintFrame): string {
  const licence = cssString(frame.licence);
  const header = cssString(frame.header);
  const title = cssString(frame.title);
  return `
@page {
  size: A4 portrait;
  margin: 16mm 16mm 18mm 16mm;
  @top-left { content: ${title}; font: 7.5pt ${FONT_SANS}; color: #6b7280; }
  @top-right { content: ${header}; font: 7.5pt ${FONT_SANS}; color: #6b7280; }
  @bottom-left { content: ${licence}; font: 7.5pt ${FONT_SANS}; color: #374151; vertical-align: top; padding-top: 4mm; }
  @bottom-right { content: "page " counter(page) " of " counter(pages); font: 7.5pt ${FONT_SANS}; color: #374151; vertical-align: top; padding-top: 4mm; }
}
@page :first { @top-left { content: none; } @top-right { content: none; } }
` + PRINT_RULES;
}

/** The rules of the print pages that do not depend on the frame: type, tables, badges, chips, sections. */
const PRINT_RULES = `:root {
  --ink: #111827; --muted: #6b7280; --line: #d1d5db; --soft: #f3f4f6; --accent: #1d4ed8;
  --ok: #047857; --ok-bg: #d1fae5; --bad: #b91c1c; --bad-bg: #fee2e2; --warn: #b45309; --warn-bg: #fef3c7;
}
* { box-sizing: border-box; }
html { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
body { margin: 0; font-family: ${FONT_SANS}; font-size: 10pt; line-height: 1.45; color: var(--ink); }
code, pre, .mono { font-family: ${FONT_MONO}; }
h1, h2, h3 { line-height: 1.2; margin: 0; break-after: avoid; }
h2 { font-size: 17pt; margin-bottom: 5mm; padding-bottom: 2mm; border-bottom: 2px solid var(--accent); }
h3 { font-size: 11.5pt; margin: 6mm 0 2.5mm; }
p { margin: 0 0 2.5mm; }
.muted { color: var(--muted); }
.eyebrow { font-size: 8.5pt; letter-spacing: .08em; text-transform: uppercase; color: var(--accent); font-weight: 600; }

.sheet + .sheet { break-before: page; }

table { width: 100%; border-collapse: collapse; margin: 0 0 3mm; font-size: 8.8pt; line-height: 1.35; }
th, td { border: 1px solid var(--line); padding: 1.2mm 2.2mm; text-align: left; vertical-align: top; }
thead th { background: var(--soft); font-weight: 600; }
thead { display: table-header-group; }
tr { break-inside: avoid; }
table.kv th { width: 34%; background: var(--soft); font-weight: 600; }
.annex table.kv th { width: 22%; }
table.kv th .key { margin-left: 1.5mm; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.key, .sub { font-family: ${FONT_MONO}; font-size: 8pt; color: var(--muted); font-weight: 400; }
.sub { display: block; }
code { font-size: 8.5pt; overflow-wrap: break-word; }
code.hex { white-space: nowrap; }

.badge { display: inline-flex; align-items: center; gap: 1.5mm; border-radius: 999px; padding: 1.2mm 3.5mm;
  font-weight: 700; font-size: 9.5pt; border: 1.5px solid currentColor; white-space: nowrap; }
.badge svg { width: 3.6mm; height: 3.6mm; }
.badge.ok { color: var(--ok); background: var(--ok-bg); }
.badge.bad { color: var(--bad); background: var(--bad-bg); }
.badge.warn { color: var(--warn); background: var(--warn-bg); }
.badge.info { color: #1e3a8a; background: #dbeafe; }
.badge.neutral { color: #374151; background: var(--soft); }
.chip { display: inline-block; border-radius: 3px; padding: 0 1.8mm; font-weight: 700; font-size: 8.5pt; }
.chip.on { color: var(--ok); background: var(--ok-bg); }
.chip.off { color: var(--bad); background: var(--bad-bg); }
.chip.unknown { color: var(--warn); background: var(--warn-bg); }

.callout { border: 1.5px solid var(--bad); background: var(--bad-bg); color: #7f1d1d; border-radius: 2mm;
  padding: 3mm 4mm; margin: 0 0 4mm; break-inside: avoid; }
.callout strong.title { display: block; font-size: 11pt; color: var(--bad); margin-bottom: 1mm; }
.callout p { margin: 0 0 1mm; }
.callout p:last-child { margin: 0; }
.callout.ok { border-color: var(--ok); background: var(--ok-bg); color: #064e3b; }

/* Cover */
.cover header { display: flex; justify-content: space-between; align-items: baseline; border-bottom: 1px solid var(--line);
  padding-bottom: 2mm; margin-bottom: 8mm; }
.cover h1 { font-size: 23pt; margin: 1.5mm 0 2mm; }
.cover .subtitle { font-size: 12pt; color: var(--muted); margin-bottom: 5mm; }
.badges { display: flex; flex-wrap: wrap; gap: 2.5mm; margin-bottom: 5mm; }
.hashes { margin-top: 5mm; border: 1px solid var(--line); border-radius: 2mm; padding: 3.5mm 4.5mm; background: #fafafa; break-inside: avoid; }
.hashes h2 { font-size: 12pt; border: 0; padding: 0; margin: 0 0 3mm; }
.hash { margin-bottom: 3mm; }
.hash .label { font-size: 8.5pt; font-weight: 600; color: var(--muted); text-transform: uppercase; letter-spacing: .05em; }
.hash code { display: block; font-size: 9.5pt; color: var(--ink); background: #fff; border: 1px solid var(--line);
  border-radius: 1mm; padding: 1.5mm 2mm; margin-top: .8mm; }
.verify { font-size: 8.5pt; color: #374151; margin: 0; }

/* Licence */
.lang { border-left: 3px solid var(--accent); padding: 0 0 0 4mm; margin: 0 0 6mm; break-inside: avoid; }
.lang h3 { margin-top: 0; }
.lang p { text-align: justify; hyphens: auto; margin-bottom: 2mm; }

/* Summary */
.verdict { display: grid; grid-template-columns: 1fr 1fr; gap: 4mm; margin-bottom: 3mm; }
.panel { border: 1px solid var(--line); border-radius: 2mm; padding: 3.5mm 4mm; break-inside: avoid; }
.panel .big { font-size: 20pt; font-weight: 700; font-variant-numeric: tabular-nums; }
.panel .label { font-size: 8.5pt; font-weight: 600; color: var(--muted); text-transform: uppercase; letter-spacing: .05em; }
.gauge { height: 2.6mm; background: var(--soft); border-radius: 2mm; overflow: hidden; margin: 2mm 0 1mm; border: 1px solid var(--line); }
.gauge > div { height: 100%; }
.kpis { display: grid; grid-template-columns: repeat(7, 1fr); border: 1px solid var(--line); border-radius: 2mm; overflow: hidden; }
.kpi { padding: 2.5mm 2mm; text-align: center; border-left: 1px solid var(--line); }
.kpi:first-child { border-left: 0; }
.kpi .label { font-size: 7.5pt; font-weight: 600; color: var(--muted); text-transform: uppercase; letter-spacing: .05em; }
.kpi .value { font-size: 12.5pt; font-weight: 700; font-variant-numeric: tabular-nums; white-space: nowrap; }
.kpi .unit { font-size: 8pt; color: var(--muted); }
.kpi.hl { background: #eff6ff; }

/* Plan */
.timeline { width: 100%; height: auto; display: block; margin: 1mm 0 3mm; }
.timeline text { font-family: ${FONT_SANS}; }
.swatch { display: inline-block; width: 3mm; height: 3mm; border-radius: .6mm; vertical-align: -0.3mm; margin-right: 1.5mm; }

/* Verdict */
.verdict-box { border: 2px solid var(--line); border-radius: 2mm; padding: 3mm 3.5mm; margin: 0 0 3mm; break-inside: avoid; }
.cover table { font-size: 8.3pt; margin-bottom: 2mm; }
.cover th, .cover td { padding: .8mm 2mm; }
.cover .subtitle { margin-bottom: 3mm; font-size: 11pt; }
.cover header { margin-bottom: 4mm; }
.cover h1 { font-size: 20pt; margin: 1mm 0 1.5mm; }
.slo-row { display: flex; align-items: center; gap: 3mm; margin-bottom: 2.5mm; }
.slo-row .badges { margin: 0; flex: none; }
.slo-row .slo-note { margin: 0; font-size: 7.6pt; line-height: 1.3; }
.cover .badges { margin-bottom: 1.5mm; }
/* The integrity box may continue on page 2 (a long verdict plus the signature note do not leave room for
   all of it): the report hash, first in the box, stays on the cover. */
.cover .hashes { margin-top: 3mm; padding: 2.5mm 4mm; break-inside: auto; }
.cover .hash, .cover .verify { break-inside: avoid; }
.cover .hashes h2 { font-size: 10.5pt; margin-bottom: 1.5mm; }
.cover .hash { margin-bottom: 1.5mm; }
.cover .verify { font-size: 7.8pt; }
.cover .hash code { font-size: 8.8pt; padding: 1mm 2mm; }
.verdict-box.ok { border-color: var(--ok); }
.verdict-box.bad { border-color: var(--bad); }
.verdict-box.warn { border-color: var(--warn); }
.verdict-head { display: flex; align-items: center; gap: 4mm; margin-bottom: 2mm; }
.badge.big { font-size: 15pt; padding: 2mm 5mm; }
.badge.big svg { width: 5mm; height: 5mm; }
.meaning { font-size: 11pt; font-weight: 600; }
table.reasons { margin-bottom: 2mm; }
table.reasons { font-size: 7.9pt; line-height: 1.3; }
table.reasons td:first-child { width: 25%; font-weight: 600; }
table.reasons td:nth-child(2) { width: 14%; }
.rule { font-size: 8pt; color: var(--muted); margin: 0; }
.slo-note { font-size: 8pt; color: #374151; margin: 1mm 0 3mm; }
.panel .slo-note { margin: 2mm 0 0; }
tr.hl-bad td { background: var(--bad-bg); }
tr.hl-warn td { background: var(--warn-bg); }
.chip.ok { color: var(--ok); background: var(--ok-bg); }
.chip.bad { color: var(--bad); background: var(--bad-bg); }
.chip.warn { color: var(--warn); background: var(--warn-bg); }
.chip.neutral { color: #374151; background: var(--soft); }
.bad-text { color: var(--bad); }
.warn-text { color: var(--warn); }
td.small, .small { font-size: 7.8pt; }

/* Annexes */
.annex-meta { font-size: 8pt; color: var(--muted); }
.annex-meta code.hex { font-size: 7.5pt; }
.short, td.nw, .sub { white-space: nowrap; }
table.annex-table { table-layout: fixed; font-size: 8pt; }
table.annex-table td { overflow-wrap: break-word; }
table.annex-table td.id { font-size: 7pt; }
.exact { margin-bottom: 5mm; }
.exact h3 { margin: 0 0 1mm; font-size: 10pt; }
.exact .body { font-family: ${FONT_MONO}; font-size: 6.6pt; line-height: 1.3; background: #f9fafb;
  border: 1px solid var(--line); border-radius: 1mm; padding: 2mm 2.5mm; }
.exact .ln { white-space: pre; padding-left: 6ch; text-indent: -6ch; }

.annex { margin-bottom: 8mm; }
.keep { break-inside: avoid; }
.annex h3 { margin-top: 0; }
.annex pre { font-size: 7.5pt; line-height: 1.35; white-space: pre-wrap; overflow-wrap: anywhere; word-break: break-all;
  background: #f9fafb; border: 1px solid var(--line); border-radius: 1mm; padding: 2.5mm 3mm; margin: 0;
  -webkit-box-decoration-break: clone; box-decoration-break: clone; }

.screen-only { display: none; }
@media screen {
  body { background: #e5e7eb; padding: 8mm 0; }
  .sheet { background: #fff; width: 210mm; max-width: calc(100% - 16px); margin: 0 auto 8mm; padding: 16mm;
    box-shadow: 0 1px 3px rgba(0,0,0,.12), 0 8px 24px rgba(0,0,0,.08); border-radius: 1mm; }
  .screen-only { display: block; }
  .topbar { width: 210mm; max-width: calc(100% - 16px); margin: 0 auto 4mm; font-size: 9pt; color: #374151;
    display: flex; justify-content: space-between; gap: 4mm; }
  .screen-footer { width: 210mm; max-width: calc(100% - 16px); margin: 0 auto; font-size: 8.5pt; color: #4b5563; }
}
@media screen and (max-width: 720px) {
  .sheet { padding: 6mm 5mm; }
  .verdict { grid-template-columns: 1fr; }
  .kpis { grid-template-columns: repeat(4, 1fr); }
  .kpi:nth-child(5) { border-left: 0; }
  .kpi:nth-child(n + 5) { border-top: 1px solid var(--line); }
  .topbar { flex-direction: column; }
  table { display: block; overflow-x: auto; }
  code.hex { white-space: normal; word-break: break-all; }
  .exact .body { overflow-x: auto; }
}
`;
