/**
 * Scenario 6, reports: a run with ~1,000 linked snapshots (143 devices of the four vendors polled once
 * through the real worker while the run is active), then the time to finish the run (aggregate the
 * results, build the ReportData and freeze it: RunService.finish), to render the print page
 * (renderReportPage) and to print it to PDF in headless Chromium (core/testing/chromium.ts).
 *
 * @module
 */
import { sql } from "kysely";
import { type Figure, mean, round } from "../_util.ts";
import type { Ctx } from "../main.ts";
import { captureVendors } from "../_capture.ts";
import { benchServices, freshDb } from "../_db.ts";
import { prng, registerDevices, replayModules, replayWorker } from "../_replay.ts";
import { RunService } from "../../core/src/runs/service.ts";
import { renderReportPage } from "../../core/src/report/page.tsx";
import type { ReportData } from "../../core/src/report/types.ts";
import { findChromium, printToPdf } from "../../core/testing/chromium.ts";

export async function run(ctx: Ctx): Promise<Figure[]> {
  const captures = await captureVendors();
  const figures: Figure[] = [];
  const backends = ctx.quick ? ["postgres"] as const : ["postgres", "pglite"] as const;
  for (const backend of backends) {
    await using db = await freshDb(backend);
    const replay = replayModules(captures, { changeRate: 0.05 });
    const { svc, registry } = await benchServices(db, replay.modules);
    // 36 + 36 + 36 + 35 devices of 7, 6, 8 and 7 labels: 1,001 snapshots per round.
    await registerDevices(svc, 143);
    const w = await replayWorker(db, svc);
    await w.round(); // pre-flight evidence before the start
    const runs = new RunService(db.kysely, registry, "LAB-INTERNAL");
    const started = await runs.start({ planIdentifier: "ngfw-throughput-decrypt-on" });
    await w.round(); // linked to the run
    await w.stop();
    const linked = Number(
      (await sql<
        { n: string }
      >`select count(*)::text as n from snapshots where test_run_execution_id = ${started.executionId}`
        .execute(db.kysely)).rows[0].n,
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
        round(renders[0])
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
        value: round(renders[0]),
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
      ctx.log(`PDF: ${round(times[0])} ms, ${pdf.length} bytes, ${pages} pages`);
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
  }
  return figures;
}
