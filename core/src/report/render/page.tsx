/**
 * The print-ready HTML page of a test-run report (spec 4.11), rendered on the server with Preact.
 *
 * One self-contained document (inline CSS and SVG, no fonts, scripts or images from elsewhere) that
 * reads well on screen and prints on A4 portrait with a "page X of Y" counter and the licence in the
 * footer of every page. Content in order: cover, licensing (English, Português (Brasil), Español),
 * executive summary, test plan configuration, annexes.
 *
 * This file assembles the document; each section lives in `page/` (cover, licence, summary, plan,
 * annexes, with the shared formatting, parts and verdict box beside them) and the stylesheet in
 * `page/styles.ts`.
 *
 * @module
 */
import { renderToString } from "preact-render-to-string";
import type { ReportData } from "../types.ts";
import { type ReportSignatureInfo, VerificationNote } from "./signature_note.tsx";
import { printStylesheet } from "./page/styles.ts";
import { Cover } from "./page/cover.tsx";
import { Licence } from "./page/licence.tsx";
import { Summary } from "./page/summary.tsx";
import { PlanConfig } from "./page/plan.tsx";
import { Annexes, Appendix } from "./page/annexes.tsx";

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
 * import type { ReportData } from "../types.ts";
 * // The values a caller has; the example type-checks (deno check --doc) and is not run.
 * async function example(report: ReportData) {
 *   const html = renderReportPage(report, { shareNote: "Shared link, valid for 24 h" });
 *   const response = new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } });
 * }
 * ```
 */
export function renderReportPage(report: ReportData, opts: ReportPageOptions = {}): string {
  return "<!DOCTYPE html>" + renderToString(
    <ReportPage report={report} shareNote={opts.shareNote} signature={opts.signature} />,
  );
}

function styles(report: ReportData): string {
  return printStylesheet({
    title: "Test-run report",
    header: `Run ${report.meta.runId} \u00b7 ${report.meta.planIdentifier}`,
    licence: `Licence ${report.license.id} \u2014 ${report.license.name}`,
  });
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
