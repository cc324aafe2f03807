/**
 * The print-ready HTML page of a test-run report (spec 4.11), rendered on the server with Preact.
 *
 * One self-contained document (inline CSS and SVG, no fonts, scripts or images from elsewhere) that
 * reads well on screen and prints on A4 portrait with a "page X of Y" counter and the licence in the
 * footer of every page. Content in order: cover, licensing (English, Português (Brasil), Español),
 * executive summary, test plan configuration, annexes.
 *
 * @module
 */
import { renderToString } from "preact-render-to-string";
import type { ComponentChildren } from "preact";
import type { PlanPhase } from "../plan.ts";
import type { Annex, Figure, ReportData, VerdictReason } from "./types.ts";
import { AnnexTable } from "./annex_tables.tsx";
import { type ReportSignatureInfo, SigningKeyHash, VerificationNote } from "./signature_note.tsx";

/** Options of {@link renderReportPage}. */
export interface ReportPageOptions {
  /**
   * A note shown on screen only (never printed), e.g. how the page was reached:
   * `"Shared link, valid until 2026-11-22 14:00 UTC"`. The printed document is the same either way.
   */
  shareNote?: string;
  /** The report's signature: the cover shows the key fingerprint and how to verify (signature_note.tsx). */
  signature?: ReportSignatureInfo;
}

/**
 * Render a report as a complete HTML5 document (`<!DOCTYPE html>` included).
 *
 * @example
 * ```ts
 * import { renderReportPage } from "./page.tsx";
 * const html = renderReportPage(report, { shareNote: "Shared link, valid for 24 h" });
 * return new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } });
 * ```
 */
export function renderReportPage(report: ReportData, opts: ReportPageOptions = {}): string {
  return "<!DOCTYPE html>" + renderToString(
    <ReportPage report={report} shareNote={opts.shareNote} signature={opts.signature} />,
  );
}

// ---------------------------------------------------------------------------------------------
// Formatting

const num = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });
const int = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

const fmtMs = (n: number) => `${num.format(n)} ms`;
const fmtPct = (n: number) => `${new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 }).format(n)} %`;

/** `2026-11-21 13:00:04 UTC`; an unparsable value is shown as given. */
export function fmtDate(iso: string): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  return new Date(t).toISOString().replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC");
}

function fmtDuration(totalS: number): string {
  const s = Math.max(0, Math.round(totalS));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const parts = [h > 0 && `${h} h`, m > 0 && `${m} min`, sec > 0 && `${sec} s`].filter(Boolean);
  return parts.length > 0 ? parts.join(" ") : "0 s";
}

function fmtValue(v: string | number | boolean): string {
  return typeof v === "number" ? num.format(v) : String(v);
}

function fmtLoad(load: Record<string, number | string>): string {
  const entries = Object.entries(load);
  return entries.length === 0 ? "—" : entries.map(([k, v]) => `${k}: ${fmtValue(v)}`).join(", ");
}

/** A CSS string literal; every character outside a safe set becomes a hex escape (no `</style>`). */
function cssString(s: string): string {
  let out = "";
  for (const ch of s) {
    out += /[A-Za-z0-9 .,:;_()\/+-]/.test(ch) ? ch : `\\${ch.codePointAt(0)!.toString(16)} `;
  }
  return `"${out}"`;
}

// ---------------------------------------------------------------------------------------------
// Styles

const FONT_SANS =
  `-apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Liberation Sans", "Noto Sans", system-ui, sans-serif`;
const FONT_MONO =
  `ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", "DejaVu Sans Mono", monospace`;
const PHASE_COLOURS = ["#1d4ed8", "#0891b2", "#059669", "#7c3aed", "#db2777", "#ea580c", "#4b5563"];

function styles(report: ReportData): string {
  return printStylesheet({
    title: "Test-run report",
    header: `Run ${report.meta.runId} \u00b7 ${report.meta.planIdentifier}`,
    licence: `Licence ${report.license.id} \u2014 ${report.license.name}`,
  });
}

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
:root {
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
}

// ---------------------------------------------------------------------------------------------
// Components

const Check = () => (
  <svg viewBox="0 0 16 16" aria-hidden="true">
    <path
      d="M3 8.5l3.2 3.2L13 5"
      fill="none"
      stroke="currentColor"
      stroke-width="2.4"
      stroke-linecap="round"
    />
  </svg>
);
const Cross = () => (
  <svg viewBox="0 0 16 16" aria-hidden="true">
    <path
      d="M4 4l8 8M12 4l-8 8"
      fill="none"
      stroke="currentColor"
      stroke-width="2.4"
      stroke-linecap="round"
    />
  </svg>
);

function SloBadge({ report }: { report: ReportData }) {
  const pass = report.slo.pass;
  return (
    <span class={`badge ${pass ? "ok" : "bad"}`} data-slo={pass ? "pass" : "fail"}>
      {pass ? <Check /> : <Cross />}
      {pass ? "SLO PASS" : "SLO FAIL"}
    </span>
  );
}

function OutcomeBadge({ outcome }: { outcome: string }) {
  const kind = outcome === "passed"
    ? "ok"
    : outcome === "failed"
    ? "bad"
    : outcome === "aborted"
    ? "warn"
    : "neutral";
  return <span class={`badge ${kind}`}>Outcome: {outcome}</span>;
}

function Chip({ state }: { state: string }) {
  const kind = state === "on" || state === "off" ? state : "unknown";
  return <span class={`chip ${kind}`}>{state}</span>;
}

function Kv({ children }: { children: ComponentChildren }) {
  return (
    <table class="kv">
      <tbody>{children}</tbody>
    </table>
  );
}

/** A key/value row; `field` names the ReportData member shown. */
function Row(
  { label, field, children }: { label: ComponentChildren; field?: string; children: ComponentChildren },
) {
  return (
    <tr>
      <th scope="row">
        {label}
        {field && <span class="key">{field}</span>}
      </th>
      <td>{children}</td>
    </tr>
  );
}

/** The invalidation notice and decrypt-mode alerts; `detailed` lists each alert (summary page). */
function Invalidation({ report, detailed }: { report: ReportData; detailed: boolean }) {
  const { slo, tlsDecrypt } = report;
  const alerts = tlsDecrypt.alerts;
  if (!tlsDecrypt.resultsInvalidated && !slo.verdictNote && alerts.length === 0) return null;
  const title = tlsDecrypt.resultsInvalidated
    ? "SLO verdict invalidated"
    : alerts.length > 0
    ? "TLS decryption changed during the run"
    : "Verdict note";
  return (
    <div class="callout" role="alert" data-invalidation="">
      <strong class="title">{title}</strong>
      <p>
        {slo.verdictNote ??
          (tlsDecrypt.resultsInvalidated
            ? "A change of TLS decryption state during the run invalidated the results that span it."
            : "")}
      </p>
      {alerts.length > 0 && !detailed && (
        <p>
          {alerts.length}{" "}
          TLSDecryptModeChanged alert{alerts.length === 1 ? "" : "s"}: see the executive summary.
        </p>
      )}
      {detailed && alerts.map((al) => (
        <p data-alert="">
          <strong>{al.name}</strong> at {fmtDate(al.at)}: TLS decryption on{" "}
          <strong>{al.deviceHostname}</strong> changed from <strong>{al.from}</strong> to{" "}
          <strong>{al.to}</strong> (snapshot {al.snapshotId}).
        </p>
      ))}
    </div>
  );
}

export const VERDICT_KIND: Record<string, string> = {
  pass: "ok",
  fail: "bad",
  invalid: "bad",
  inconclusive: "warn",
  none: "neutral",
};
const VERDICT_MEANING: Record<string, string> = {
  pass: "Every input of the verdict passed.",
  fail: "A measured criterion was missed.",
  invalid: "The results do not measure what the plan asked for.",
  inconclusive: "The evidence is not enough to call this run a pass.",
};
const INPUT_LABEL: Record<string, string> = {
  outcome: "Operator's declared outcome",
  slo: "p99 latency vs SLO target",
  "error-rate": "Error rate",
  "load-generator-thresholds": "Load generator thresholds",
  preflight: "Pre-flight at start",
  "decrypt-alerts": "TLS decryption alerts",
  "decrypt-config": "TLS decryption vs plan",
  coverage: "Coverage of the plan",
  "configuration-drift": "Configuration drift during the run",
};
const effectWord = (e: string) => e === "none" ? "n/a" : e.toUpperCase();

/** The overall verdict, first on the cover: its value, what it means, and every input with its reason. */
function VerdictBlock({ verdict }: { verdict: NonNullable<ReportData["verdict"]> }) {
  const kind = VERDICT_KIND[verdict.value] ?? "neutral";
  const order = (r: VerdictReason) => ["invalid", "fail", "inconclusive", "pass", "none"].indexOf(r.effect);
  const reasons = [...verdict.reasons].sort((a, b) => order(a) - order(b));
  return (
    <div class={`verdict-box ${kind}`} data-verdict={verdict.value}>
      <div class="verdict-head">
        <span class={`badge big ${kind}`}>
          {verdict.value === "pass" ? <Check /> : <Cross />}
          VERDICT: {verdict.value.toUpperCase()}
        </span>
        <span class="meaning">{VERDICT_MEANING[verdict.value] ?? ""}</span>
      </div>
      <table class="reasons">
        <thead>
          <tr>
            <th>Input</th>
            <th>Result</th>
            <th>Reason</th>
          </tr>
        </thead>
        <tbody>
          {reasons.map((r) => (
            <tr class={r.effect === "pass" || r.effect === "none" ? "" : `hl-${VERDICT_KIND[r.effect]}`}>
              <td>{INPUT_LABEL[r.input] ?? r.input}</td>
              <td>
                <span class={`chip ${VERDICT_KIND[r.effect] ?? "neutral"}`}>{effectWord(r.effect)}</span>
              </td>
              <td>{r.detail}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="rule">
        Rule{" "}
        <span class="mono">{verdict.rule}</span>: the verdict is the most severe result above (invalid, then
        fail, then inconclusive, then pass).
      </p>
    </div>
  );
}

/** The SLO badge's relation to the overall verdict, printed beside the badge wherever it appears. */
function SloExplained({ report }: { report: ReportData }) {
  const v = report.verdict;
  if (!v) return null;
  const others = v.reasons.filter((r) => r.input !== "slo" && r.effect !== "pass" && r.effect !== "none");
  const sloLine =
    `SLO ${report.slo.pass ? "PASS" : "FAIL"}: p99 ${fmtMs(report.slo.observedP99Ms)} against a target ` +
    `of ${fmtMs(report.slo.targetP99Ms)}${
      report.tlsDecrypt.resultsInvalidated ? ", invalidated by a TLS decryption change" : ""
    }.`;
  return (
    <p class="slo-note" data-slo-note="">
      {sloLine} The SLO is one input of the overall verdict, <strong>{v.value.toUpperCase()}</strong>
      {v.value === "pass"
        ? "."
        : others.length
        ? `, which also follows from: ${
          others.map((r) => `${INPUT_LABEL[r.input] ?? r.input} ${effectWord(r.effect)}`).join(", ")
        }.`
        : "."}
    </p>
  );
}

function Cover({ report, signature }: { report: ReportData; signature?: ReportSignatureInfo }) {
  const { meta, license } = report;
  return (
    <section class="sheet cover" data-section="cover">
      <header>
        <span class="eyebrow">Test-run report{license.issuer ? ` · ${license.issuer}` : ""}</span>
        <span class="muted">Generated {fmtDate(report.generatedAt)} · ReportData v{report.version}</span>
      </header>
      <div class="eyebrow">{meta.planIdentifier}</div>
      <h1>{meta.planDisplayName}</h1>
      <div class="subtitle">
        Run <strong>{meta.runId}</strong> · {fmtDate(meta.startedAt)}
        {license.licensee ? <>{" "}· for {license.licensee}</> : null}
      </div>
      {report.verdict
        ? (
          <>
            <VerdictBlock verdict={report.verdict} />
            <div class="badges">
              <SloBadge report={report} />
              <span class="badge info">Licence: {license.id}</span>
            </div>
            <SloExplained report={report} />
          </>
        )
        : (
          <>
            <div class="badges">
              <SloBadge report={report} />
              <OutcomeBadge outcome={meta.outcome} />
              <span class="badge info">Licence: {license.id}</span>
            </div>
            <p class="muted" data-legacy="">
              This report was frozen before reports carried an overall verdict: the SLO badge judges p99
              latency only, the outcome is the operator's declaration.
            </p>
            <Invalidation report={report} detailed={false} />
          </>
        )}
      <Kv>
        <Row label="Run · execution id">
          <span class="mono">
            {meta.runId} · {meta.executionId}
          </span>
        </Row>
        <Row label="Plan">
          {meta.planDisplayName}
          <span class="sub">{meta.planIdentifier} · catalog version {meta.planCatalogVersion}</span>
        </Row>
        {license.issuer && <Row label="Test lab">{license.issuer}</Row>}
        <Row label="Customer (licensee)">
          {license.licensee ??
            (license.issuer ? <span class="muted">none named: internal use</span> : license.holder)}
        </Row>
        <Row label="Period">
          {fmtDate(meta.startedAt)} → {fmtDate(meta.endedAt)} ({fmtDuration(meta.durationS)})
        </Row>
        {!report.verdict && (
          <>
            <Row label="Outcome">{meta.outcome}</Row>
            <Row label="SLO (p99)">
              {report.slo.pass ? "pass" : "fail"} · observed {fmtMs(report.slo.observedP99Ms)} vs target{" "}
              {fmtMs(report.slo.targetP99Ms)}
            </Row>
          </>
        )}
        <Row label="Licence">
          {license.id} — {license.name}
        </Row>
        {meta.notes && <Row label="Notes">{meta.notes}</Row>}
      </Kv>
      <div class="hashes" data-integrity="">
        <h2>Integrity</h2>
        <div class="hash" data-hash-block="report">
          <div class="label">Report SHA-256</div>
          <code class="hex" data-hash="report">{report.reportSha256}</code>
        </div>
        <div class="hash" data-hash-block="plan">
          <div class="label">Plan snapshot SHA-256</div>
          <code class="hex" data-hash="plan">{meta.planSnapshotSha256}</code>
        </div>
        <SigningKeyHash signature={signature} />
        <p class="verify">How to verify this report without this service: see the last page.</p>
      </div>
    </section>
  );
}

const LANGS = [
  { key: "en", heading: "English" },
  { key: "pt-BR", heading: "Português (Brasil)" },
  { key: "es", heading: "Español" },
] as const;

/** The licensing sheet: the licence and its restrictions in English, Portuguese and Spanish. */
export function Licence({ report }: { report: Pick<ReportData, "license"> }) {
  const { license } = report;
  return (
    <section class="sheet" data-section="licence">
      <h2>Licensing and use restrictions</h2>
      <p class="muted">
        Licence <strong>{license.id}</strong> — {license.name}. Licensed to {license.holder}
        {license.issuer ? <>; issued by {license.issuer}</> : null}.
      </p>
      {LANGS.map(({ key, heading }) => (
        <div class="lang" lang={key}>
          <h3>{heading}</h3>
          {license.restrictions[key].split(/\n+/).filter((t) => t.trim()).map((t, i) => <p key={i}>{t}</p>)}
        </div>
      ))}
    </section>
  );
}

function Summary({ report }: { report: ReportData }) {
  const { slo, results, tlsDecrypt } = report;
  const a = results.aggregate;
  const burned = slo.errorBudgetBurnedPct;
  const gaugeColour = burned > 100 ? "#b91c1c" : burned >= 75 ? "#d97706" : "#059669";
  const ratio = slo.targetP99Ms > 0 ? (slo.observedP99Ms / slo.targetP99Ms) * 100 : 0;
  const kpis: Array<[string, string, string, boolean?]> = [
    ["Samples", int.format(a.count), "requests"],
    ["Min", num.format(a.min_ms), "ms"],
    ["Mean", num.format(a.mean_ms), "ms"],
    ["p50", num.format(a.p50_ms), "ms"],
    ["p95", num.format(a.p95_ms), "ms"],
    ["p99", num.format(a.p99_ms), "ms", true],
    ["Max", num.format(a.max_ms), "ms"],
  ];
  const mismatch = (s: string) => s !== tlsDecrypt.required;
  const estimated =
    (slo.errorBudgetExactness ?? (results.source === "k6-summary" ? "estimated" : "exact")) ===
      "estimated";
  const prov = results.latencyProvenance ??
    (results.source === "k6-summary"
      ? { source: "load-generator", exactness: "exact", basis: "k6 http_req_duration trend (p50 = med)" }
      : { source: "service", exactness: "exact", basis: "percentiles of the submitted samples" });
  return (
    <section class="sheet" data-section="summary">
      <h2>1. Executive summary</h2>
      <Invalidation report={report} detailed />
      <div class="verdict">
        <div class="panel">
          <div class="label">Service level objective (p99 latency)</div>
          <div style="margin: 2mm 0">
            <SloBadge report={report} />
          </div>
          <div>
            Observed p99 <strong>{fmtMs(slo.observedP99Ms)}</strong> against a target of{" "}
            <strong>{fmtMs(slo.targetP99Ms)}</strong> ({fmtPct(ratio)} of target).
          </div>
          <SloExplained report={report} />
        </div>
        <div class="panel">
          <div class="label">
            Error budget burned{estimated ? " (estimated)" : " (exact)"}
          </div>
          <div class="big">{fmtPct(burned)}</div>
          <div class="gauge" aria-hidden="true">
            <div style={`width:${Math.max(0, Math.min(100, burned))}%;background:${gaugeColour}`} />
          </div>
          <div class="muted" style="font-size:8pt">
            A p99 objective lets 1 % of requests exceed the target; burned = share of requests slower than the
            target ÷ 1 %. {estimated
              ? "Estimated by the service from the load generator's exported percentiles (linear interpolation)."
              : "Exact: counted over every submitted sample."}
          </div>
        </div>
      </div>

      <h3>Latency, aggregate over the run</h3>
      <div class="kpis">
        {kpis.map(([label, value, unit, hl]) => (
          <div class={hl ? "kpi hl" : "kpi"}>
            <div class="label">{label}</div>
            <div class="value">{value}</div>
            <div class="unit">{unit}</div>
          </div>
        ))}
      </div>
      <p class="muted" style="font-size:8pt;margin-top:1.5mm">
        Source: {results.source === "k6-summary" ? "k6 summary" : "raw latency samples"}; percentiles{" "}
        {prov.source === "load-generator"
          ? "computed by the load generator (k6)"
          : "computed by the service"}, {prov.exactness} ({prov.basis}).
      </p>

      <h3>Whole result</h3>
      <WholeResult report={report} />

      <h3>TLS decryption</h3>
      <table>
        <thead>
          <tr>
            <th>Required by plan</th>
            <th>Active at start</th>
            <th>Active at end</th>
            <th>Assessment</th>
          </tr>
        </thead>
        <tbody>
          <tr>
            <td>
              <Chip state={tlsDecrypt.required} />
            </td>
            <td>
              <Chip state={tlsDecrypt.activeAtStart} />
            </td>
            <td>
              <Chip state={tlsDecrypt.activeAtEnd} />
            </td>
            <td>
              {tlsDecrypt.resultsInvalidated
                ? "Changed during the run: results invalidated"
                : mismatch(tlsDecrypt.activeAtStart) || mismatch(tlsDecrypt.activeAtEnd)
                ? "Differs from the plan"
                : "Matches the plan throughout"}
            </td>
          </tr>
        </tbody>
      </table>

      <h3>Decrypt-mode alerts</h3>
      {tlsDecrypt.alerts.length === 0
        ? <p class="muted">No TLSDecryptModeChanged alert was raised during the run.</p>
        : (
          <table>
            <thead>
              <tr>
                <th>Alert</th>
                <th>Time</th>
                <th>Device</th>
                <th>Change</th>
                <th>Snapshot</th>
              </tr>
            </thead>
            <tbody>
              {tlsDecrypt.alerts.map((al) => (
                <tr>
                  <td>{al.name}</td>
                  <td>{fmtDate(al.at)}</td>
                  <td>
                    {al.deviceHostname}
                    <span class="sub">{al.deviceId}</span>
                  </td>
                  <td>
                    <Chip state={al.from} /> → <Chip state={al.to} />
                  </td>
                  <td class="mono">{al.snapshotId}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
    </section>
  );
}

const FIGURES: Array<[keyof NonNullable<ReportData["results"]["figures"]>, string]> = [
  ["durationS", "Duration of the load"],
  ["requests", "Requests"],
  ["requestsPerSecond", "Throughput, requests"],
  ["bitsPerSecond", "Throughput, bits"],
  ["failedRequests", "Failed requests"],
  ["errorRatePct", "Error rate"],
  ["bytesSent", "Bytes sent"],
  ["bytesReceived", "Bytes received"],
  ["iterations", "Iterations"],
];

/** 1,234.5 Mbit/s and the like for bit rates and byte counts; plain numbers otherwise. */
function fmtFigure(f: Figure): string {
  const scaled = (v: number, unit: string, base: number, prefixes: string[]) => {
    let i = 0;
    while (v >= base && i < prefixes.length - 1) {
      v /= base;
      i++;
    }
    return `${num.format(v)} ${prefixes[i]}${unit}`;
  };
  if (f.unit === "bit/s") return scaled(f.value, "bit/s", 1000, ["", "k", "M", "G", "T"]);
  if (f.unit === "bytes") {
    return `${scaled(f.value, "B", 1000, ["", "k", "M", "G", "T"])} (${int.format(f.value)} bytes)`;
  }
  if (f.unit === "s") return `${fmtDuration(f.value)} (${num.format(f.value)} s)`;
  if (f.unit === "%") {
    const small = f.value !== 0 && Math.abs(f.value) < 1;
    const opts = small ? { maximumSignificantDigits: 2 } : { maximumFractionDigits: 3 };
    return `${new Intl.NumberFormat("en-US", opts).format(f.value)} %`;
  }
  return `${num.format(f.value)} ${f.unit}`;
}

/** Every figure of the result, with where it came from and whether it is exact. */
function WholeResult({ report }: { report: ReportData }) {
  const { results, plan } = report;
  const f = results.figures;
  if (!f) {
    return (
      <p class="muted">
        This report was frozen before the whole result was recorded: only the latency aggregate above is
        available.
      </p>
    );
  }
  const thresholds = results.thresholds ?? [];
  return (
    <>
      <table data-figures="">
        <thead>
          <tr>
            <th>Figure</th>
            <th class="num">Value</th>
            <th>From</th>
            <th>Exact?</th>
            <th>How</th>
          </tr>
        </thead>
        <tbody>
          {FIGURES.map(([key, label]) => {
            const x = f[key];
            const over = key === "errorRatePct" && x && plan.maxErrorRatePct !== undefined &&
              x.value > plan.maxErrorRatePct;
            return (
              <tr class={over ? "hl-bad" : ""}>
                <td>
                  {label}
                  {key === "errorRatePct" && plan.maxErrorRatePct !== undefined && (
                    <span class="sub">plan allows ≤ {plan.maxErrorRatePct} %</span>
                  )}
                </td>
                <td class="num">{x ? fmtFigure(x) : <span class="muted">not reported</span>}</td>
                <td>
                  {x ? (x.source === "load-generator" ? "load generator" : "computed by the service") : "—"}
                </td>
                <td>{x ? x.exactness : "—"}</td>
                <td class="small">{x ? x.basis : "the input does not carry it"}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {(thresholds.length > 0 || results.checks) && (
        <table data-thresholds="">
          <thead>
            <tr>
              <th>Load generator threshold or check</th>
              <th>Result</th>
            </tr>
          </thead>
          <tbody>
            {thresholds.map((t) => (
              <tr class={t.ok ? "" : "hl-bad"}>
                <td>
                  <span class="mono">{t.metric}</span> <span class="mono">{t.expression}</span>
                </td>
                <td>
                  <span class={`chip ${t.ok ? "ok" : "bad"}`}>{t.ok ? "HELD" : "CROSSED"}</span>
                </td>
              </tr>
            ))}
            {results.checks && (
              <tr class={results.checks.fails > 0 ? "hl-warn" : ""}>
                <td>k6 checks</td>
                <td>
                  {int.format(results.checks.passes)} passed, {int.format(results.checks.fails)} failed
                </td>
              </tr>
            )}
          </tbody>
        </table>
      )}
    </>
  );
}

/** Round axis step so the timeline has at most ~8 ticks. */
function tickStep(total: number): number {
  const steps = [30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 86400];
  return steps.find((s) => total / s <= 8) ?? Math.ceil(total / 8);
}

function fmtTick(s: number): string {
  if (s === 0) return "0";
  if (s % 3600 === 0) return `${s / 3600} h`;
  if (s % 60 === 0) return `${s / 60} min`;
  return `${s} s`;
}

function Timeline({ phases, report }: { phases: PlanPhase[]; report: ReportData }) {
  const total = phases.reduce((t, p) => t + Math.max(0, p.durationS), 0);
  if (total <= 0) return <p class="muted">No phase has a duration.</p>;
  const W = 1000;
  const barY = 20;
  const barH = 44;
  const x = (s: number) => (s / total) * W;
  let offset = 0;
  const segs = phases.map((p, i) => {
    const seg = { p, i, start: offset, w: x(Math.max(0, p.durationS)), x0: x(offset) };
    offset += Math.max(0, p.durationS);
    return seg;
  });
  const step = tickStep(total);
  const ticks: number[] = [];
  for (let t = 0; t <= total; t += step) ticks.push(t);
  const started = Date.parse(report.meta.startedAt);
  const markers = report.tlsDecrypt.alerts
    .map((al) => ({ al, s: (Date.parse(al.at) - started) / 1000 }))
    .filter(({ s }) => Number.isFinite(s) && s >= 0 && s <= total);
  return (
    <svg
      class="timeline"
      viewBox={`0 0 ${W} 96`}
      role="img"
      aria-label={`Phase timeline, ${fmtDuration(total)} in total`}
    >
      {segs.map(({ p, i, w, x0 }) => (
        <g>
          <rect
            x={x0}
            y={barY}
            width={Math.max(w - 1.5, 0.5)}
            height={barH}
            rx="3"
            fill={PHASE_COLOURS[i % PHASE_COLOURS.length]}
          />
          {w >= 70 && (
            <>
              <text x={x0 + 6} y={barY + 19} font-size="12" font-weight="700" fill="#fff">
                {p.name.length * 7 > w - 10 ? `${i + 1}` : p.name}
              </text>
              <text x={x0 + 6} y={barY + 36} font-size="11.5" fill="#fff">{fmtDuration(p.durationS)}</text>
            </>
          )}
          {w < 70 && w >= 14 && (
            <text
              x={x0 + w / 2}
              y={barY + 27}
              font-size="12"
              font-weight="700"
              fill="#fff"
              text-anchor="middle"
            >
              {i + 1}
            </text>
          )}
        </g>
      ))}
      <line x1="0" y1={barY + barH + 4} x2={W} y2={barY + barH + 4} stroke="#9ca3af" stroke-width="1" />
      {ticks.map((t) => (
        <g>
          <line
            x1={x(t)}
            y1={barY + barH + 4}
            x2={x(t)}
            y2={barY + barH + 9}
            stroke="#9ca3af"
            stroke-width="1"
          />
          <text
            x={x(t)}
            y={barY + barH + 22}
            font-size="11.5"
            fill="#4b5563"
            text-anchor={t === 0 ? "start" : x(t) > W - 30 ? "end" : "middle"}
          >
            {fmtTick(t)}
          </text>
        </g>
      ))}
      {markers.map(({ al, s }) => (
        <g>
          <line x1={x(s)} y1="4" x2={x(s)} y2={barY + barH + 6} stroke="#b91c1c" stroke-width="3" />
          <text
            x={x(s) > W * 0.65 ? x(s) - 6 : x(s) + 6}
            y="14"
            font-size="11.5"
            font-weight="700"
            fill="#b91c1c"
            text-anchor={x(s) > W * 0.65 ? "end" : "start"}
          >
            decrypt {al.from}→{al.to} ({al.deviceHostname})
          </text>
        </g>
      ))}
    </svg>
  );
}

function PlanConfig({ report }: { report: ReportData }) {
  const { plan, topology, meta } = report;
  let offset = 0;
  return (
    <section class="sheet" data-section="plan">
      <h2>2. Test plan configuration</h2>
      <p>
        <strong>{plan.displayName}</strong> <span class="muted">({plan.identifier})</span>
      </p>
      {plan.description && <p>{plan.description}</p>}

      <h3>Parameters</h3>
      <Kv>
        <Row label="Plan identifier" field="identifier">
          <span class="mono">{plan.identifier}</span>
        </Row>
        <Row label="Catalog version">{meta.planCatalogVersion}</Row>
        <Row label="TLS decryption" field="tlsDecrypt">
          <Chip state={plan.tlsDecrypt} />
        </Row>
        <Row label="SLO target, p99" field="sloTargetP99Ms">{fmtMs(plan.sloTargetP99Ms)}</Row>
        <Row label="Deployment mode" field="deploymentMode">{plan.deploymentMode}</Row>
        <Row label="Vendors" field="vendors">{plan.vendors.join(", ") || "—"}</Row>
        <Row label="Device roles" field="deviceRoles">{plan.deviceRoles.join(", ") || "—"}</Row>
        {Object.entries(plan.parameters).map(([k, v]) => (
          <Row key={k} label={<span class="mono">{k}</span>}>{fmtValue(v)}</Row>
        ))}
      </Kv>

      <h3>Phase timeline</h3>
      <Timeline phases={plan.phases} report={report} />
      <table>
        <thead>
          <tr>
            <th class="num">#</th>
            <th>Phase</th>
            <th class="num">Starts at</th>
            <th class="num">Duration</th>
            <th>Offered load</th>
          </tr>
        </thead>
        <tbody>
          {plan.phases.map((p, i) => {
            const start = offset;
            offset += Math.max(0, p.durationS);
            return (
              <tr>
                <td class="num">{i + 1}</td>
                <td>
                  <span class="swatch" style={`background:${PHASE_COLOURS[i % PHASE_COLOURS.length]}`} />
                  {p.name}
                </td>
                <td class="num">{fmtDuration(start)}</td>
                <td class="num">{fmtDuration(p.durationS)}</td>
                <td>{fmtLoad(p.load)}</td>
              </tr>
            );
          })}
          <tr>
            <td />
            <th>Total</th>
            <td />
            <th class="num">{fmtDuration(offset)}</th>
            <td class="muted">
              Run took {fmtDuration(meta.durationS)}
              {report.results.figures?.durationS && offset > 0
                ? `; the load ran ${fmtDuration(report.results.figures.durationS.value)} (${
                  fmtPct(report.results.figures.durationS.value / offset * 100)
                } of the plan)`
                : ""}
            </td>
          </tr>
        </tbody>
      </table>

      <div class="keep">
        <h3>Topology</h3>
        <Kv>
          <Row label="Deployment mode" field="deploymentMode">{topology.deploymentMode}</Row>
          <Row label="Server management controllers" field="ucsCount">{topology.ucsCount}</Row>
        </Kv>
        <table data-inventory="">
          <thead>
            <tr>
              <th>Hostname</th>
              <th>Vendor</th>
              <th>Role</th>
              <th>Model</th>
              <th>Software</th>
              <th>Serial number</th>
            </tr>
          </thead>
          <tbody>
            {topology.devices.length === 0 && (
              <tr>
                <td colSpan={6} class="muted">No device was registered at run start.</td>
              </tr>
            )}
            {topology.devices.map((d) => {
              const inv = topology.inventory?.[d.id];
              return (
                <tr>
                  <td>
                    {d.hostname}
                    <span class="sub">{d.id}</span>
                  </td>
                  <td class="nw">{d.vendor}</td>
                  <td>{d.deviceRole ?? "—"}</td>
                  {inv?.status === "read"
                    ? (
                      <>
                        <td>{inv.model ?? "—"}</td>
                        <td>{inv.softwareVersion ?? "—"}</td>
                        <td class="mono">{inv.serialNumber ?? "—"}</td>
                      </>
                    )
                    : (
                      <td colSpan={3} class="warn-text">
                        {!topology.inventory
                          ? "not recorded (report frozen before device inventories)"
                          : inv?.status === "no-snapshot"
                          ? "facts not read: no snapshot of the device's inventory label at start"
                          : inv?.status === "unreadable"
                          ? "facts not readable: the adapter could not read the device's snapshot"
                          : "facts not available: the adapter reports no inventory"}
                      </td>
                    )}
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}

const annexLetter = (i: number) =>
  i < 26
    ? String.fromCharCode(65 + i)
    : `${String.fromCharCode(65 + Math.floor(i / 26) - 1)}${String.fromCharCode(65 + (i % 26))}`;

function AnnexBlock({ annex, index }: { annex: Annex; index: number }) {
  const bytes = new TextEncoder().encode(annex.body).length;
  const table = AnnexTable({ id: annex.id, body: annex.body });
  return (
    <article class="annex" data-annex={annex.id}>
      <h3>
        Annex {annexLetter(index)} — {annex.title}
      </h3>
      <p class="annex-meta">
        <span class="mono">{annex.id}</span> · {annex.mediaType} · {int.format(bytes)} bytes · SHA-256 of body
        {" "}
        <code class="hex">{annex.sha256}</code>
      </p>
      {table ?? <p class="muted">Shown only in the appendix, exactly as stored.</p>}
    </article>
  );
}

/**
 * Characters of the appendix's monospace text (6.6 pt, 0.6 em advance: Liberation Mono, DejaVu Sans Mono,
 * Menlo) that fit on the first printed line of a body line and on each indented continuation line. The A4
 * text column holds about 123 and 117; the budget leaves a margin for a slightly wider fallback font.
 */
const APPENDIX_FIRST = 114;
const APPENDIX_NEXT = 108;

/**
 * One line of an annex body, with a `<wbr>` only where the printed line has to wrap. The line is laid out
 * with `white-space: pre`, so these are its only break opportunities: the browser would otherwise also
 * break after each hyphen of a UUID or a hostname. They are chosen greedily, as a browser fills lines,
 * among the positions after each `,` and `:` outside strings and after the spaces inside strings, so a
 * line wraps between members and never inside a hash or an id; only a run of text longer than a printed
 * line (no such hash or id exists) is cut at the line's end. A line that fits gets no markup: one break hint
 * per continuation line, rather than one per member, keeps the DOM small (Chromium's print time grows with
 * the number of nodes). The text itself is unchanged (`<wbr>` adds no character).
 */
export function breakable(line: string): ComponentChildren[] {
  if (line.length <= APPENDIX_FIRST) return [line];
  const ops: number[] = []; // positions a printed line may end at
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (ch === '"') {
      let j = i + 1;
      while (j < line.length && line[j] !== '"') {
        if (line[j] === " ") ops.push(j + 1);
        j += line[j] === "\\" ? 2 : 1;
      }
      i = j;
    } else if (ch === "," || ch === ":" || ch === " ") ops.push(i + 1);
  }
  const breaks: number[] = [];
  let start = 0; // where the current printed line starts
  let width = APPENDIX_FIRST;
  let last = -1; // the last opportunity that fits on the current printed line
  let k = 0;
  while (line.length - start > width) {
    const op = k < ops.length ? ops[k] : Infinity;
    if (op - start <= width) {
      last = op;
      k++;
      continue;
    }
    // The next opportunity does not fit: wrap at the last one that did, or cut an overlong run.
    start = last > start ? last : start + width + (/[\uDC00-\uDFFF]/.test(line[start + width]) ? 1 : 0);
    breaks.push(start);
    width = APPENDIX_NEXT;
    while (k < ops.length && ops[k] <= start) k++;
  }
  const out: ComponentChildren[] = [];
  let from = 0;
  for (const at of breaks) {
    out.push(line.slice(from, at), <wbr />);
    from = at;
  }
  out.push(line.slice(from));
  return out;
}

/** The exact body of each annex: one block per annex, one line per body line, wrapped with a hanging indent. */
function Appendix({ report }: { report: ReportData }) {
  if (report.annexes.length === 0) return null;
  return (
    <section class="sheet" data-section="appendix">
      <h2>Appendix — annex bodies as hashed</h2>
      <p class="muted">
        Each body below is the exact string its SHA-256 is computed over (UTF-8 bytes); the annex tables above
        are a reading aid over the same data. Long lines continue, indented, on the next printed line.
      </p>
      {report.annexes.map((annex, i) => (
        <article class="exact" data-body-of={annex.id}>
          <h3>
            Annex {annexLetter(i)} body <span class="mono">({annex.id})</span>
          </h3>
          <p class="annex-meta">
            SHA-256 <code class="hex">{annex.sha256}</code>
          </p>
          <div class="body">
            {annex.body.split("\n").map((line, n) => <div key={n} class="ln">{breakable(line)}</div>)}
          </div>
        </article>
      ))}
    </section>
  );
}

function Annexes({ report }: { report: ReportData }) {
  return (
    <section class="sheet" data-section="annexes">
      <h2>3. Annexes</h2>
      <p class="muted">
        Each annex is shown as a table; its exact body, which the SHA-256 commits to, is printed in the
        appendix and stored in the report JSON.
      </p>
      {report.annexes.length === 0
        ? <p class="muted">This report has no annex.</p>
        : report.annexes.map((annex, i) => <AnnexBlock key={annex.id} annex={annex} index={i} />)}
    </section>
  );
}

function ReportPage(
  { report, shareNote, signature }: {
    report: ReportData;
    shareNote?: string;
    signature?: ReportSignatureInfo;
  },
) {
  const { meta, license } = report;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light" />
        <title>{`Test-run report ${meta.runId} — ${meta.planDisplayName}`}</title>
        <style dangerouslySetInnerHTML={{ __html: styles(report) }} />
      </head>
      <body>
        <div class="topbar screen-only">
          <span>
            Report {meta.runId} · execution <span class="mono">{meta.executionId}</span>
          </span>
          <span>{shareNote ? shareNote : "Print or save as PDF: A4 portrait"}</span>
        </div>
        <main>
          <Cover report={report} signature={signature} />
          <Licence report={report} />
          <Summary report={report} />
          <PlanConfig report={report} />
          <Annexes report={report} />
          <Appendix report={report} />
          <section class="sheet" data-section="verification">
            <h2>Verifying this report</h2>
            <VerificationNote executionId={report.meta.executionId} signature={signature} />
          </section>
        </main>
        <footer class="screen-footer screen-only">
          Licence {license.id} — {license.name}. Licensed to {license.holder}.
        </footer>
      </body>
    </html>
  );
}
