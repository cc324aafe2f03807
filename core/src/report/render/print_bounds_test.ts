/**
 * The print report of a 5,000-device lab (issue 49 point 1): bounded pages, the annexes in full attached to
 * the signed PDF. Outside judges: poppler's `pdfsig` validates the signature, `pdfdetach` lists and saves
 * the attachments, `sha256sum`-equivalent hashes of the saved JSON annexes equal report.json's.
 */
import assert from "node:assert/strict";
import { PDFDocument } from "pdf-lib";
import { bigReport } from "../../../harness/big_report.ts";
import { findChromium } from "../../../testing/chromium.ts";
import { TEST_PDF_CERT, TEST_PDF_KEY } from "../../../harness/app.ts";
import { sha256Hex } from "../../util/hash.ts";
import { PdfSigner } from "../pdf_sign.ts";
import { renderReportPage } from "./page.tsx";
import { attachEvidence, PdfRenderer } from "./pdf.ts";
import { annexAttachments } from "./attachments.ts";

const ignore = !findChromium() && !Deno.env.get("CI");
const dec = new TextDecoder();

async function run(cmd: string, args: string[], cwd?: string) {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" }).output();
  return { code: out.code, out: dec.decode(out.stdout), err: dec.decode(out.stderr) };
}

Deno.test("the print page of 5,000 devices is bounded: aggregates, failed items, what is left out and where", async () => {
  const report = await bigReport(5_000);
  const html = renderReportPage(report);
  assert.ok(html.length < 600_000, `print page of ${html.length} bytes`);
  assert.match(html, /5000 device\(s\) at run start, per vendor and role/);
  assert.match(
    html,
    /4,850 of 5,000 item\(s\) are not printed one by one/,
    "pre-flight: 150 of 4,900 skipped printed",
  );
  assert.match(html, /annex-preflight-at-start\.csv/);
  assert.match(html, /Not printed: [\d,]+ bytes\. The exact body is attached to this PDF as/);
  for (const f of annexAttachments(report.annexes)) {
    assert.ok(html.includes(f.name), `the page names ${f.name}`);
  }
  // A small report prints as before: every row, every body.
  const small = renderReportPage(await bigReport(20, 2));
  assert.doesNotMatch(small, /not printed one by one|Not printed:/);
});

Deno.test(
  {
    name:
      "5,000 devices: signed PDF, pdfsig validates, pdfdetach lists the annexes, JSON annexes hash as in report.json",
    ignore,
  },
  async () => {
    const report = await bigReport(5_000);
    const pdf = new PdfRenderer({ concurrency: 1, timeoutMs: 120_000 });
    const dir = await Deno.makeTempDir({ prefix: "dutlab-bigpdf-" });
    try {
      const printed = await pdf.render(renderReportPage(report));
      const signer = await PdfSigner.load({
        kind: "pem",
        certificate: TEST_PDF_CERT,
        privateKey: TEST_PDF_KEY,
      });
      const text = JSON.stringify(report);
      const bytes = await attachEvidence(printed, {
        executionId: report.meta.executionId,
        runId: report.meta.runId,
        title: "Test-run report",
        reportSha256: report.reportSha256,
        reportText: text,
        envelopeText: "{}",
        signingKeyId: "test",
        generatedAt: report.generatedAt,
      }, {
        signer,
        fields: {
          reason: "test",
          name: "dutlab test lab",
          location: "lab",
          contactInfo: "http://127.0.0.1/",
        },
      });
      const pages = (await PDFDocument.load(bytes, { updateMetadata: false })).getPageCount();
      assert.ok(pages <= 60, `${pages} printed pages`);
      await Deno.writeFile(`${dir}/report.pdf`, bytes);
      const sig = await run("pdfsig", ["report.pdf"], dir);
      assert.match(sig.out + sig.err, /Signature Validation: Signature is Valid/, sig.out + sig.err);
      assert.match(sig.out, /Total document signed/);
      const list = await run("pdfdetach", ["-list", "report.pdf"], dir);
      assert.equal(list.code, 0, list.err);
      const names = list.out.split("\n").map((l) => l.replace(/^\d+: /, "").trim()).filter(Boolean).slice(1);
      for (const f of annexAttachments(report.annexes)) {
        assert.ok(names.includes(f.name), `${f.name} in ${list.out}`);
      }
      for (const a of report.annexes) {
        const n = names.indexOf(`annex-${a.id}.json`) + 1;
        const saved = await run("pdfdetach", ["-save", String(n), "-o", `${a.id}.json`, "report.pdf"], dir);
        assert.equal(saved.code, 0, saved.err);
        assert.equal(await sha256Hex(await Deno.readFile(`${dir}/${a.id}.json`)), a.sha256, a.id);
      }
    } finally {
      await pdf.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
);
