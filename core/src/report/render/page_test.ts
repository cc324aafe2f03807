import assert from "node:assert/strict";
import {
  assertReportPages,
  findChromium,
  oneLine,
  type PdfPage,
  pdfPages,
  printToPdf,
  squash,
} from "../../../testing/chromium.ts";
import { reportFixture } from "../../../harness/report_fixture.ts";
import { currentReportFixture } from "../../../harness/report_fixture_current.ts";
import { verifyReport } from "../verify.ts";
import { renderReportPage } from "./page.tsx";
import { breakable } from "./page/annexes.tsx";
import { sealReport } from "../seal.ts";
import type { ReportData } from "../types.ts";

const decode = (s: string) =>
  s.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&quot;", '"').replaceAll("&#39;", "'")
    .replaceAll("&amp;", "&");
/** Whitespace-free text, so values wrapped over lines by the PDF layout still match. */

Deno.test("report page renders every section in order with the escaped values", async () => {
  const report = await reportFixture();
  const html = renderReportPage(report, { shareNote: "Shared link <expires> soon" });

  assert.ok(html.startsWith('<!DOCTYPE html><html lang="en">'));
  assert.match(html, /<title>[^<]*run-0042[^<]*<\/title>/);
  const order = ["cover", "licence", "summary", "plan", "annexes"].map((s) =>
    html.indexOf(`data-section="${s}"`)
  );
  assert.ok(order.every((i) => i > 0), `every section is present: ${order}`);
  assert.deepEqual(order, [...order].sort((a, b) => a - b), "sections are in order");

  for (
    const text of [
      report.meta.executionId,
      report.reportSha256,
      report.meta.planSnapshotSha256,
      "SLO PASS",
      "Licence: DUTLAB-EVAL-1.0",
      "1,482,306",
      "62.4 %",
      "Executive summary",
      "Test plan configuration",
      "Phase timeline",
      "Topology",
      "Annexes",
      "ha-active-passive",
      "deno task verify-report &lt;url",
    ]
  ) assert.ok(html.includes(text), `page shows ${JSON.stringify(text)}`);
  for (
    const [lang, heading] of [["en", "English"], ["pt-BR", "Português (Brasil)"], ["es", "Español"]] as const
  ) {
    assert.match(
      html,
      new RegExp(`<div class="lang" lang="${lang}"><h3>${heading.replace(/[()]/g, "\\$&")}</h3>`),
    );
  }

  // Signed: the cover shows the key fingerprint next to the hashes and how to verify without the service.
  const keyId = "ab".repeat(32);
  const signed = renderReportPage(report, { signature: { keyId, baseUrl: "https://lab.example/" } });
  assert.ok(signed.indexOf(keyId) > signed.indexOf(report.reportSha256));
  for (
    const text of [
      "https://lab.example/verify-report.ts",
      "https://lab.example/api/report-keys",
      "npx -y deno@2.9.6 run -A verify_report.ts report.pdf --key key.pem",
      "openssl pkeyutl -verify -pubin -inkey key.pem -rawin",
    ]
  ) assert.ok(signed.includes(text), `signed page shows ${JSON.stringify(text)}`);

  // Free text is escaped, never markup.
  for (const raw of [report.meta.notes!, report.license.holder, "Shared link <expires> soon"]) {
    assert.ok(decode(html).includes(raw), `page shows ${raw}`);
  }
  assert.ok(html.includes("client pool &quot;lg-02&quot; &lt;rack B"));
  assert.ok(!html.includes("<rack B") && !html.includes("<QA") && !html.includes("<expires"));

  // Annex bodies are shown exactly as stored in the appendix (the hash is over that string).
  assert.deepEqual(appendixBodies(html), report.annexes.map((a) => a.body));
  for (const a of report.annexes) assert.ok(html.includes(a.sha256));
  assert.ok(html.includes("This report was frozen before reports carried an overall verdict"));
});

/** The text of each appendix body: its lines, markup (break hints, no-break spans) removed. */
function appendixBodies(html: string): string[] {
  const blocks = [...html.matchAll(/<div class="body">([\s\S]*?)<\/div><\/article>/g)];
  return blocks.map((b) =>
    [...b[1]!.matchAll(/<div class="ln">([\s\S]*?)<\/div>/g)].map((l) =>
      decode(l[1]!.replace(/<[^>]+>/g, ""))
    )
      .join("\n")
  );
}

Deno.test("a current report shows the verdict first, the whole result, annex tables and exact bodies", async () => {
  const report = await currentReportFixture();
  assert.equal((await verifyReport(report)).ok, true);
  const html = renderReportPage(report);
  const cover = html.slice(html.indexOf('data-section="cover"'), html.indexOf('data-section="licence"'));
  const at = (s: string) => cover.indexOf(s);
  assert.ok(
    at('data-verdict="invalid"') > 0 && at('data-verdict="invalid"') < at('data-slo="pass"'),
    "verdict first",
  );
  assert.ok(at("data-slo-note") > at('data-slo="pass"'), "the SLO badge is explained beside it");
  assert.ok(!cover.includes("Outcome: passed"), "no outcome badge on the cover: it is a reason row");
  for (const r of report.verdict!.reasons) assert.ok(decode(cover).includes(r.detail), r.detail);
  assert.ok(
    decode(cover).includes("ACME Networks GmbH") && decode(cover).includes("Northlake Security Test Lab"),
  );
  assert.ok(!html.includes("frozen before reports carried"));
  assert.ok(html.includes("data-figures"));
  assert.ok(
    html.includes("computed by the load generator (k6)") && !html.includes("computed by the service,"),
  );
  assert.ok(
    html.includes("Error budget burned<!-- --> (estimated)") ||
      html.includes("Error budget burned (estimated)"),
  );
  for (const t of ["preflight", "lab", "snapshots", "members"]) {
    assert.ok(html.includes(`data-annex-table="${t}"`), t);
  }
  assert.equal(
    (html.match(/<tr class="hl-bad" data-status="(fail|error)"/g) ?? []).length,
    10,
    "failing checks highlighted",
  );
  assert.deepEqual(appendixBodies(html), report.annexes.map((a) => a.body));
  // A shortened hash keeps its full value.
  const snaps = JSON.parse(report.annexes.find((a) => a.id === "snapshots")!.body);
  assert.ok(html.includes(`data-full="${snaps[0].payloadSha256}"`));
});

Deno.test("report page escapes hostile values in the markup and in the print footer CSS", async () => {
  const base = await reportFixture();
  const evil = "</style><script>alert(1)</script>\"'\\";
  const report: ReportData = {
    ...base,
    meta: { ...base.meta, runId: evil, notes: evil },
    license: { ...base.license, id: evil, name: evil },
    annexes: [{ ...base.annexes[0]!, title: evil, body: evil }],
  };
  const html = renderReportPage(report);
  assert.ok(!html.includes("<script"), "no script element");
  assert.equal(html.match(/<\/style>/g)?.length, 1, "the style element is closed once");
  assert.ok(html.includes("&lt;/style>&lt;script>alert(1)&lt;/script>"), "shown as text");
  assert.match(html, /@bottom-left \{ content: "[^"<]*";/, "footer text is one CSS string");
});

Deno.test("report page has no external resource", async () => {
  const html = renderReportPage(await reportFixture({ decryptChanged: true }));
  assert.ok(
    !/<(script|link|img|iframe|object|embed|video|audio|source)\b/i.test(html),
    "no resource element",
  );
  assert.ok(!/@import|url\(/i.test(html), "no CSS import or url()");
  for (const tag of html.match(/<[a-zA-Z][^>]*>/g) ?? []) {
    for (const [, name, value] of tag.matchAll(/\s([\w:-]+)="([^"]*)"/g)) {
      assert.ok(!/^\s*(https?:)?\/\//i.test(value!), `attribute ${name} of ${tag} points elsewhere`);
    }
  }
});

const chromium = findChromium();
const inCi = Boolean(Deno.env.get("CI"));
if (!chromium && !inCi) {
  console.warn("Chromium not found (install the Debian package chromium): skipping the print checks");
}

async function printed(report: ReportData): Promise<PdfPage[]> {
  assert.ok(chromium, "Chromium is required when CI is set: install the Debian package chromium");
  return await pdfPages(await printToPdf(renderReportPage(report)));
}

Deno.test({
  name: "printed report has A4 pages, each with the licence footer and page n of N",
  ignore: !chromium && !inCi,
  fn: async () => {
    const report = await reportFixture();
    const pages = await printed(report);
    assertReportPages(pages, report.license);
    const footer = `Licence ${report.license.id} — ${report.license.name}`;
    pages.forEach((p, i) => {
      const text = oneLine(p.text);
      const body = text.replace(footer, "").replace(/page \d+ of \d+/, "").replace(
        /Test-run report Run \S+ · \S+/,
        "",
      );
      assert.ok(body.trim().length > 0, `page ${i + 1} is not blank`);
    });

    const cover = squash(pages[0]!.text);
    for (const v of [report.reportSha256, report.meta.planSnapshotSha256, report.meta.executionId]) {
      assert.ok(cover.includes(v), `the cover shows ${v}`);
    }
    assert.ok(cover.includes("SLOPASS"));

    const licence = oneLine(pages[1]!.text);
    for (const heading of ["Licensing and use restrictions", "English", "Português (Brasil)", "Español"]) {
      assert.ok(licence.includes(heading), `page 2 has ${heading}`);
    }
    for (const text of Object.values(report.license.restrictions)) {
      assert.ok(squash(licence).includes(squash(text)), "page 2 holds each restriction text in full");
    }

    const first = (s: string) => pages.findIndex((p) => oneLine(p.text).includes(s));
    const at = ["1. Executive summary", "2. Test plan configuration", "3. Annexes"].map(first);
    assert.deepEqual(at, [2, 3, at[2]], `summary on page 3, plan on page 4: ${at}`);
    assert.ok(at[2]! > at[1]!);
  },
});

Deno.test({
  name: "printed report of a run with a decrypt-mode change shows the alert and a failed SLO verdict",
  ignore: !chromium && !inCi,
  fn: async () => {
    const base = await reportFixture({ decryptChanged: true });
    // A licence name that needs CSS escaping in the @page footer.
    const name = 'Licença "β" <interna> \\ 1.0';
    const report = { ...base, license: { ...base.license, name } };
    const pages = await printed(report);
    pages.forEach((p, i) => assert.ok(p.text.includes(name), `page ${i + 1} footer shows ${name}`));
    const cover = oneLine(pages[0]!.text);
    assert.ok(cover.includes("SLO FAIL") && !cover.includes("SLO PASS"));
    assert.ok(cover.includes("SLO verdict invalidated"));
    assert.ok(squash(cover).includes(squash(report.slo.verdictNote!)));
    assert.ok(squash(pages[0]!.text).includes(report.reportSha256));
    assert.ok(oneLine(pages[1]!.text).includes("Português (Brasil)"), "licences still on page 2");

    const summary = oneLine(pages[2]!.text);
    assert.ok(summary.includes("1. Executive summary"));
    assert.ok(summary.includes("TLSDecryptModeChanged at 2026-11-21 13:41:10 UTC"));
    assert.ok(summary.includes("fw-edge-02 changed from on to off"));
    assert.ok(summary.includes("Changed during the run: results invalidated"));
    assert.ok(summary.includes("SLO FAIL") && !summary.includes("SLO PASS"));
  },
});

Deno.test({
  name: "printed current report: verdict first with its reasons, no badge contradicts it unexplained",
  ignore: !chromium && !inCi,
  fn: async () => {
    for (const opts of [{}, { clean: true }, { decryptChanged: true }]) {
      const report = await currentReportFixture(opts);
      const pages = await printed(report);
      assertReportPages(pages, report.license);
      const verdict = report.verdict!.value.toUpperCase();
      const cover = oneLine(pages[0]!.text);
      assert.ok(squash(pages[0]!.text).includes(report.reportSha256), "the cover keeps the report hash");
      assert.ok(cover.indexOf(`VERDICT: ${verdict}`) >= 0, `cover shows VERDICT: ${verdict}`);
      for (const r of report.verdict!.reasons) {
        assert.ok(squash(cover).includes(squash(r.detail)), `the cover gives the reason ${r.input}`);
      }
      assert.ok(oneLine(pages[1]!.text).includes("Licensing and use restrictions"), "licence on page 2");
      // Every page that shows an SLO badge says, beside it, how it relates to the verdict.
      pages.forEach((p, i) => {
        const text = oneLine(p.text);
        for (const badge of ["SLO PASS", "SLO FAIL"]) {
          if (!text.includes(badge)) continue;
          assert.ok(
            text.includes(`The SLO is one input of the overall verdict, ${verdict}`),
            `page ${i + 1}: ${badge} has its relation to the verdict beside it`,
          );
        }
        assert.ok(!/Outcome: (passed|failed|aborted)/.test(text), `page ${i + 1}: no bare outcome badge`);
      });
      if (report.verdict!.value !== "pass") {
        assert.ok(
          cover.indexOf(`VERDICT: ${verdict}`) < cover.indexOf("SLO PASS") || !cover.includes("SLO PASS"),
        );
      }
      // Annexes read as tables; the appendix still carries every hashed body.
      const all = pages.map((p) => oneLine(p.text)).join(" ");
      assert.ok(all.includes("Check Device Status Detail Evidence snapshot"), "pre-flight annex as a table");
      assert.ok(
        all.includes("Snapshot Device Label Payload SHA-256 Collected"),
        "snapshots annex as a table",
      );
      assert.ok(all.includes("Appendix — annex bodies as hashed"));
      const squashed = squash(pages.map((p) => p.text).join(""));
      for (const a of report.annexes) {
        for (const line of a.body.split("\n")) {
          assert.ok(squashed.includes(squash(line)), `appendix prints ${a.id}: ${line.slice(0, 60)}`);
        }
      }
    }
  },
});

Deno.test("appendix lines get a break hint only where they wrap, never inside an id or a hash", () => {
  const hash = "ab".repeat(32);
  const uuid = "20451141-7380-492c-9e3a-f911b0b0b826";
  const member = (n: number) =>
    `{"deviceHostname":"bench-vendor-a-switch-${n}","deviceId":"${uuid}","payloadSha256":"${hash}",` +
    `"detail":"latest snapshot is 0 min old (limit 60 min)"}`;
  const short = '  {"a":1,"b":"x"},';
  assert.deepEqual(breakable(short), [short], "a line that fits has no markup");
  const long = "    [" + [1, 2, 3, 4, 5].map(member).join(",") + "],";
  const parts = breakable(long);
  const texts = parts.filter((p): p is string => typeof p === "string");
  const hints = parts.filter((p) => typeof p !== "string");
  assert.equal(texts.join(""), long, "the text is unchanged");
  assert.ok(hints.every((h) => (h as { type: unknown }).type === "wbr"));
  assert.equal(hints.length, texts.length - 1);
  // Every printed line fits (114 characters on the first, 108 on each indented continuation)...
  texts.forEach((t, i) => assert.ok(t.length <= (i === 0 ? 114 : 108), `segment ${i}: ${t.length}`));
  // ...and no hint falls inside a hash, a UUID or a hostname.
  let at = 0;
  for (const t of texts.slice(0, -1)) {
    at += t.length;
    for (const token of [hash, uuid, "bench-vendor-a-switch-"]) {
      for (let i = long.indexOf(token); i >= 0; i = long.indexOf(token, i + 1)) {
        assert.ok(at <= i || at >= i + token.length, `break at ${at} inside ${token}`);
      }
    }
  }
  // A run longer than a printed line with no break opportunity is cut at the line's end.
  const blob = `"${"x".repeat(300)}"`;
  const cut = breakable(blob).filter((p): p is string => typeof p === "string");
  assert.equal(cut.join(""), blob);
  assert.deepEqual(cut.map((t) => t.length), [114, 108, 80]);
});

Deno.test("a report judged under rule dutlab-verdict-1 (no drift input) still verifies and renders as frozen", async () => {
  const current = await currentReportFixture();
  // The same run frozen before issue 22's verdict input: eight reasons, the old rule, no drift annex.
  const { reportSha256: _, ...draft } = current;
  const old = await sealReport({
    ...draft,
    verdict: {
      ...current.verdict!,
      rule: "dutlab-verdict-1",
      reasons: current.verdict!.reasons.filter((r) => r.input !== "configuration-drift"),
    },
    annexes: current.annexes.filter((a) => a.id !== "configuration-drift"),
  });
  assert.equal(old.verdict!.reasons.length, 8);
  assert.equal((await verifyReport(old)).ok, true);
  const html = decode(renderReportPage(old));
  assert.ok(html.includes("dutlab-verdict-1"));
  assert.ok(!html.includes("Configuration drift during the run"), "no drift row it was not judged by");
  for (const r of old.verdict!.reasons) assert.ok(html.includes(r.detail), r.detail);
  // The current fixture carries the ninth reason and names it on the page.
  assert.equal(current.verdict!.rule, "dutlab-verdict-2");
  assert.ok(decode(renderReportPage(current)).includes("Configuration drift during the run"));
});

Deno.test("the plan's vendors row: a frozen list as it was, a plan selecting by role says so", async () => {
  const row = (html: string) => {
    const plan = html.slice(html.indexOf('data-section="plan"'));
    const at = plan.indexOf('<span class="key">vendors</span>');
    assert.ok(at > 0, "the plan section has the vendors row");
    return decode(plan.slice(at, plan.indexOf("</tr>", at)).replace(/<[^>]+>/g, " ")).replace(/\s+/g, " ");
  };
  // A run frozen under catalogVersion 7 or earlier keeps its vendor list.
  const old = await reportFixture();
  assert.ok(old.plan.vendors?.length);
  assert.equal((await verifyReport(old)).ok, true);
  assert.equal(row(renderReportPage(old)).trim(), `vendors ${old.plan.vendors!.join(", ")}`);
  // Since catalogVersion 8 a plan names no vendor: devices take part by role.
  const current = await currentReportFixture();
  assert.equal(current.plan.vendors, undefined);
  assert.equal((await verifyReport(current)).ok, true);
  assert.equal(row(renderReportPage(current)).trim(), "vendors any (devices selected by role)");
});
