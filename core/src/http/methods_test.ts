/**
 * Issue 46 point 3: literal routes win over the `/{id}` routes that would capture their segment, share-link
 * routes route methods before judging the link, a sent bearer token is judged on its own, and the reference
 * page's assets are served as documented.
 */
import assert from "node:assert/strict";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";

const ID = "00000000-0000-4000-8000-000000000000";

dbTest("a literal route answers its own Allow and 405, never its /{id} sibling's", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const cases: Array<[string, string, string]> = [
    ["OPTIONS", "/api/admin/dut/snapshots/prune", "POST"],
    ["GET", "/api/admin/dut/snapshots/prune", "POST"],
    ["HEAD", "/api/admin/dut/snapshots/prune", "POST"],
    ["DELETE", "/api/admin/dut/snapshots/prune", "POST"],
    ["OPTIONS", "/api/test-runs/preflight", "POST"],
    ["GET", "/api/test-runs/preflight", "POST"],
    ["PATCH", "/api/test-runs/plans", "GET, HEAD"],
    ["DELETE", "/api/test-runs/compare", "GET, HEAD, POST"],
  ];
  for (const [method, path, allow] of cases) {
    const r = await app.request(path, { method, headers: auth });
    assert.equal(r.status, 405, `${method} ${path}`);
    assert.equal(r.headers.get("allow"), allow, `${method} ${path}`);
    if (method !== "HEAD") {
      const body = await r.json();
      assert.equal(body.type, "urn:dutlab:problem:method-not-allowed");
      assert.doesNotMatch(body.detail, /snapshot with id|No run/);
    }
  }
  // The /{id} routes keep their own methods and answers.
  const other = await app.request(`/api/admin/dut/snapshots/123`, { method: "OPTIONS", headers: auth });
  assert.equal(other.headers.get("allow"), "GET, HEAD");
  assert.equal((await app.request(`/api/admin/dut/snapshots/123`, { headers: auth })).status, 404);
  assert.equal((await app.request(`/api/test-runs/${ID}`, { headers: auth })).status, 404);
  const preflight = await app.request(
    "/api/test-runs/preflight",
    jsonReq("POST", { planIdentifier: "x" }, auth),
  );
  assert.equal(preflight.status, 404, "the literal route still serves its own method");
});

dbTest("share-link routes answer 405 to other methods before judging the link", async (db) => {
  const { app } = await testServices(db, fixtureModules());
  for (const path of ["report.pdf", "evidence", "attestations"]) {
    for (const method of ["DELETE", "POST", "PUT", "PATCH"]) {
      for (const query of ["", "?exp=1&sig=x", "?exp=&sig="]) {
        const r = await app.request(`/api/test-runs/${ID}/${path}${query}`, { method });
        assert.equal(r.status, 405, `${method} …/${path}${query}`);
        assert.equal(r.headers.get("allow"), "GET, HEAD");
      }
    }
  }
  const page = await app.request(`/runs/${ID}/report?exp=1&sig=x`, { method: "DELETE" });
  assert.equal(page.status, 405);
  // TRACE, which a Request cannot carry in process: over a socket.
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.fetch);
  try {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.addr.port });
    await conn.write(new TextEncoder().encode(
      `TRACE /api/test-runs/${ID}/report.pdf?exp=1&sig=x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    ));
    const head = new TextDecoder().decode((await new Response(conn.readable).bytes()).slice(0, 400));
    assert.match(head, /^HTTP\/1\.1 405/, head);
    assert.match(head, /allow: GET, HEAD/i, head);
  } finally {
    await server.shutdown();
  }
  // GET still judges the link.
  assert.equal((await app.request(`/api/test-runs/${ID}/evidence?exp=1&sig=x`)).status, 403);
  assert.equal((await app.request(`/api/test-runs/${ID}/evidence`)).status, 401);
});

dbTest(
  "a sent bearer token is judged on its own, whatever share-link parameters come with it",
  async (db) => {
    const { app, auth } = await testServices(db, fixtureModules());
    for (
      const path of [
        `/runs/${ID}/report`,
        `/api/test-runs/${ID}/evidence`,
        `/api/test-runs/${ID}/attestations`,
      ]
    ) {
      for (const query of ["?exp=&sig=", "?exp=1&sig=bad", "?sig=", ""]) {
        const ok = await app.request(`${path}${query}`, { headers: auth });
        assert.equal(ok.status, 404, `admin bearer ${path}${query}: the unknown run, not the link`);
        const bad = await app.request(`${path}${query}`, {
          headers: { authorization: "Bearer not-a-token" },
        });
        assert.equal(bad.status, 401, `invalid bearer ${path}${query}`);
      }
      // Without a bearer token, the link decides.
      assert.equal((await app.request(`${path}?exp=&sig=`)).status, 403);
    }
  },
);

dbTest("the reference page's assets are served with the types the document names for each", async (db) => {
  const { app } = await testServices(db, fixtureModules());
  const doc = await (await app.request("/api/openapi.json")).json();
  const op = doc.paths["/api/docs/assets/{file}"].get;
  const documented = Object.keys(op.responses["200"].content);
  const files = op.parameters.find((p: { name: string }) => p.name === "file").schema.enum as string[];
  for (const file of files) {
    const r = await app.request(`/api/docs/assets/${file}`);
    const type = (r.headers.get("content-type") ?? "").split(";")[0]!;
    await r.body?.cancel();
    assert.ok(documented.includes(type), `${file}: ${type} in ${documented}`);
    assert.equal(type, file.endsWith(".css") ? "text/css" : "text/javascript", file);
  }
});
