/**
 * Server-rendered PDF of the report page (spec 4.12): headless Chromium (the Debian `chromium` package)
 * driven by puppeteer-core, one browser kept warm and reused, a bounded number of concurrent renders and a
 * time limit per PDF. The PDF then gets the evidence attached with pdf-lib: `report-<id>.json` (the exact
 * frozen report.json bytes) and `report-<id>.dsse.json` (its DSSE envelope), plus metadata naming the run
 * and `reportSha256`, so the PDF alone is verifiable (`tools/verify_report.ts`).
 * @module
 */
// puppeteer-core and pdf-lib are loaded on the first PDF, not at start-up: together they add about 0.27 s
// to every start of the service (BENCHMARKS.md section 7).
import type { Browser, Page } from "puppeteer-core";
import { UnavailableError } from "../../errors.ts";
import { logger } from "../../util/log.ts";
import type { PdfSignatureFields, PdfSigner } from "../pdf_sign.ts";
import type { Annex } from "../types.ts";

const CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];

/** Options of {@link PdfRenderer}. */
export interface PdfRendererOptions {
  /** Chromium binary; unset: `/usr/bin/chromium`, then `/usr/bin/chromium-browser`. */
  executablePath?: string;
  /** Renders at once; more requests wait for a slot (within their time limit). */
  concurrency: number;
  /** Time limit of one PDF, waiting for a slot included; past it the browser is stopped. */
  timeoutMs: number;
  /**
   * Memory bound of the browser: the proportional memory (Pss) of all its processes, sampled while a render runs
   * (unset: none). Past it the render gets a 503 and the browser is stopped (its memory returned at once).
   */
  memoryLimitBytes?: number;
  /** How often the browser's memory is sampled during a render (default 250 ms). */
  memorySampleMs?: number;
}

/** The process ids of `root` and all its descendants (Linux `/proc`); empty elsewhere. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  try {
    for (const e of Deno.readDirSync("/proc")) {
      if (!/^\d+$/.test(e.name)) continue;
      try {
        const stat = Deno.readTextFileSync(`/proc/${e.name}/stat`);
        const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
        const list = children.get(ppid) ?? [];
        list.push(Number(e.name));
        children.set(ppid, list);
      } catch { /* the process ended meanwhile */ }
    }
  } catch {
    return [];
  }
  const out: number[] = [];
  const todo = [root];
  while (todo.length) {
    const pid = todo.pop()!;
    out.push(pid);
    todo.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** Resident memory (bytes) of the given processes (VmRSS), the ones that ended counted as 0. */
export function residentBytes(pids: number[]): number {
  let sum = 0;
  for (const pid of pids) {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(Deno.readTextFileSync(`/proc/${pid}/status`));
      if (m) sum += Number(m[1]) * 1024;
    } catch { /* ended */ }
  }
  return sum;
}

/**
 * Proportional memory (bytes) of the given processes (`Pss` of `/proc/<pid>/smaps_rollup`): each shared page
 * counted once across them, where the sum of VmRSS counts Chromium's shared libraries once per process.
 * Processes that ended, or a kernel without smaps_rollup, count 0.
 */
export function proportionalBytes(pids: number[]): number {
  let sum = 0;
  for (const pid of pids) {
    try {
      const m = /^Pss:\s+(\d+) kB/m.exec(Deno.readTextFileSync(`/proc/${pid}/smaps_rollup`));
      if (m) sum += Number(m[1]) * 1024;
    } catch { /* ended */ }
  }
  return sum;
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/** A counting semaphore whose waiters give up at a deadline. */
class Slots {
  #free: number;
  #waiting: Array<() => void> = [];
  constructor(n: number) {
    this.#free = n;
  }
  async take(signal: AbortSignal): Promise<() => void> {
    if (this.#free > 0) this.#free--;
    else {
      await new Promise<void>((resolve, reject) => {
        const wake = () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        };
        const onAbort = () => {
          this.#waiting = this.#waiting.filter((w) => w !== wake);
          reject(signal.reason);
        };
        signal.addEventListener("abort", onAbort, { once: true });
        this.#waiting.push(wake);
      });
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    };
  }
}

const unavailable = (detail: string) =>
  new UnavailableError("pdf", "PDF rendering unavailable", detail, { retryAfterSeconds: 30 });

/**
 * Prints HTML to PDF in one warm headless Chromium. The browser starts at the first render and is
 * restarted if it dies; tabs are reused between renders (JavaScript off; a tab whose render failed or
 * timed out is closed); `close()` stops it.
 *
 * @example
 * ```ts
 * const pdf = new PdfRenderer({ concurrency: 2, timeoutMs: 30_000 });
 * const bytes = await pdf.render("<!DOCTYPE html><p>Hello</p>");
 * await pdf.close();
 * ```
 */
export class PdfRenderer {
  #browser: Promise<Browser> | null = null;
  /** Tabs of the current browser kept open between renders (at most `concurrency`). */
  #idle: Page[] = [];
  #slots: Slots;
  #log = logger("pdf");
  /** Highest resident memory of the browser seen during a render (bytes; the benchmark reads it). */
  peakRssBytes = 0;
  /**
   * Highest proportional memory of the browser seen during a render (bytes; shared pages counted once, see
   * {@link proportionalBytes}); the memory bound compares it.
   */
  peakPssBytes = 0;

  constructor(readonly opts: PdfRendererOptions) {
    this.#slots = new Slots(opts.concurrency);
  }

  /** The Chromium binary, or null when none is installed. */
  chromiumPath(): string | null {
    const list = this.opts.executablePath ? [this.opts.executablePath] : CANDIDATES;
    return list.find(isFile) ?? null;
  }

  #launch(): Promise<Browser> {
    if (this.#browser) return this.#browser;
    const executablePath = this.chromiumPath();
    if (!executablePath) {
      throw unavailable(
        `No Chromium found at ${this.opts.executablePath ?? CANDIDATES.join(" or ")}: install the Debian ` +
          `package "chromium" or set DUT_CHROMIUM_PATH. The HTML page /runs/{executionId}/report prints to PDF ` +
          `from a browser meanwhile`,
      );
    }
    const started = import("puppeteer-core").then(({ default: puppeteer }) =>
      puppeteer.launch({
        executablePath,
        headless: true,
        pipe: true,
        args: [
          "--no-sandbox",
          "--disable-gpu",
          "--disable-dev-shm-usage",
          "--disable-quic",
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
        ],
      })
    );
    this.#browser = started;
    started.then((b) =>
      b.on("disconnected", () => {
        if (this.#browser === started) {
          this.#browser = null;
          this.#idle = [];
        }
      })
    ).catch((e) => {
      if (this.#browser === started) this.#browser = null;
      this.#log.error("Chromium did not start: {error}", { error: String(e) });
    });
    return started;
  }

  /** Print a self-contained HTML document (its `@page` rules set size and margins) to PDF bytes. */
  async render(html: string): Promise<Uint8Array> {
    const signal = AbortSignal.timeout(this.opts.timeoutMs);
    const timedOut = () =>
      unavailable(`Rendering the PDF took longer than ${this.opts.timeoutMs} ms; try again later`);
    let release: () => void;
    try {
      release = await this.#slots.take(signal);
    } catch {
      throw timedOut();
    }
    const abort = new Promise<never>((_, reject) => {
      if (signal.aborted) reject(timedOut());
      signal.addEventListener("abort", () => reject(timedOut()), { once: true });
    });
    abort.catch(() => {});
    const tooBig = new AbortController();
    const overMemory = new Promise<never>((_, reject) => {
      tooBig.signal.addEventListener("abort", () => reject(tooBig.signal.reason), { once: true });
    });
    overMemory.catch(() => {});
    const watch = this.#watchMemory(tooBig);
    // The slot is held until the work itself ends, even when the caller gave up at the time limit.
    const work = this.#print(html, AbortSignal.any([signal, tooBig.signal])).finally(release);
    try {
      return await Promise.race([work, abort, overMemory]);
    } catch (e) {
      // A render that ran out of time or memory takes the browser with it: closing only the tab can leave
      // a renderer busy laying out a huge page, and the memory is returned only when its process ends.
      if (signal.aborted || tooBig.signal.aborted) await this.#stop();
      if (e instanceof UnavailableError) throw e;
      if (signal.aborted || (e as Error).name === "TimeoutError") throw timedOut();
      throw unavailable(`Chromium failed to print the page (${(e as Error).message.split("\n")[0]})`);
    } finally {
      clearInterval(watch);
      work.catch(() => {});
    }
  }

  /** Samples the browser's memory during a render; aborts `ctl` past the bound. */
  #watchMemory(ctl: AbortController): ReturnType<typeof setInterval> {
    const limit = this.opts.memoryLimitBytes;
    const id = setInterval(async () => {
      const pid = (await this.#browser?.catch(() => null))?.process()?.pid;
      if (!pid) return;
      const pids = processTree(pid);
      const rss = residentBytes(pids);
      if (rss > this.peakRssBytes) this.peakRssBytes = rss;
      const pss = proportionalBytes(pids);
      if (pss > this.peakPssBytes) this.peakPssBytes = pss;
      // The bound is on proportional memory: the sum of VmRSS counts Chromium's shared libraries once per
      // process (an idle browser of 9 processes: about 900 MB of it against 330-390 MB Pss). VmRSS where
      // the kernel has no smaps_rollup.
      const used = pss > 0 ? pss : rss;
      if (limit && used > limit && !ctl.signal.aborted) {
        this.#log.warn("The PDF browser used {mb} MB, over its bound of {limit} MB; stopping it", {
          mb: Math.round(used / 2 ** 20),
          limit: Math.round(limit / 2 ** 20),
        });
        ctl.abort(
          unavailable(
            `Rendering the PDF needed more than ${
              Math.round(limit / 2 ** 20)
            } MB (DUT_PDF_MEMORY_MB); try again later`,
          ),
        );
      }
    }, this.opts.memorySampleMs ?? 250);
    Deno.unrefTimer(id as unknown as number);
    return id;
  }

  /** The process ids of the running browser (empty when none): tests measure their memory. */
  async browserPids(): Promise<number[]> {
    const pid = (await this.#browser?.catch(() => null))?.process()?.pid;
    return pid ? processTree(pid) : [];
  }

  /** Stop the browser now (SIGKILL if it does not close within a second); the next render starts one. */
  async #stop(): Promise<void> {
    const b = this.#browser;
    this.#browser = null;
    this.#idle = [];
    const browser = await b?.catch(() => null);
    if (!browser) return;
    const proc = browser.process();
    const pids = proc?.pid ? processTree(proc.pid) : [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const wait = (ms: number) => new Promise((r) => timer = setTimeout(r, ms));
    const closing = browser.close().catch(() => {});
    await Promise.race([closing, wait(1_000)]);
    clearTimeout(timer);
    for (const pid of pids) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* already ended */ }
    }
    // Once the process has ended puppeteer removes its temporary profile directory: nothing of this browser
    // outlives the stop (a close slower than a second had left that removal running after it).
    await Promise.race([closing, wait(5_000)]);
    clearTimeout(timer);
  }

  async #print(html: string, signal: AbortSignal): Promise<Uint8Array> {
    let browser: Browser;
    try {
      browser = await this.#launch();
    } catch (e) {
      if (e instanceof UnavailableError) throw e;
      throw unavailable(`Chromium did not start (${(e as Error).message.split("\n")[0]})`);
    }
    // Given up while the browser started (the time limit): the caller is stopping this browser, and a tab
    // opened on it now would leave puppeteer waiting for a target that never comes (a timer past the render).
    signal.throwIfAborted();
    let page = this.#idle.pop();
    if (page?.isClosed() || page?.browser() !== browser) page = undefined;
    if (!page) {
      page = await browser.newPage();
      await page.setJavaScriptEnabled(false);
    }
    let reuse = false;
    try {
      // setContent replaces the whole document of a reused tab.
      await page.setContent(html, { waitUntil: "load", timeout: this.opts.timeoutMs });
      const pdf = await page.pdf({
        printBackground: true,
        preferCSSPageSize: true,
        displayHeaderFooter: false,
        // No PDF structure tree: Chromium's tagged PDF (puppeteer's default) doubled the print time of a
        // report with a thousand annex rows and made the file 5x larger (BENCHMARKS.md section 6c). The
        // HTML page of the same report is the accessible version.
        tagged: false,
        timeout: this.opts.timeoutMs,
      });
      reuse = !signal.aborted;
      return pdf;
    } finally {
      if (reuse && this.#idle.length < this.opts.concurrency) this.#idle.push(page);
      else page.close().catch(() => {});
    }
  }

  /** Stop the browser (shutdown, end of a test). */
  async close(): Promise<void> {
    await this.#stop();
  }
}

/** What {@link attachEvidence} embeds and records. */
export interface PdfEvidence {
  executionId: string;
  runId: string;
  title: string;
  reportSha256: string;
  /** The exact frozen report.json bytes. */
  reportText: string;
  /** The DSSE envelope as served by report.dsse.json. */
  envelopeText: string;
  signingKeyId: string;
  generatedAt: string;
}

/** Custom document-information keys (PDF 1.7 §14.3.3 allows second-class names). */
export const PDF_INFO_KEYS = {
  executionId: "DutlabExecutionId",
  runId: "DutlabRunId",
  reportSha256: "DutlabReportSha256",
  signingKeyId: "DutlabSigningKeyId",
} as const;

/**
 * Attach the report and its envelope to a PDF as embedded files (listed in the catalog's `EmbeddedFiles`
 * name tree and `AF`, relationship `Source`), and set the metadata: title, subject and keywords naming the
 * run and `reportSha256`, plus the {@link PDF_INFO_KEYS} entries. With `sign`, the result is signed last
 * (PAdES B-B over the whole file, attachments included: `pdf_sign.ts`).
 */
export async function attachEvidence(
  pdf: Uint8Array,
  ev: PdfEvidence,
  sign?: { signer: PdfSigner; fields: PdfSignatureFields },
): Promise<Uint8Array> {
  const { AFRelationship, PDFDict, PDFDocument, PDFName, PDFString } = await import("pdf-lib");
  const doc = await PDFDocument.load(pdf, { updateMetadata: false });
  const at = new Date(ev.generatedAt);
  const enc = new TextEncoder();
  await doc.attach(enc.encode(ev.reportText), `report-${ev.executionId}.json`, {
    mimeType: "application/json",
    description: `ReportData of execution ${ev.executionId}; reportSha256 ${ev.reportSha256}`,
    creationDate: at,
    modificationDate: at,
    afRelationship: AFRelationship.Source,
  });
  await doc.attach(enc.encode(ev.envelopeText), `report-${ev.executionId}.dsse.json`, {
    mimeType: "application/json",
    description: `DSSE envelope (in-toto Statement v1) signed by key ${ev.signingKeyId}`,
    creationDate: at,
    modificationDate: at,
    afRelationship: AFRelationship.Supplement,
  });
  // The annexes in full (the print shows them bounded): exact JSON bodies and CSV tables (issue 49).
  const { annexAttachments } = await import("./attachments.ts");
  const annexes = (JSON.parse(ev.reportText) as { annexes?: Annex[] }).annexes ?? [];
  for (const f of annexAttachments(annexes)) {
    await doc.attach(enc.encode(f.data), f.name, {
      mimeType: f.mimeType,
      description: f.description,
      creationDate: at,
      modificationDate: at,
      afRelationship: AFRelationship.Data,
    });
  }
  doc.setTitle(ev.title, { showInWindowTitleBar: true });
  doc.setSubject(`Test-run report ${ev.runId}, execution ${ev.executionId}, reportSha256 ${ev.reportSha256}`);
  doc.setKeywords([`executionId:${ev.executionId}`, `runId:${ev.runId}`, `reportSha256:${ev.reportSha256}`]);
  doc.setAuthor("dutlab");
  doc.setCreator("dutlab");
  doc.setProducer("dutlab (Chromium, pdf-lib)");
  doc.setCreationDate(at);
  doc.setModificationDate(at);
  doc.setLanguage("en");
  const info = doc.context.lookup(doc.context.trailerInfo.Info, PDFDict);
  const custom: Record<string, string> = {
    [PDF_INFO_KEYS.executionId]: ev.executionId,
    [PDF_INFO_KEYS.runId]: ev.runId,
    [PDF_INFO_KEYS.reportSha256]: ev.reportSha256,
    [PDF_INFO_KEYS.signingKeyId]: ev.signingKeyId,
  };
  for (const [k, v] of Object.entries(custom)) info.set(PDFName.of(k), PDFString.of(v));
  if (sign) {
    const { signPdfDocument } = await import("../pdf_sign.ts");
    return await signPdfDocument(doc, sign.signer, sign.fields);
  }
  return await doc.save({ addDefaultPage: false });
}
