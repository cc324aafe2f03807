import assert from "node:assert/strict";
import { annexBody, jsonAnnex, licenseTexts, sealReport } from "./seal.ts";
import { verifyReport } from "./verify.ts";
import { canonicalJson, jcsSha256, sha256Hex } from "../util/hash.ts";
import { reportFixture } from "../../harness/report_fixture.ts";
import type { ReportData } from "./types.ts";

Deno.test("annex bodies are deterministic JSON laid out one item or member per line", () => {
  const value = { b: [1, { z: 1, a: 2 }], a: { y: 1, x: [2] }, "10": "ten", c: [], d: undefined };
  const body = annexBody(value);
  assert.equal(
    body,
    '{\n  "10": "ten",\n  "a": {"x":[2],"y":1},\n  "b": [\n    1,\n    {"a":2,"z":1}\n  ],\n  "c": []\n}',
  );
  assert.equal(canonicalJson(JSON.parse(body)), canonicalJson(value), "the same data as the value");
  assert.equal(annexBody({ a: 1, b: 2 }), annexBody({ b: 2, a: 1 }), "member order does not matter");
  assert.equal(annexBody([{ b: 1, a: 2 }, "x"]), '[\n  {"a":2,"b":1},\n  "x"\n]');
  assert.equal(annexBody([]), "[]");
  assert.equal(annexBody({}), "{}");
  assert.equal(annexBody("ü"), '"ü"');
});

Deno.test("an annex hashes the UTF-8 bytes of its body", async () => {
  const a = await jsonAnnex("x", "Unicode", [{ host: "fw-ü-01 ✓" }]);
  assert.equal(a.sha256, await sha256Hex(new TextEncoder().encode(a.body)));
  assert.equal(a.mediaType, "application/json");
});

Deno.test("sealing sets the plan hash and the report hash that verifyReport recomputes", async () => {
  const base = await reportFixture();
  const { reportSha256: _r, ...draft } = base;
  const stale = { ...draft, meta: { ...draft.meta, planSnapshotSha256: "0".repeat(64) } };
  const sealed: ReportData = await sealReport(stale);
  assert.equal(sealed.meta.planSnapshotSha256, await jcsSha256(base.plan));
  const { reportSha256, ...rest } = sealed;
  assert.equal(reportSha256, await jcsSha256(rest));
  assert.deepEqual(Object.keys(sealed).slice(0, 3), ["version", "generatedAt", "reportSha256"]);
  assert.equal((await verifyReport(sealed)).ok, true);
});

Deno.test("the licence carries the restrictions in English, Brazilian Portuguese and Spanish", () => {
  const l = licenseTexts("ACME-1");
  assert.equal(l.id, "ACME-1");
  assert.deepEqual(Object.keys(l.restrictions), ["en", "pt-BR", "es"]);
  for (const t of Object.values(l.restrictions)) assert.ok(t.includes("ACME-1"));
  assert.match(l.restrictions["pt-BR"], /licença/);
  assert.match(l.restrictions.es, /licencia/);
  // Without a customer the report is the lab's internal document; with one, the licence names it.
  assert.equal(l.holder, "dutlab test lab (internal use)");
  const c = licenseTexts("ACME-1", { lab: "Rack & Co Lab", customer: "ACME Networks" });
  assert.equal(c.holder, "ACME Networks");
  assert.equal(c.issuer, "Rack & Co Lab");
  assert.equal(c.licensee, "ACME Networks");
  for (const t of Object.values(c.restrictions)) {
    assert.ok(t.includes("ACME Networks") && t.includes("Rack & Co Lab"), t);
  }
});
