import assert from "node:assert/strict";
import { PDFDocument } from "pdf-lib";
import { PdfRenderer } from "./pdf.ts";
import { UnavailableError } from "../../errors.ts";
import { findChromium } from "../../../testing/chromium.ts";

const chromium = findChromium();
const ignore = !chromium && !Deno.env.get("CI");
const html = (n: number) =>
  `<!DOCTYPE html><style>@page { size: A4; margin: 10mm }</style>${
    "<p style='break-after: page'>x</p>".repeat(n)
  }`;

Deno.test(
  { name: "one warm browser: renders queue behind the concurrency bound and reuse it", ignore },
  async () => {
    const pdf = new PdfRenderer({ concurrency: 1, timeoutMs: 120_000 });
    try {
      const out = await Promise.all([1, 2, 3].map((n) => pdf.render(html(n))));
      const pages = await Promise.all(out.map(async (b) => (await PDFDocument.load(b)).getPageCount()));
      assert.deepEqual(pages, [1, 2, 3], "each request got its own document");
      const size = (await PDFDocument.load(out[0]!)).getPage(0).getSize();
      assert.ok(
        Math.abs(size.width - 595.3) < 1 && Math.abs(size.height - 841.9) < 1,
        "A4 from the page's @page",
      );
    } finally {
      await pdf.close();
    }
  },
);

Deno.test(
  { name: "a render over the time limit (browser start included) is a 503 problem", ignore },
  async () => {
    const slow = new PdfRenderer({ concurrency: 1, timeoutMs: 1 });
    try {
      const e = await slow.render(html(1)).then(() => null, (e) => e);
      assert.ok(e instanceof UnavailableError);
      assert.equal(e.service, "pdf");
      assert.equal(e.extra.retryAfterSeconds, 30);
      assert.match(e.message, /took longer than 1 ms/);
    } finally {
      await slow.close();
    }
  },
);

Deno.test("without Chromium: a 503 problem naming the path, no process started", async () => {
  const none = new PdfRenderer({ executablePath: "/nonexistent/chromium", concurrency: 1, timeoutMs: 5_000 });
  assert.equal(none.chromiumPath(), null);
  const e = await none.render(html(1)).then(() => null, (e) => e);
  assert.ok(e instanceof UnavailableError);
  assert.equal(e.service, "pdf");
  assert.match(e.message, /No Chromium found at \/nonexistent\/chromium/);
  await none.close();
});
