/**
 * Issue 33 point 2: every operation that some token role is refused declares 403 with the problem schema, and
 * the document and the enforcement agree. The test walks the served document and the role table
 * (`core/src/access/tokens.ts`) together: for each operation and each role, the document's 403 is present
 * exactly when the table refuses some role, and a request with a token of each role is answered 403 exactly
 * when the table refuses that role.
 */
import assert from "node:assert/strict";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import { fixtureModules } from "@dutlab/core/testing";
import { refusedRoles, ROLES } from "../../harness/core.ts";

interface Op {
  operationId: string;
  security?: unknown[];
  responses: Record<string, { description: string; content?: Record<string, { schema: { $ref?: string } }> }>;
}

dbTest("403 is declared on every operation a role is refused, and enforced as declared", async (db) => {
  const { app, auth, svc } = await testServices(db, fixtureModules());
  try {
    const doc = await (await app.request("/api/openapi.json")).json() as {
      paths: Record<string, Record<string, Op>>;
      components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
    };
    assert.ok(doc.components.schemas.Problem?.properties?.status, "the Problem schema is a component");
    const tokens: Record<string, Record<string, string>> = {};
    for (const role of ROLES) {
      const r = await app.request("/api/admin/tokens", jsonReq("POST", { name: `t-${role}`, role }, auth));
      assert.equal(r.status, 201);
      tokens[role] = { authorization: `Bearer ${(await r.json()).token}` };
    }

    const declared: string[] = [];
    let checked = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      const template = path.replace(/\{([^}]+)\}/g, ":$1");
      for (const [method, op] of Object.entries(item)) {
        const name = `${method.toUpperCase()} ${path} (${op.operationId})`;
        const open = op.security?.length === 0;
        const refused = open ? [] : refusedRoles(method, template);
        const forbidden = op.responses["403"];
        if (refused.length > 0) {
          assert.ok(forbidden, `${name} refuses ${refused.join(", ")} but does not declare 403`);
          assert.equal(
            forbidden.content?.["application/problem+json"]?.schema.$ref,
            "#/components/schemas/Problem",
            `${name}: 403 is a problem document`,
          );
          for (const r of refused) assert.match(forbidden.description, new RegExp(`\`${r}\``), name);
          declared.push(op.operationId);
        } else if (forbidden) {
          assert.doesNotMatch(
            forbidden.description,
            /role/,
            `${name} refuses no role yet declares a role 403`,
          );
        }
        if (open || !path.startsWith("/api/")) continue;
        // Enforcement: each role's token is refused exactly when the table says so.
        const url = path.replace(
          /\{[^}]+\}/g,
          (p) => p === "{id}" && path.includes("snapshots") ? "1" : crypto.randomUUID(),
        );
        for (const role of ROLES) {
          const res = await app.request(
            url,
            method === "get" ? { headers: tokens[role] } : jsonReq(method.toUpperCase(), {}, tokens[role]),
          );
          // An allowed GET of the event stream never ends: read no body of a stream.
          const stream = res.headers.get("content-type")?.startsWith("text/event-stream");
          const body = stream ? "" : await res.text();
          if (stream) await res.body?.cancel();
          if (refused.includes(role)) {
            assert.equal(res.status, 403, `${role} ${name}: ${body}`);
            assert.equal(res.headers.get("content-type"), "application/problem+json");
            assert.equal(JSON.parse(body).type, "urn:dutlab:problem:forbidden");
          } else {
            assert.notEqual(res.status, 403, `${role} ${name} is allowed by the table: ${body}`);
          }
          checked++;
        }
      }
    }
    // The nine operations issue 33 found undeclared are among those that now declare 403.
    for (
      const id of [
        "createDevice",
        "updateDevice",
        "deleteDevice",
        "testDeviceConnection",
        "snapshotDevice",
        "runPreflight",
        "startRun",
        "finishRun",
        "shareRunReport",
      ]
    ) assert.ok(declared.includes(id), `${id} declares 403`);
    assert.ok(checked > 60, `${checked} operation × role requests`);
  } finally {
    await svc.events.close();
  }
});
