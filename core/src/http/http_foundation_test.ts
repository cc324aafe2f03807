import assert from "node:assert/strict";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";
// deno-lint-ignore no-import-prefix -- test-only: kept out of deno.json and deno.lock (tests/gate/lockfiles_test.ts)
import { Validator } from "npm:@seriousme/openapi-schema-validator@2.11.0";

const ADMIN_ROUTES: Array<[string, string]> = [
  ["GET", "/api/admin/dut/devices"],
  ["POST", "/api/admin/dut/devices"],
  ["PATCH", "/api/admin/dut/devices/00000000-0000-4000-8000-000000000000"],
  ["DELETE", "/api/admin/dut/devices/00000000-0000-4000-8000-000000000000"],
  ["POST", "/api/admin/dut/devices/00000000-0000-4000-8000-000000000000/test"],
  ["POST", "/api/admin/dut/devices/00000000-0000-4000-8000-000000000000/snapshot"],
  ["GET", "/api/admin/dut/snapshots"],
  ["POST", "/api/test-runs/preflight"],
  ["GET", "/api/test-runs/plans"],
  ["POST", "/api/test-runs"],
  ["GET", "/api/test-runs"],
  ["GET", "/api/test-runs/00000000-0000-4000-8000-000000000000"],
  ["POST", "/api/test-runs/00000000-0000-4000-8000-000000000000/finish"],
  ["GET", "/api/test-runs/00000000-0000-4000-8000-000000000000/report.json"],
  ["POST", "/api/test-runs/00000000-0000-4000-8000-000000000000/share"],
  ["GET", "/runs/00000000-0000-4000-8000-000000000000/report"],
];

dbTest("every admin route answers 401 problem+json without or with a wrong token", async (db) => {
  const { app } = await testServices(db, fixtureModules());
  for (const [method, path] of ADMIN_ROUTES) {
    for (
      const headers of [{}, { authorization: "Bearer wrong-token-wrong-token-wrong" }, {
        authorization: "Basic eDp5",
      }]
    ) {
      const res = await app.request(path, { method, headers: headers as Record<string, string> });
      assert.equal(res.status, 401, `${method} ${path}`);
      assert.equal(res.headers.get("content-type"), "application/problem+json");
      assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer/);
      const body = await res.json();
      assert.equal(body.status, 401);
      assert.equal(body.type, "urn:dutlab:problem:unauthorized");
    }
  }
});

dbTest("health, readiness and metrics need no token and leak nothing", async (db) => {
  const { app } = await testServices(db, fixtureModules());
  assert.deepEqual(await (await app.request("/healthz")).json(), { status: "ok" });
  const ready = await app.request("/readyz");
  assert.equal(ready.status, 200);
  assert.equal((await ready.json()).status, "ready");
  const m = await app.request("/metrics");
  assert.equal(m.status, 200);
  assert.match(await m.text(), /dutlab_poll_lock_held/);
});

dbTest("unknown routes, malformed JSON and oversize bodies get 4xx problem+json", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules(), { DUT_BODY_LIMIT_BYTES: "2048" });
  const nf = await app.request("/nope", { headers: auth });
  assert.equal(nf.status, 404);
  assert.equal(nf.headers.get("content-type"), "application/problem+json");
  const bad = await app.request("/api/admin/dut/devices", {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: '{"hostname": "x",',
  });
  assert.equal(bad.status, 400);
  assert.equal(bad.headers.get("content-type"), "application/problem+json");
  assert.equal((await bad.json()).type, "urn:dutlab:problem:malformed-json");
  const big = await app.request("/api/admin/dut/devices", {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ notes: "x".repeat(5000) }),
  });
  assert.equal(big.status, 413);
  assert.equal(big.headers.get("content-type"), "application/problem+json");
  const arr = await app.request("/api/admin/dut/devices", jsonReq("POST", [1, 2], auth));
  assert.equal(arr.status, 400);
  const q = await app.request("/api/admin/dut/snapshots?limit=5000", { headers: auth });
  assert.equal(q.status, 400);
  const qb = await q.json();
  assert.deepEqual(qb.errors.map((e: { field: string }) => e.field), ["query.limit"]);
});

dbTest("validation problems name every offending field", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const res = await app.request(
    "/api/admin/dut/devices",
    jsonReq(
      "POST",
      { hostname: "fw1", vendor: "fixture-fw", baseUrl: "http://x", pollIntervalSeconds: 10 },
      auth,
    ),
  );
  assert.equal(res.status, 400);
  const body = await res.json();
  const fields = body.errors.map((e: { field: string }) => e.field).sort();
  assert.deepEqual(fields, ["baseUrl", "password", "pollIntervalSeconds", "username"]);
  assert.match(JSON.stringify(body.errors), /at least 30/);
});

dbTest("CORS is off by default and allows only configured origins", async (db) => {
  const off = await testServices(db, fixtureModules());
  const r1 = await off.app.request("/healthz", { headers: { origin: "https://dash.example" } });
  assert.equal(r1.headers.get("access-control-allow-origin"), null);
  const on = await testServices(db, fixtureModules(), { DUT_CORS_ORIGINS: "https://dash.example" });
  const r2 = await on.app.request("/api/admin/dut/devices", {
    method: "OPTIONS",
    headers: { origin: "https://dash.example", "access-control-request-method": "GET" },
  });
  assert.equal(r2.headers.get("access-control-allow-origin"), "https://dash.example");
  const r3 = await on.app.request("/healthz", { headers: { origin: "https://evil.example" } });
  assert.notEqual(r3.headers.get("access-control-allow-origin"), "https://evil.example");
});

dbTest("the OpenAPI document is OpenAPI 3.1 and describes every route", async (db) => {
  const { app } = await testServices(db, fixtureModules());
  const res = await app.request("/api/openapi.json");
  assert.equal(res.status, 200);
  const doc = await res.json();
  assert.equal(doc.openapi, "3.1.0");
  const validator = new Validator();
  const result = await validator.validate(doc);
  assert.equal(result.valid, true, JSON.stringify(result.errors, null, 1)?.slice(0, 2000));
  assert.equal(validator.version, "3.1");
  for (
    const p of [
      "/api/admin/dut/devices",
      "/api/admin/dut/devices/{id}",
      "/api/admin/dut/snapshots",
      "/api/test-runs/preflight",
    ]
  ) {
    assert.ok(doc.paths[p], `documents ${p}`);
  }
  assert.equal(doc.components.securitySchemes.adminBearer.scheme, "bearer");
  assert.ok(!JSON.stringify(doc).includes("fixture-pass"));
});
