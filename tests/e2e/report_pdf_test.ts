/**
 * GET /api/test-runs/{id}/report.pdf: A4 pages from headless Chromium, the report and its DSSE envelope
 * attached, metadata naming the run and reportSha256, the page's access rules, a 503 problem without
 * Chromium; and verify_report.ts on the PDF (a changed embedded report is caught).
 *
 * Issue 49, "done when": through `GET /api/test-runs/{id}/report.pdf`, a render forced past its time limit
 * answers 503 with a `Retry-After` header, the browser processes that rendered are gone (their resident memory
 * 0) within 10 s, and the next request answers 200 with a new browser.
 */
import assert from "node:assert/strict";
import {
  decodePDFRawStream,
  PDFArray,
  PDFDict,
  PDFDocument,
  PDFHexString,
  PDFName,
  PDFRawStream,
  type PDFRef,
  PDFString,
} from "pdf-lib";
import { dbTest } from "../../core/harness/db.ts";
import { jsonReq, testServices } from "../../core/harness/app.ts";
import { fixtureModules } from "@dutlab/core/testing";
import { assertReportPages, findChromium, pdfPages, squash } from "@dutlab/core/testing/chromium";
import { type App, type Auth, finishRun, startRun } from "../../core/harness/runs_lab.ts";
import { residentBytes } from "../../core/harness/core.ts";
const sha256Hex = async (b: Uint8Array) =>
  Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", b as Uint8Array<ArrayBuffer>)))
    .map((x) => x.toString(16).padStart(2, "0")).join("");

const chromium = findChromium();
const inCi = Boolean(Deno.env.get("CI"));
const dec = new TextDecoder();

async function finishedRun(app: App, auth: Auth): Promise<string> {
  const run = await startRun(app, auth, { planIdentifier: "fixture-plan" });
  await finishRun(app, auth, run.executionId, {
    outcome: "passed",
    results: { latencySamplesMs: [3, 4, 5] },
  });
  return run.executionId;
}

/** The embedded files of a PDF, read with pdf-lib's object model (independently of the verifier). */
function embeddedFiles(doc: PDFDocument): Array<{ name: string; ref: PDFRef; bytes: Uint8Array }> {
  const names = doc.catalog.lookup(PDFName.of("Names"), PDFDict).lookup(PDFName.of("EmbeddedFiles"), PDFDict)
    .lookup(PDFName.of("Names"), PDFArray);
  const out = [];
  for (let i = 0; i < names.size(); i += 2) {
    const name = names.lookup(i) as PDFString | PDFHexString;
    const spec = names.lookup(i + 1, PDFDict);
    const ref = spec.lookup(PDFName.of("EF"), PDFDict).get(PDFName.of("F")) as PDFRef;
    const bytes = decodePDFRawStream(doc.context.lookup(ref) as PDFRawStream).decode();
    out.push({ name: name.decodeText(), ref, bytes });
  }
  return out;
}

function indexOf(hay: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

dbTest("report.pdf is a 503 problem when Chromium is missing", async (db) => {
  const { app, auth, svc } = await testServices(db, fixtureModules(), {
    DUT_CHROMIUM_PATH: "/nonexistent/chromium",
  });
  const id = await finishedRun(app, auth);
  const res = await app.request(`/api/test-runs/${id}/report.pdf`, { headers: auth });
  assert.equal(res.status, 503);
  assert.equal(res.headers.get("content-type"), "application/problem+json");
  const p = await res.json();
  assert.equal(p.type, "urn:dutlab:problem:pdf-unavailable");
  assert.match(p.detail, /No Chromium found at \/nonexistent\/chromium/);
  await svc.pdf.close();
});

dbTest(
  "report.pdf: A4, report and envelope attached, cover hash = embedded report; verifier catches edits",
  async (db) => {
    assert.ok(chromium, "Chromium is required when CI is set: install the Debian package chromium");
    const { app, auth, svc } = await testServices(db, fixtureModules());
    const dir = await Deno.makeTempDir({ prefix: "dutlab-pdf-" });
    const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, app.fetch);
    try {
      const id = await finishedRun(app, auth);
      const reportRes = await app.request(`/api/test-runs/${id}/report.json`, { headers: auth });
      const reportText = await reportRes.text();
      const report = JSON.parse(reportText);
      const envelopeText =
        await (await app.request(`/api/test-runs/${id}/report.dsse.json`, { headers: auth }))
          .text();

      const res = await app.request(`/api/test-runs/${id}/report.pdf`, { headers: auth });
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal(res.headers.get("content-type"), "application/pdf");
      assert.equal(res.headers.get("x-report-sha256"), report.reportSha256);
      const pdf = new Uint8Array(await res.arrayBuffer());

      // Print contract: A4, licence footer and page n of N; the cover shows reportSha256 and the key.
      const pages = await pdfPages(pdf);
      assertReportPages(pages, report.license);
      const cover = squash(pages[0]!.text);
      assert.ok(cover.includes(report.reportSha256));
      assert.ok(cover.includes(svc.signatures.key.keyId), "the signing key fingerprint is on the cover");

      // Attachments, extracted with pdf-lib: the exact served bytes.
      const doc = await PDFDocument.load(pdf);
      const files = embeddedFiles(doc);
      // The report and its envelope, and every annex in full (issue 49): each JSON annex is its exact body.
      const served = JSON.parse(reportText) as { annexes: { id: string; sha256: string }[] };
      assert.deepEqual(
        files.map((f) => f.name).filter((n) => n.startsWith("report-")).sort(),
        [`report-${id}.dsse.json`, `report-${id}.json`],
      );
      for (const a of served.annexes) {
        const f = files.find((f) => f.name === `annex-${a.id}.json`);
        assert.ok(f, `annex-${a.id}.json attached`);
        assert.equal(await sha256Hex(f.bytes), a.sha256, `annex-${a.id}.json hashes as in report.json`);
      }
      const embeddedReport = files.find((f) => f.name === `report-${id}.json`)!;
      assert.equal(dec.decode(embeddedReport.bytes), reportText);
      assert.equal(dec.decode(files.find((f) => f.name.endsWith(".dsse.json"))!.bytes), envelopeText);
      assert.ok(
        cover.includes(JSON.parse(dec.decode(embeddedReport.bytes)).reportSha256),
        "cover hash matches",
      );
      // Metadata.
      assert.equal(doc.getTitle(), `Test-run report ${report.meta.runId} — ${report.meta.planDisplayName}`);
      assert.ok(doc.getSubject()?.includes(report.reportSha256));
      assert.ok(doc.getKeywords()?.includes(`runId:${report.meta.runId}`));

      // Share link: same access as the page; no token, no link: 401; a tampered link: 403.
      const { url } =
        await (await app.request(`/api/test-runs/${id}/share`, jsonReq("POST", undefined, auth)))
          .json();
      const q = new URL(url).search;
      const shared = await app.request(`/api/test-runs/${id}/report.pdf${q}`);
      assert.equal(shared.status, 200);
      await shared.body?.cancel();
      const none = await app.request(`/api/test-runs/${id}/report.pdf`);
      assert.equal(none.status, 401);
      await none.body?.cancel();
      const tampered = await app.request(
        `/api/test-runs/${id}/report.pdf${
          q.replace(/sig=(.)/, (_, c: string) => `sig=${c === "A" ? "B" : "A"}`)
        }`,
      );
      assert.equal(tampered.status, 403);
      await tampered.body?.cancel();
      const other = await finishedRun(app, auth);
      const wrongRun = await app.request(`/api/test-runs/${other}/report.pdf${q}`);
      assert.equal(wrongRun.status, 403, "a link opens its own run only");
      await wrongRun.body?.cancel();

      // The standalone verifier on the PDF alone, from an empty directory with only the public key.
      const base = `http://127.0.0.1:${server.addr.port}`;
      await Deno.writeTextFile(
        `${dir}/verify_report.ts`,
        await (await fetch(`${base}/verify-report.ts`)).text(),
      );
      await Deno.writeTextFile(`${dir}/key.pem`, svc.signatures.key.publicKey.publicKeyPem);
      await Deno.writeFile(`${dir}/report.pdf`, pdf);
      const verify = async (file: string) => {
        const out = await new Deno.Command(Deno.execPath(), {
          args: ["run", "-A", "verify_report.ts", file, "--key", "key.pem"],
          cwd: dir,
          env: { NO_COLOR: "1" },
          stdout: "piped",
          stderr: "piped",
        }).output();
        return { code: out.code, out: dec.decode(out.stdout) + dec.decode(out.stderr) };
      };
      const ok = await verify("report.pdf");
      assert.equal(ok.code, 0, ok.out);
      assert.match(ok.out, /ok {8}PDF cover reportSha256 = embedded report/);
      assert.match(
        ok.out,
        new RegExp(`OK reportSha256 ${report.reportSha256} signed by ${svc.signatures.key.keyId}`),
      );

      // One byte of the embedded JSON changed (the PDF stays well-formed): caught.
      const edited = embeddedReport.bytes.slice();
      const at = dec.decode(edited).indexOf('"outcome": "passed"') + 13;
      edited[at] = "P".charCodeAt(0);
      doc.context.assign(
        embeddedReport.ref,
        doc.context.flateStream(edited, { Type: "EmbeddedFile", Subtype: "application/json" }),
      );
      await Deno.writeFile(`${dir}/edited.pdf`, await doc.save());
      const bad = await verify("edited.pdf");
      assert.equal(bad.code, 1, bad.out);
      assert.match(bad.out, /MISMATCH {2}reportSha256/);
      assert.match(bad.out, /MISMATCH {2}PDF cover reportSha256 = embedded report/);
      // A raw byte flipped inside the embedded report's (compressed) stream of the served PDF: caught too.
      const original = await PDFDocument.load(pdf);
      const rawStream = original.context.lookup(embeddedFiles(original)[0]!.ref) as PDFRawStream;
      const at0 = indexOf(pdf, rawStream.contents.subarray(0, 32));
      assert.ok(at0 > 0, "the embedded stream is in the file");
      const raw = pdf.slice();
      raw[at0 + Math.floor(rawStream.contents.length / 2)]! ^= 0x01;
      await Deno.writeFile(`${dir}/flipped.pdf`, raw);
      assert.notEqual((await verify("flipped.pdf")).code, 0);
    } finally {
      await server.shutdown();
      await svc.pdf.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
  { ignore: !chromium && !inCi },
);

dbTest(
  "report.pdf past its time limit: 503 with Retry-After, the browser's memory released within 10 s, the next request 200",
  async (db) => {
    assert.ok(chromium, "Chromium is required when CI is set: install the Debian package chromium");
    const { app, auth, svc } = await testServices(db, fixtureModules());
    try {
      const run = await startRun(app, auth, { planIdentifier: "fixture-plan" });
      await finishRun(app, auth, run.executionId, { outcome: "passed", results: { latencySamplesMs: [3] } });
      const url = `/api/test-runs/${run.executionId}/report.pdf`;
      const first = await app.request(url, { headers: auth });
      assert.equal(first.status, 200, await first.clone().text());
      await first.body?.cancel();
      const warm = await svc.pdf.browserPids();
      assert.ok(warm.length > 0 && residentBytes(warm) > 0, "the warm browser's processes are visible");

      // Forced past the limit: the same renderer with a limit no render can meet (DUT_PDF_TIMEOUT_SECONDS
      // cannot go below 1 s, which a warm render of this report may meet).
      const limit = svc.pdf.opts.timeoutMs;
      (svc.pdf.opts as { timeoutMs: number }).timeoutMs = 1;
      const slow = await app.request(url, { headers: auth });
      assert.equal(slow.status, 503);
      assert.equal(slow.headers.get("retry-after"), "30");
      assert.equal(slow.headers.get("content-type"), "application/problem+json");
      const p = await slow.json();
      assert.equal(p.type, "urn:dutlab:problem:pdf-unavailable");
      assert.match(p.detail, /took longer than 1 ms/);
      assert.equal(p.retryAfterSeconds, 30);

      const deadline = Date.now() + 10_000;
      let rss = residentBytes(warm);
      while (rss > 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
        rss = residentBytes(warm);
      }
      assert.equal(rss, 0, "every process of the browser that rendered has ended within 10 s");

      (svc.pdf.opts as { timeoutMs: number }).timeoutMs = limit;
      const next = await app.request(url, { headers: auth });
      assert.equal(next.status, 200, await next.clone().text());
      assert.equal(next.headers.get("content-type"), "application/pdf");
      await next.body?.cancel();
      const fresh = await svc.pdf.browserPids();
      assert.ok(fresh.length > 0 && !fresh.some((pid) => warm.includes(pid)), "a new browser rendered it");
    } finally {
      await svc.pdf.close();
    }
  },
  { ignore: !chromium && !inCi, only: ["postgres"] },
);
