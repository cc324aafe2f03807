/**
 * Issue 49, "done when": a run over a lab of 5,000 registered devices (unreachable) answers `report.pdf`
 * with 200 through the HTTP route; poppler's `pdfsig` validates its signature, `pdfdetach -list` lists the
 * attached annexes, and each attached JSON annex hashes to its value in report.json. Its print stays within
 * 60 pages. PostgreSQL only (5,000 devices on PGlite would only make the test slower).
 */
import assert from "node:assert/strict";
import { fixtureModules } from "@dutlab/core/testing";
import { dbTest } from "../../core/harness/db.ts";
import { findChromium } from "@dutlab/core/testing/chromium";
import { PDFDocument } from "pdf-lib";
import { testServices } from "../../core/harness/app.ts";
import { finishRun, startRun } from "../../core/harness/runs_lab.ts";

const chromium = findChromium();
const inCi = Boolean(Deno.env.get("CI"));
const dec = new TextDecoder();
const N = 5000;
const sha256Hex = async (b: Uint8Array) =>
  Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", b as Uint8Array<ArrayBuffer>)))
    .map((x) => x.toString(16).padStart(2, "0")).join("");

async function poppler(cmd: string, args: string[]): Promise<{ code: number; out: string }> {
  const o = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  return { code: o.code, out: dec.decode(o.stdout) + dec.decode(o.stderr) };
}

dbTest(
  "report.pdf of a run over 5,000 unreachable devices: 200, pdfsig valid, annexes attached and hashing as in report.json",
  async (db) => {
    assert.ok(chromium, "Chromium is required when CI is set: install the Debian package chromium");
    const { app, auth, svc } = await testServices(db, fixtureModules());
    const dir = await Deno.makeTempDir({ prefix: "dutlab-pdf-lab-" });
    try {
      for (let k = 0; k < N; k += 50) {
        await Promise.all(Array.from({ length: Math.min(50, N - k) }, (_, j) =>
          svc.devices.create({
            hostname: `dut-${String(k + j).padStart(4, "0")}.lab.test`,
            vendor: "fixture-fw",
            deviceRole: (k + j) % 2 ? "switch" : "ngfw",
            baseUrl: `https://127.0.0.${10 + ((k + j) % 16)}:9`,
            username: "admin",
            password: `pw-${k + j}`,
            tlsVerifyMode: "self-signed",
            pollIntervalSeconds: 300,
            enabled: true,
          } as never)));
      }
      // As a scan leaves them (the poll path's own logging is log_summary_test's): unreachable.
      await db.kysely.updateTable("devices").set({
        last_poll_status: "unreachable",
        last_poll_error: "connect ECONNREFUSED",
        last_poll_at: new Date(),
      }).execute();
      const run = await startRun(app, auth, { planIdentifier: "fixture-plan" });
      await finishRun(app, auth, run.executionId, {
        outcome: "passed",
        results: { latencySamplesMs: [3, 4] },
      });
      const id = run.executionId;
      const report = JSON.parse(
        await (await app.request(`/api/test-runs/${id}/report.json`, { headers: auth })).text(),
      ) as {
        reportSha256: string;
        topology: { devices: unknown[] };
        annexes: { id: string; sha256: string }[];
      };
      assert.equal(report.topology.devices.length, N, "the report holds every device");

      const res = await app.request(`/api/test-runs/${id}/report.pdf`, { headers: auth });
      const pdf = new Uint8Array(await res.arrayBuffer());
      assert.equal(res.status, 200, dec.decode(pdf.subarray(0, 2000)));
      assert.equal(res.headers.get("x-report-sha256"), report.reportSha256);
      const pages = (await PDFDocument.load(pdf, { updateMetadata: false })).getPageCount();
      assert.ok(pages <= 60, `${pages} printed pages`);
      const file = `${dir}/report.pdf`;
      await Deno.writeFile(file, pdf);

      const sig = await poppler("pdfsig", [file]);
      assert.equal(sig.code, 0, sig.out);
      assert.match(sig.out, /Signature Validation: Signature is Valid\./);
      const list = await poppler("pdfdetach", ["-list", file]);
      assert.equal(list.code, 0, list.out);
      for (const a of report.annexes) {
        assert.match(list.out, new RegExp(`: annex-${a.id}\\.json$`, "m"), `annex-${a.id}.json listed`);
      }
      assert.match(list.out, /: annex-lab-at-start\.csv$/m, "the device tables as CSV too");
      assert.match(list.out, new RegExp(`: report-${id}\\.json$`, "m"));
      await Deno.mkdir(`${dir}/out`);
      const save = await poppler("pdfdetach", ["-saveall", "-o", `${dir}/out`, file]);
      assert.equal(save.code, 0, save.out);
      assert.ok(report.annexes.length >= 3);
      for (const a of report.annexes) {
        const bytes = await Deno.readFile(`${dir}/out/annex-${a.id}.json`);
        assert.equal(await sha256Hex(bytes), a.sha256, `annex-${a.id}.json hashes as in report.json`);
      }
    } finally {
      await svc.pdf.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
  { ignore: !chromium && !inCi, only: ["postgres"] },
);
