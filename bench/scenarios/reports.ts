/**
 * Scenario 6, reports: a run with ~1,000 linked snapshots (143 devices of the four vendors polled once
 * through the real worker while the run is active), then the time to finish the run (aggregate the
 * results, build the ReportData and freeze it: RunService.finish), to render the print page
 * (renderReportPage) and to print it to PDF in headless Chromium (core/testing/chromium.ts); then signing
 * and verifying it, and report.pdf as the endpoint makes it (warm browser + attachments + the PAdES signature)
 * for a short and the full report (BENCHMARKS.md sections 6b and 6e).
 *
 * @module
 */
import { sql } from "kysely";
import { type Figure, mean, round } from "../_util.ts";
import type { Ctx } from "../main.ts";
import { captureVendors } from "../_capture.ts";
import { benchServices, freshDb } from "../_db.ts";
import { prng, registerDevices, replayModules, replayWorker } from "../_replay.ts";
import { renderReportPage } from "../../core/harness/core.ts";
import type { ReportData } from "../../core/harness/core.ts";
import { reportFixture } from "../../core/harness/report_fixture.ts";
import { findChromium, printToPdf } from "@dutlab/core/testing/chromium";
import { PDFDocument } from "pdf-lib";
import { attachEvidence, PdfRenderer } from "../../core/harness/core.ts";
import { generateSigningKey, ReportSigningKey, signReport } from "../../core/harness/core.ts";
import { generatePdfSigningMaterial, PdfSigner } from "../../core/harness/core.ts";
import { checkEnvelope, checkReport, loadKeys } from "../../tools/verify_report_src.ts";

/** Pages of a PDF (pdf-lib writes object streams, so the page objects are not visible as text). */
const pageCount = async (pdf: Uint8Array) =>
  (await PDFDocument.load(pdf, { updateMetadata: false })).getPageCount();

/**
 * Signing and verifying one report (sign = Statement + Ed25519 over PAE; verify = what verify_report.ts
 * does: every hash of the report, the Statement's digests and the signature), and report.pdf as the
 * service makes it: a warm browser (PdfRenderer, started once) plus attaching the evidence (pdf-lib).
 */
async function signedPdfFigures(ctx: Ctx, report: ReportData, text: string, p: Record<string, unknown>) {
  const figures: Figure[] = [];
  const key = await ReportSigningKey.fromText(await generateSigningKey());
  const keys = await loadKeys(key.publicKey.publicKeyPem);
  const n = ctx.quick ? 20 : 100;
  let envelope = "";
  let t = performance.now();
  for (let k = 0; k < n; k++) envelope = await signReport(key, text);
  const signMs = (performance.now() - t) / n;
  const bytes = new TextEncoder().encode(text);
  t = performance.now();
  for (let k = 0; k < n; k++) {
    const r = await checkReport(JSON.parse(text));
    const e = await checkEnvelope(JSON.parse(envelope), keys, {
      bytes,
      reportSha256: r.reportSha256,
      stated: report.reportSha256,
    });
    if (![...r.findings, ...e.findings].every((f) => f.ok)) throw new Error("bench report does not verify");
  }
  const verifyMs = (performance.now() - t) / n;
  ctx.log(`sign ${round(signMs)} ms, verify ${round(verifyMs)} ms per report`);
  figures.push(
    {
      scenario: "reports",
      name: "sign a report (in-toto Statement + Ed25519 DSSE)",
      value: round(signMs),
      unit: "ms",
      params: { ...p, iterations: n },
      command: ctx.command,
    },
    {
      scenario: "reports",
      name: "verify a report and its envelope (all hashes + Ed25519)",
      value: round(verifyMs),
      unit: "ms",
      params: { ...p, iterations: n },
      command: ctx.command,
      note: "checkReport + checkEnvelope of tools/verify_report.ts, in process",
    },
  );
  if (!findChromium()) return figures;

  const pdf = new PdfRenderer({ concurrency: 2, timeoutMs: 120_000 });
  // The lab certificate of an embedded service (self-signed ECDSA P-256), as report.pdf signs with it.
  const signer = await PdfSigner.load({ kind: "pem", ...(await generatePdfSigningMaterial("bench lab")) });
  const sign = {
    signer,
    fields: { reason: "bench", name: "bench lab", location: "bench lab", contactInfo: "x/api/report-keys" },
  };
  try {
    const evidence = { executionId: report.meta.executionId, runId: report.meta.runId, title: "bench" };
    const attach = (printed: Uint8Array, r: ReportData, rText: string, signed: boolean) =>
      attachEvidence(printed, {
        ...evidence,
        reportSha256: r.reportSha256,
        reportText: rText,
        envelopeText: envelope,
        signingKeyId: key.keyId,
        generatedAt: r.generatedAt,
      }, signed ? sign : undefined);
    const one = async (r: ReportData, rText = text, signed = false) => {
      const t0 = performance.now();
      const printed = await pdf.render(
        renderReportPage(r, { signature: { keyId: key.keyId, baseUrl: "x" } }),
      );
      const out = await attach(printed, r, rText, signed);
      const ms = performance.now() - t0;
      return { ms, pages: await pageCount(out), bytes: out.length, printed };
    };
    // A short report: the fixture run of the page tests (two firewalls, a few snapshots: 9-10 pages).
    const ten = await reportFixture();
    const tenText = JSON.stringify(ten, null, 2) + "\n";
    const cold = await one(ten, tenText); // starts the browser
    const runs = ctx.quick ? 3 : 10;
    const tens: number[] = [];
    let tenPages: number | null = null;
    for (let k = 0; k < runs; k++) {
      const r = await one(ten, tenText);
      tens.push(r.ms);
      tenPages = r.pages;
    }
    // The same 10-page PDF the old way (a browser process per PDF, no attachments), in the same load.
    const t1 = performance.now();
    await printToPdf(renderReportPage(ten, { signature: { keyId: key.keyId, baseUrl: "x" } }));
    const coldTen = performance.now() - t1;
    // The same report.pdf signed (PAdES B-B), as the endpoint makes it since issue 30; and the signature's
    // own cost: attaching the evidence with and without signing, on the same printed bytes.
    const signedTens: number[] = [];
    let printedTen: Uint8Array = new Uint8Array();
    let signedBytes = 0;
    for (let k = 0; k < runs; k++) {
      const r = await one(ten, tenText, true);
      signedTens.push(r.ms);
      printedTen = r.printed;
      signedBytes = r.bytes;
    }
    const m = ctx.quick ? 10 : 30;
    const plainAttach: number[] = [];
    const signedAttach: number[] = [];
    for (let k = 0; k < m; k++) {
      let t0 = performance.now();
      await attach(printedTen, ten, tenText, false);
      plainAttach.push(performance.now() - t0);
      t0 = performance.now();
      await attach(printedTen, ten, tenText, true);
      signedAttach.push(performance.now() - t0);
    }
    ctx.log(
      `signed report.pdf warm: ${tenPages} pages ${round(mean(signedTens))} ms; attach ${
        round(mean(plainAttach))
      } ms, attach + sign ${round(mean(signedAttach))} ms`,
    );
    figures.push(
      {
        scenario: "reports",
        name:
          "signed report.pdf of a 10-page report, warm browser (render + attach evidence + PAdES signature)",
        value: round(mean(signedTens)),
        unit: "ms",
        params: { pages: tenPages, pdfBytes: signedBytes, runs: signedTens.map((x) => round(x)) },
        command: ctx.command,
        note:
          "PdfRenderer + attachEvidence with the PdfSigner of an embedded service (ECDSA P-256 self-signed)",
      },
      {
        scenario: "reports",
        name: "attach evidence to the printed 10-page PDF, unsigned",
        value: round(mean(plainAttach)),
        unit: "ms",
        params: { pages: tenPages, iterations: m },
        command: ctx.command,
      },
      {
        scenario: "reports",
        name: "attach evidence to the printed 10-page PDF and sign it (placeholder, save, CMS)",
        value: round(mean(signedAttach)),
        unit: "ms",
        params: { pages: tenPages, iterations: m },
        command: ctx.command,
        note: "the difference to the unsigned row is the PAdES signature's own cost",
      },
    );
    const fulls: number[] = [];
    let full = { pages: null as number | null, bytes: 0 };
    for (let k = 0; k < (ctx.quick ? 1 : 3); k++) {
      const r = await one(report);
      fulls.push(r.ms);
      full = r;
    }
    ctx.log(
      `report.pdf warm: ${tenPages} pages ${round(mean(tens))} ms; ${full.pages} pages ${
        round(mean(fulls))
      } ms`,
    );
    const note =
      "PdfRenderer (puppeteer-core, one warm Chromium) + attachEvidence (pdf-lib); browser start excluded";
    figures.push(
      {
        scenario: "reports",
        name: "report.pdf of a 10-page report, warm browser (render + attach evidence)",
        value: round(mean(tens)),
        unit: "ms",
        params: { pages: tenPages, runs: tens.map((x) => round(x)) },
        command: ctx.command,
        note,
      },
      {
        scenario: "reports",
        name: "report.pdf of the full report, warm browser (render + attach evidence)",
        value: round(mean(fulls)),
        unit: "ms",
        params: { ...p, pages: full.pages, pdfBytes: full.bytes, runs: fulls.map((x) => round(x)) },
        command: ctx.command,
        note,
      },
      {
        scenario: "reports",
        name: "the same 10-page PDF with a fresh chromium --print-to-pdf process (before this endpoint)",
        value: round(coldTen),
        unit: "ms",
        params: { pages: tenPages },
        command: ctx.command,
        note: "printToPdf() of core/testing/chromium.ts, measured in the same run for comparison",
      },
      {
        scenario: "reports",
        name: "report.pdf, first PDF of a process (browser start included)",
        value: round(cold.ms),
        unit: "ms",
        params: { pages: cold.pages },
        command: ctx.command,
      },
    );
  } finally {
    await pdf.close();
  }
  return figures;
}

export async function run(ctx: Ctx): Promise<Figure[]> {
  const captures = await captureVendors();
  const figures: Figure[] = [];
  const backends = ctx.quick ? ["postgres"] as const : ["postgres", "pglite"] as const;
  for (const backend of backends) {
    await using db = await freshDb(backend);
    const replay = replayModules(captures, { changeRate: 0.05 });
    const { svc } = await benchServices(db, replay.modules);
    // 36 + 36 + 36 + 35 devices of 7, 6, 8 and 7 labels: 1,001 snapshots per round.
    await registerDevices(svc, 143);
    const w = await replayWorker(db, svc);
    await w.round(); // pre-flight evidence before the start
    const runs = svc.runs;
    const started = await runs.start({ planIdentifier: "ngfw-throughput-decrypt-on" });
    await w.round(); // linked to the run
    await w.stop();
    const linked = Number(
      (await sql<
        { n: string }
      >`select count(*)::text as n from snapshots where test_run_execution_id = ${started.executionId}`
        .execute(db.kysely)).rows[0]!.n,
    );
    const rand = prng(3);
    const samples = Array.from({ length: 100_000 }, () => 5 + rand() * 40 + (rand() < 0.01 ? 200 : 0));
    const t0 = performance.now();
    await runs.finish(started.executionId, { outcome: "passed", results: { latencySamplesMs: samples } });
    const finishMs = performance.now() - t0;
    const { text } = await runs.report(started.executionId);
    const report = JSON.parse(text) as ReportData;
    const renders: number[] = [];
    let html = "";
    for (let k = 0; k < (ctx.quick ? 3 : 10); k++) {
      const t = performance.now();
      html = renderReportPage(report);
      renders.push(performance.now() - t);
    }
    ctx.log(
      `${backend}: finish ${round(finishMs)} ms, render ${
        round(renders[0]!)
      } ms first, ${linked} linked snapshots`,
    );
    const p = { backend, linkedSnapshots: linked, reportBytes: text.length, latencySamples: samples.length };
    figures.push(
      {
        scenario: "reports",
        name: "finish the run: aggregate, build and freeze the report",
        value: round(finishMs),
        unit: "ms",
        params: p,
        command: ctx.command,
      },
      {
        scenario: "reports",
        name: "render the HTML print page (first render)",
        value: round(renders[0]!),
        unit: "ms",
        params: { ...p, htmlBytes: html.length },
        command: ctx.command,
      },
      {
        scenario: "reports",
        name: "render the HTML print page (mean of later renders)",
        value: round(mean(renders.slice(1))),
        unit: "ms",
        params: { ...p, renders: renders.length - 1 },
        command: ctx.command,
      },
    );
    if (backend === "postgres") {
      if (!findChromium()) {
        figures.push({
          scenario: "reports",
          name: "print to PDF in Chromium",
          value: null,
          unit: "ms",
          command: ctx.command,
          note: "Chromium not installed",
        });
        figures.push(...await signedPdfFigures(ctx, report, text, p));
        continue;
      }
      const times: number[] = [];
      let pdf: Uint8Array = new Uint8Array();
      for (let k = 0; k < (ctx.quick ? 1 : 3); k++) {
        const t = performance.now();
        pdf = await printToPdf(html);
        times.push(performance.now() - t);
      }
      const pages = new TextDecoder("latin1").decode(pdf).match(/\/Type\s*\/Page[^s]/g)?.length ?? null;
      ctx.log(`PDF: ${round(times[0]!)} ms, ${pdf.length} bytes, ${pages} pages`);
      figures.push({
        scenario: "reports",
        name: "print the page to PDF in headless Chromium (process start included)",
        value: round(Math.min(...times)),
        unit: "ms",
        params: { pdfBytes: pdf.length, pages, runs: times.map((t) => round(t)) },
        command: ctx.command,
        note: "printToPdf() of core/testing/chromium.ts: a fresh chromium --headless --print-to-pdf per call",
      });
    }
    if (backend === "postgres") figures.push(...await signedPdfFigures(ctx, report, text, p));
  }
  return figures;
}
