/**
 * Real headless Chromium for tests: print a page to PDF, take a screenshot, and read a PDF back
 * (page sizes in points and the text of each page).
 *
 * Uses the system Chromium (Debian package `chromium`) through its command line, so no browser is
 * downloaded. PDF text is extracted with `unpdf` (a zero-dependency build of Mozilla's PDF.js).
 *
 * @example
 * ```ts
 * import { findChromium, pdfPages, printToPdf } from "./chromium.ts";
 * if (findChromium()) {
 *   const pages = await pdfPages(await printToPdf("<!DOCTYPE html><p>Hello</p>"));
 *   console.log(pages[0]?.widthPt, pages[0]?.text);
 * }
 * ```
 *
 * @module
 */
import assert from "node:assert/strict";
import { getDocumentProxy } from "unpdf";

/** One page of a PDF: its size in points (1/72 in) as displayed, and its text. */
export interface PdfPage {
  /** Page width in points. */
  widthPt: number;
  /** Page height in points. */
  heightPt: number;
  /** Text runs in content order; a line break ends each line. */
  text: string;
}

/** Options of {@link screenshot}. */
export interface ScreenshotOptions {
  /** Window width in CSS pixels; default 1280. */
  width?: number;
  /** Window height in CSS pixels; default 1600. */
  height?: number;
}

const CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];
/** A hung browser must not stall a test run. */
const TIMEOUT_MS = 60_000;

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/**
 * Path of a Chromium binary: `CHROMIUM_PATH` when set and present, else `/usr/bin/chromium`, else
 * `/usr/bin/chromium-browser`; `null` when none is installed.
 */
export function findChromium(): string | null {
  let fromEnv: string | undefined;
  try {
    fromEnv = Deno.env.get("CHROMIUM_PATH");
  } catch {
    fromEnv = undefined;
  }
  for (const p of [fromEnv, ...CANDIDATES]) {
    if (p && isFile(p)) return p;
  }
  return null;
}

function requireChromium(): string {
  const bin = findChromium();
  if (!bin) {
    throw new Error(
      'Cannot find Chromium: set "CHROMIUM_PATH" or install the Debian package "chromium"',
    );
  }
  return bin;
}

const isUrl = (s: string) => /^(https?|file|data|about):/i.test(s.trimStart());

/**
 * Run Chromium headless on `urlOrHtml` with extra flags, in a fresh profile and temp dir.
 * `flags` receives the temp dir so output files can be placed there.
 */
async function runChromium(
  urlOrHtml: string,
  flags: (dir: string) => string[],
  after: (dir: string) => Promise<void>,
): Promise<void> {
  const bin = requireChromium();
  const dir = await Deno.makeTempDir({ prefix: "dutlab-chromium-" });
  try {
    let target = urlOrHtml;
    if (!isUrl(urlOrHtml)) {
      const file = `${dir}/page.html`;
      await Deno.writeTextFile(file, urlOrHtml);
      target = `file://${file}`;
    }
    const args = [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      `--user-data-dir=${dir}/profile`,
      ...flags(dir),
      target,
    ];
    const out = await new Deno.Command(bin, {
      args,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(TIMEOUT_MS),
    }).output();
    try {
      await after(dir);
    } catch (err) {
      const tail = new TextDecoder().decode(out.stderr).split("\n").slice(-8).join("\n");
      throw new Error(`Chromium produced no output (exit code ${out.code}): ${tail}`, { cause: err });
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/**
 * Print a URL (`http(s):`, `file:`, `data:`) or an HTML document string to PDF with headless
 * Chromium. The page's own `@page` rules decide size and margins; Chromium's default header and
 * footer are off (`--no-pdf-header-footer`), so only the page's margin boxes print.
 */
export async function printToPdf(urlOrHtml: string): Promise<Uint8Array> {
  let pdf: Uint8Array = new Uint8Array();
  await runChromium(
    urlOrHtml,
    // Untagged, like report.pdf (core/src/report/render/pdf.ts): tagging doubles the print time of a big report.
    (dir) => ["--no-pdf-header-footer", "--disable-pdf-tagging", `--print-to-pdf=${dir}/out.pdf`],
    async (dir) => {
      pdf = await Deno.readFile(`${dir}/out.pdf`);
    },
  );
  return pdf;
}

/** Take a PNG screenshot (screen media) of a URL or HTML string and write it to `pngPath`. */
export async function screenshot(
  urlOrHtml: string,
  pngPath: string,
  opts: ScreenshotOptions = {},
): Promise<void> {
  const { width = 1280, height = 1600 } = opts;
  await runChromium(
    urlOrHtml,
    (dir) => [
      "--hide-scrollbars",
      `--window-size=${width},${height}`,
      `--screenshot=${dir}/out.png`,
    ],
    async (dir) => {
      await Deno.copyFile(`${dir}/out.png`, pngPath);
    },
  );
}

/** Size (points) and text of every page of a PDF, in page order. */
export async function pdfPages(pdf: Uint8Array): Promise<PdfPage[]> {
  // PDF.js may detach the buffer it is given: hand it a copy.
  const doc = await getDocumentProxy(new Uint8Array(pdf));
  try {
    const pages: PdfPage[] = [];
    for (let i = 1; i <= doc.numPages; i++) {
      const page = await doc.getPage(i);
      const { width, height } = page.getViewport({ scale: 1 });
      const content = await page.getTextContent();
      let text = "";
      for (const item of content.items) {
        if (!("str" in item)) continue;
        text += item.str;
        if (item.hasEOL) text += "\n";
      }
      pages.push({ widthPt: width, heightPt: height, text });
    }
    return pages;
  } finally {
    await doc.loadingTask.destroy();
  }
}

/** PDF text with all white space removed (text extraction splits runs unpredictably). */
export const squash = (s: string): string => s.replace(/\s+/g, "");
/** PDF text with white space folded to single spaces. */
export const oneLine = (s: string): string => s.replace(/\s+/g, " ");

/**
 * The print contract of the report page: at least `minPages` pages, each A4 portrait, each carrying the
 * licence footer and "page n of N".
 */
export function assertReportPages(
  pages: PdfPage[],
  license: { id: string; name: string },
  minPages = 5,
): void {
  const n = pages.length;
  assert.ok(n >= minPages, `at least one page per section, got ${n}`);
  const footer = `Licence ${license.id} — ${license.name}`;
  pages.forEach((p, i) => {
    assert.ok(
      Math.abs(p.widthPt - 595) <= 1 && Math.abs(p.heightPt - 842) <= 1,
      `page ${i + 1} is A4 portrait`,
    );
    const t = oneLine(p.text);
    assert.ok(t.includes(footer), `page ${i + 1} carries the licence footer`);
    assert.match(t, new RegExp(`page ${i + 1} of ${n}(?!\\d)`), `page ${i + 1} is numbered`);
  });
}
