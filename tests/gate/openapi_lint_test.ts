/**
 * Issue 21 point 1: the served OpenAPI document passes Redocly CLI's recommended ruleset with zero errors and
 * zero warnings (run through npm, the environment inherited), names every route of the app with an
 * operationId, carries no secret, and the API reference page is served by the service itself.
 */
import assert from "node:assert/strict";
import { dbTest } from "@dutlab/core/testing";
import { TEST_ADMIN_TOKEN, testServices } from "../../core/harness/app.ts";
import { fixtureModules } from "@dutlab/core/testing";

/** The pinned Redocly CLI (docs/http-api.md "OpenAPI document and reference page"). */
export const REDOCLY = "@redocly/cli@2.77.0";

dbTest("Redocly recommended lint: zero errors, zero warnings", async (db) => {
  const { app } = await testServices(db, fixtureModules());
  const doc = await (await app.request("http://127.0.0.1:8080/api/openapi.json")).text();
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/openapi.json`, doc);
    await Deno.writeTextFile(`${dir}/redocly.yaml`, "extends:\n  - recommended\n");
    const out = await new Deno.Command("npx", {
      args: ["-y", REDOCLY, "lint", "--format=json", "openapi.json"],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    const report = JSON.parse(stdout.slice(stdout.indexOf("{")));
    const problems = report.problems.map((p: { ruleId: string; message: string; location: unknown }) =>
      `${p.ruleId}: ${p.message} ${JSON.stringify(p.location)}`
    );
    assert.deepEqual(problems, [], "Redocly problems");
    assert.equal(report.totals.errors, 0);
    assert.equal(report.totals.warnings, 0);
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

dbTest("every route is documented with an operationId, tags, servers and a licence", async (db) => {
  const { app } = await testServices(db, fixtureModules(), { DUT_PUBLIC_URL: "https://dutlab.lab.test" });
  const doc = await (await app.request("/api/openapi.json")).json();
  assert.deepEqual(doc.servers.map((s: { url: string }) => s.url), ["https://dutlab.lab.test"]);
  assert.ok(doc.info.license.name && doc.info.license.identifier);
  const ids = new Set<string>();
  const routes = new Set(
    app.routes.filter((r) => r.method !== "ALL" && !r.path.includes("*")).map((r) => `${r.method} ${r.path}`),
  );
  assert.ok(routes.size >= 24, `${routes.size} routes`);
  for (const route of routes) {
    const [method, honoPath] = route.split(" ");
    assert.ok(method && honoPath, `route "${route}" is "METHOD path"`);
    const r = { method };
    const path = honoPath.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
    const op = doc.paths[path]?.[r.method.toLowerCase()];
    assert.ok(op, `${r.method} ${path} is documented`);
    assert.match(op.operationId, /^[a-z][A-Za-z0-9]+$/);
    assert.ok(!ids.has(op.operationId), `operationId ${op.operationId} is unique`);
    ids.add(op.operationId);
    assert.ok(op.tags?.length, `${op.operationId} has a tag`);
    assert.ok(op.summary, `${op.operationId} has a summary`);
  }
  for (const p of ["/healthz", "/readyz", "/metrics", "/runs/{executionId}/report", "/api/docs"]) {
    assert.ok(doc.paths[p]?.get, `documents ${p}`);
  }
  const text = JSON.stringify(doc);
  assert.ok(!text.includes(TEST_ADMIN_TOKEN));
  assert.ok(!/"(password|token)"\s*:\s*"[^"]+"/i.test(text), "no credential in an example");
});

dbTest("the API reference page is self-hosted (no CDN)", async (db) => {
  const { app } = await testServices(db, fixtureModules());
  const page = await app.request("/api/docs");
  assert.equal(page.status, 200);
  const html = await page.text();
  assert.ok(!/https?:\/\//.test(html), "no external URL in the page");
  assert.match(page.headers.get("content-security-policy") ?? "", /script-src 'self'/);
  const srcs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  assert.deepEqual(srcs.sort(), [
    "/api/docs/assets/init.js",
    "/api/docs/assets/swagger-ui-bundle.js",
    "/api/docs/assets/swagger-ui.css",
  ]);
  for (const s of srcs) {
    const r = await app.request(s);
    assert.equal(r.status, 200, s);
    assert.ok((await r.text()).length > 100, s);
  }
  const bundle = await (await app.request("/api/docs/assets/swagger-ui-bundle.js")).text();
  assert.ok(bundle.includes("SwaggerUIBundle"));
  assert.equal((await app.request("/api/docs/assets/other.js")).status, 404);
});
