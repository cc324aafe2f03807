/**
 * Scenario labsize (issue 49): a lab of 5,000 registered devices (1,000 with `--quick`), polled once through
 * the real worker with replay adapters (the bench writes their snapshots: the real adapters' payloads),
 * then unreachable (the replay adapter throws the transport's `unreachable` DeviceError), and one run
 * started and finished over it. Measured in one process that is the service (`testServices`: the real
 * app, routes and PdfRenderer):
 *
 * - the info-level log lines of one scan in which 1,000 and then 5,000 devices go from `ok` to unreachable
 *   (a LogTape sink counting records; the interval's summary flushed at the scan's end), and of the next
 *   scan (status unchanged);
 * - finishing the run (building and freezing report.json), its size, the print page's size;
 * - `report.pdf` through the route: the first request (browser start included) and a warm one, its pages,
 *   the renderer's peak RSS (`PdfRenderer.peakRssBytes`, all browser processes), and the service's RSS
 *   before the first PDF request and one minute after the last; the PDF is checked with poppler's `pdfsig`
 *   and `pdfdetach -list` and its JSON annexes against report.json's hashes.
 *
 * @module
 */
import { configure, reset } from "@logtape/logtape";
import { PDFDocument } from "pdf-lib";
import { DeviceError } from "@dutlab/core";
import type { AdapterDefinition, LoadedModules } from "../../core/harness/core.ts";
import { pollLog, proportionalBytes, residentBytes } from "../../core/harness/core.ts";
import { testServices } from "../../core/harness/app.ts";
import { findChromium } from "@dutlab/core/testing/chromium";
import { type Figure, machine, round, statusMiB } from "../_util.ts";
import type { Ctx } from "../main.ts";
import { captureVendors } from "../_capture.ts";
import { freshDb } from "../_db.ts";
import { registerDevices, replayModules, replayWorker } from "../_replay.ts";

const dec = new TextDecoder();
const sha256Hex = async (b: Uint8Array) =>
  Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", b as Uint8Array<ArrayBuffer>)))
    .map((x) => x.toString(16).padStart(2, "0")).join("");

/** The replay adapters, unreachable while `down.on`. */
function switchable(modules: LoadedModules, down: { on: boolean }): LoadedModules {
  const wrap = (a: AdapterDefinition): AdapterDefinition => ({
    ...a,
    create(ctx) {
      const inner = a.create(ctx);
      const refuse = () =>
        Promise.reject(new DeviceError("unreachable", `connect ECONNREFUSED ${ctx.device.baseUrl}`));
      return {
        ...inner,
        testConnection: () => down.on ? refuse() : inner.testConnection(),
        collectAll: () => down.on ? refuse() : inner.collectAll(),
      } as ReturnType<AdapterDefinition["create"]>;
    },
  });
  return {
    ...modules,
    adapters: modules.adapters.map((m) => ({ ...m, module: wrap(m.module as AdapterDefinition) })),
  };
}

async function run1(cmd: string, args: string[]): Promise<{ code: number; out: string }> {
  const o = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  return { code: o.code, out: dec.decode(o.stdout) + dec.decode(o.stderr) };
}

export async function run(ctx: Ctx): Promise<Figure[]> {
  const n = ctx.quick ? 1000 : 5000;
  const figures: Figure[] = [];
  /** A figure; `params.target` ("≤ 20", "≤ +10 %") becomes its target, judged against the value. */
  const fig = (
    name: string,
    value: number | null,
    unit: string,
    params: Record<string, unknown>,
    note?: string,
  ) => {
    const { target, ...rest } = params as { target?: string };
    const bound = target ? Number(target.replace(/[^\d.]/g, "")) : NaN;
    figures.push({
      scenario: "labsize",
      name,
      value,
      unit,
      params: { devices: n, ...rest },
      command: ctx.command,
      note,
      ...(target ? { target, pass: value !== null && value <= bound } : {}),
    });
  };
  const captures = await captureVendors();
  await using db = await freshDb("postgres");
  const down = { on: false };
  const { modules } = replayModules(captures, { changeRate: 0 });
  const { svc, app, auth } = await testServices(db, switchable(modules, down));
  try {
    let t = performance.now();
    const ids = await registerDevices(svc, n, "lab");
    ctx.log(`registered ${ids.length} devices in ${round((performance.now() - t) / 1000)} s`);
    const w = await replayWorker(db, svc);
    t = performance.now();
    await w.round(); // every device polled once: its snapshots written
    ctx.log(`first scan (snapshots written) ${round((performance.now() - t) / 1000)} s`);
    const snapshotCount = Number(
      (await db.kysely.selectFrom("snapshots").select((e) => e.fn.countAll<string>().as("n"))
        .executeTakeFirstOrThrow()).n,
    );

    // Log lines per scan at info: devices going from ok to unreachable, then a scan with nothing changed.
    down.on = true;
    const records: Array<{ level: string; at: number }> = [];
    await configure({
      reset: true,
      sinks: { count: (r) => records.push({ level: r.level, at: performance.now() }) },
      loggers: [
        { category: ["dutlab"], lowestLevel: "debug", sinks: ["count"] },
        { category: ["logtape", "meta"], lowestLevel: "error", sinks: [] },
      ],
    });
    const scanLines = async (enabled: number) => {
      await db.kysely.updateTable("devices").set({ enabled: false }).execute();
      await db.kysely.updateTable("devices").set({ enabled: true }).where("id", "in", ids.slice(0, enabled))
        .execute();
      const counts = [];
      for (const phase of ["ok → unreachable", "unchanged"]) {
        if (phase === "ok → unreachable") {
          await db.kysely.updateTable("devices").set({ last_poll_status: "ok" }).execute();
        }
        const before = records.length;
        await w.round();
        pollLog.flush();
        const lines = records.slice(before);
        const info = lines.filter((r) => r.level !== "debug" && r.level !== "trace").length;
        counts.push({ phase, info, debug: lines.length - info });
      }
      return counts;
    };
    for (const size of [1000, n]) {
      if (size > n) continue;
      for (const c of await scanLines(size)) {
        ctx.log(`${size} unreachable, ${c.phase}: ${c.info} lines at info, ${c.debug} at debug`);
        fig(
          `log lines at info of one scan of ${size.toLocaleString("en")} unreachable devices (${c.phase})`,
          c.info,
          "lines",
          { devices: size, debugLines: c.debug, target: "≤ 20" },
          "LogTape records of category dutlab at info or above during the scan, the interval summary flushed",
        );
      }
      if (size === n) break;
    }
    await reset();
    await db.kysely.updateTable("devices").set({ enabled: true }).execute();

    // One run over the unreachable lab, started and finished.
    const started = await svc.runs.start({ planIdentifier: "ngfw-throughput-decrypt-on" });
    await w.round();
    await w.stop();
    t = performance.now();
    await svc.runs.finish(started.executionId, {
      outcome: "passed",
      results: { latencySamplesMs: [3, 4, 5] },
    });
    const finishMs = performance.now() - t;
    const id = started.executionId;
    const reportText = await (await app.request(`/api/test-runs/${id}/report.json`, { headers: auth }))
      .text();
    const report = JSON.parse(reportText) as {
      reportSha256: string;
      annexes: { id: string; sha256: string }[];
    };
    t = performance.now();
    const page = await (await app.request(`/runs/${id}/report`, { headers: auth })).text();
    const pageMs = performance.now() - t;
    ctx.log(`finish ${round(finishMs)} ms, report.json ${reportText.length} B, print page ${page.length} B`);
    const p = { snapshots: snapshotCount, reportBytes: reportText.length };
    fig("finish the run over the lab: build and freeze report.json", round(finishMs), "ms", p);
    fig("report.json size", round(reportText.length / 1024 / 1024, 2), "MiB", p);
    fig("print page size (GET /runs/{id}/report)", round(page.length / 1024, 1), "KiB", {
      ...p,
      renderMs: round(pageMs),
    });
    if (!findChromium()) {
      fig("report.pdf", null, "ms", p, "Chromium not installed");
      return figures;
    }

    const rssBefore = statusMiB("VmRSS");
    const pdfOnce = async () => {
      const t0 = performance.now();
      const res = await app.request(`/api/test-runs/${id}/report.pdf`, { headers: auth });
      const bytes = new Uint8Array(await res.arrayBuffer());
      if (res.status !== 200) throw new Error(`report.pdf answered ${res.status}: ${dec.decode(bytes)}`);
      return { ms: performance.now() - t0, bytes };
    };
    const cold = await pdfOnce();
    const warm = await pdfOnce();
    const pages = (await PDFDocument.load(warm.bytes, { updateMetadata: false })).getPageCount();
    const peak = svc.pdf.peakRssBytes;
    const peakPss = svc.pdf.peakPssBytes;
    // The warm browser at rest: what the peak is measured against (Chromium's shared libraries are counted
    // once per process in the sum of VmRSS, once in all in the sum of Pss).
    const idlePids = await svc.pdf.browserPids();
    const idle = {
      rss: residentBytes(idlePids),
      pss: proportionalBytes(idlePids),
      processes: idlePids.length,
    };
    const rssAfterPdf = statusMiB("VmRSS");
    ctx.log(
      `report.pdf cold ${round(cold.ms)} ms, warm ${
        round(warm.ms)
      } ms, ${pages} pages, ${warm.bytes.length} B, ` +
        `renderer peak ${round(peak / 2 ** 20)} MiB; service RSS ${round(rssBefore)} → ${
          round(rssAfterPdf)
        } MiB`,
    );

    // The PDF checked as the issue's "done when" says: pdfsig, pdfdetach -list, JSON annexes' hashes.
    const file = `${ctx.tmp}/report.pdf`;
    await Deno.writeFile(file, warm.bytes);
    const sig = await run1("pdfsig", [file]);
    const list = await run1("pdfdetach", ["-list", file]);
    const outDir = `${ctx.tmp}/annexes`;
    await Deno.mkdir(outDir);
    await run1("pdfdetach", ["-saveall", "-o", outDir, file]);
    const annexHashes: Record<string, boolean> = {};
    for (const a of report.annexes) {
      const b = await Deno.readFile(`${outDir}/annex-${a.id}.json`).catch(() => null);
      annexHashes[a.id] = b !== null && await sha256Hex(b) === a.sha256;
    }
    const checks = {
      pdfsigValid: sig.code === 0 && /Signature Validation: Signature is Valid/.test(sig.out),
      pdfdetachFiles: Number(list.out.match(/^(\d+) embedded files/m)?.[1] ?? 0),
      annexHashes,
    };
    ctx.log(
      `pdfsig ${checks.pdfsigValid}, ${checks.pdfdetachFiles} attachments, annexes ${
        JSON.stringify(annexHashes)
      }`,
    );
    if (!checks.pdfsigValid || !Object.values(annexHashes).every(Boolean)) {
      throw new Error(`report.pdf does not check out: ${sig.out}\n${list.out}`);
    }

    ctx.log("waiting one minute for the service's RSS");
    await new Promise((r) => setTimeout(r, 60_000));
    const rssMinute = statusMiB("VmRSS");
    const pp = { ...p, pdfBytes: warm.bytes.length, pages, ...checks };
    fig("report.pdf through the route, first request (browser start included)", round(cold.ms), "ms", pp);
    fig("report.pdf through the route, warm browser", round(warm.ms), "ms", { ...pp, target: "≤ 15,000 ms" });
    fig("report.pdf printed pages", pages, "pages", { ...pp, target: "≤ 60" });
    fig(
      "PDF renderer peak RSS (all browser processes, PdfRenderer.peakRssBytes)",
      round(peak / 2 ** 20),
      "MiB",
      {
        ...pp,
        target: "≤ 1,024 MiB",
        memoryBoundMiB: svc.config.DUT_PDF_MEMORY_MB,
        idleBrowserRssMiB: round(idle.rss / 2 ** 20),
        browserProcesses: idle.processes,
      },
      "the sum of VmRSS of the browser's processes (shared libraries counted once per process)",
    );
    fig(
      "PDF renderer peak proportional memory (Pss, shared pages once, PdfRenderer.peakPssBytes)",
      round(peakPss / 2 ** 20),
      "MiB",
      { ...pp, target: "≤ 1,024 MiB", idleBrowserPssMiB: round(idle.pss / 2 ** 20) },
      "the memory the browser really holds, what DUT_PDF_MEMORY_MB bounds",
    );
    fig(
      "service RSS one minute after report.pdf, relative to before",
      round((rssMinute / rssBefore - 1) * 100, 1),
      "%",
      {
        ...pp,
        rssBeforeMiB: round(rssBefore),
        rssAfterPdfMiB: round(rssAfterPdf),
        rssMinuteAfterMiB: round(rssMinute),
        target: "≤ +10 %",
        loadAvgAfter: machine().loadAvg,
      },
      "VmRSS of the bench process, which is the service (app, routes, renderer client); browser excluded",
    );
  } finally {
    await svc.pdf.close();
  }
  return figures;
}
