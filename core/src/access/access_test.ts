/**
 * Issue 21 point 4: scoped tokens (admin, operator, viewer) stored hashed, the audit trail, refused attempts
 * counted, and `deno task token`.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, TEST_ADMIN_TOKEN, TEST_CRED_KEY, testServices } from "../../harness/app.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { openDatabase } from "../db/open.ts";
import { TokenStore } from "./tokens.ts";

type Auth = Record<string, string>;
const bearer = (t: string): Auth => ({ authorization: `Bearer ${t}` });

async function token(app: OpenAPIHono, admin: Auth, name: string, role: string): Promise<string> {
  const r = await app.request("/api/admin/tokens", jsonReq("POST", { name, role }, admin));
  const b = await r.json();
  assert.equal(r.status, 201, JSON.stringify(b));
  assert.match(b.token, /^dut_[A-Za-z0-9_-]{43}$/);
  return b.token;
}

/** Every operation of the served document, with its path parameters filled in. */
async function operations(app: OpenAPIHono) {
  const doc = await (await app.request("/api/openapi.json")).json();
  const ops: Array<{ method: string; path: string; id: string; template: string; auth: boolean }> = [];
  for (const [template, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
    for (
      const [method, op] of Object.entries(item as Record<string, { operationId: string; security?: [] }>)
    ) {
      const path = template.replace(
        /\{[^}]+\}/g,
        (p) => p === "{id}" && template.includes("snapshots") ? "1" : crypto.randomUUID(),
      );
      ops.push({
        method: method.toUpperCase(),
        path,
        template,
        id: op.operationId,
        auth: !(op.security && op.security.length === 0),
      });
    }
  }
  return ops;
}

dbTest(
  "a viewer reads everything and changes nothing; an operator runs but cannot change devices",
  async (db) => {
    const { app, auth, svc } = await testServices(db, fixtureModules());
    const viewer = bearer(await token(app, auth, "dashboard", "viewer"));
    const operator = bearer(await token(app, auth, "ci-runner", "operator"));
    const ops = await operations(app);
    const mutating = ops.filter((o) => o.method !== "GET" && o.auth);
    assert.ok(mutating.length >= 10, `${mutating.length} mutating operations`);
    for (const o of mutating) {
      const r = await app.request(o.path, jsonReq(o.method, {}, viewer));
      if (o.id === "compareRuns") {
        // A POST that only reads (access.ts READ_POSTS): allowed, so the empty body is what is refused.
        assert.equal(r.status, 400, `viewer ${o.method} ${o.template}`);
        continue;
      }
      if (o.id === "replayRunReport") {
        // A POST that only reads (READ_POSTS): allowed, so the placeholder run is what is not found.
        assert.equal(r.status, 404, `viewer ${o.method} ${o.template}`);
        continue;
      }
      assert.equal(r.status, 403, `viewer ${o.method} ${o.template}`);
      assert.equal(r.headers.get("content-type"), "application/problem+json");
    }
    for (const o of ops.filter((o) => o.method === "GET" && o.template.startsWith("/api/"))) {
      const r = await app.request(o.path, { headers: viewer });
      const adminOnly = /^\/api\/admin\/(tokens|audit|backup|dut\/snapshot-prunes|webhooks)/.test(o.template);
      if (adminOnly) assert.equal(r.status, 403, `viewer GET ${o.template}`);
      // Allowed; the comparison needs `ids`, so their absence is what is refused.
      else if (o.id === "getRunComparison") assert.equal(r.status, 400, `viewer GET ${o.template}`);
      else assert.ok([200, 404].includes(r.status), `viewer GET ${o.template}: ${r.status}`);
    }
    assert.equal((await app.request("/api/admin/dut/devices", { headers: viewer })).status, 200);

    const operatorAllowed = new Set([
      "snapshotDevice",
      "testDeviceConnection",
      "runPreflight",
      "startRun",
      "finishRun",
      "shareRunReport",
      "compareRuns",
      "replayRunReport",
      "createReservation",
      "renewReservation",
      "releaseReservation",
    ]);
    for (const o of mutating) {
      const r = await app.request(o.path, jsonReq(o.method, {}, operator));
      if (operatorAllowed.has(o.id)) assert.notEqual(r.status, 403, `operator ${o.id}`);
      else assert.equal(r.status, 403, `operator ${o.id}`);
    }
    const refused = (await (await app.request("/metrics")).text()).match(
      /^dutlab_auth_refused_total\{reason="forbidden"\} (\d+)/m,
    );
    // compareRuns and replayRunReport are allowed to both roles.
    assert.ok(refused && Number(refused[1]) >= mutating.length * 2 - operatorAllowed.size - 2);
    assert.ok(svc.tokens);
  },
);

dbTest(
  "the audit log records every change with the token's name, refusals included, never a secret",
  async (db) => {
    const { app, auth } = await testServices(db, fixtureModules());
    const opToken = await token(app, auth, "ops-bot", "operator");
    const operator = bearer(opToken);
    const viewer = bearer(await token(app, auth, "wallboard", "viewer"));
    const created = await app.request(
      "/api/admin/dut/devices",
      jsonReq("POST", {
        hostname: "audited",
        vendor: "fixture-fw",
        baseUrl: "https://127.0.0.1:9",
        username: "admin",
        password: "s3cret-device-pass",
      }, auth),
    );
    const { deviceId } = await created.json();
    await app.request(`/api/admin/dut/devices/${deviceId}`, jsonReq("PATCH", { notes: "n" }, operator)); // 403
    await app.request(`/api/admin/dut/devices/${deviceId}`, jsonReq("DELETE", undefined, viewer)); // 403
    await app.request(
      "/api/test-runs/preflight",
      jsonReq("POST", { planIdentifier: "fixture-plan" }, operator),
    );
    await app.request("/api/admin/dut/devices", jsonReq("POST", { hostname: "x" }, bearer("dut_wrong"))); // 401
    await app.request(
      `/api/admin/dut/devices/${deviceId}`,
      jsonReq("PATCH", { pollIntervalSeconds: 5 }, auth),
    ); // 400
    await app.request(`/api/admin/dut/devices/${deviceId}`, jsonReq("DELETE", undefined, auth));
    const rid = "req-from-dashboard-1";
    await app.request("/api/admin/tokens/ops-bot", {
      method: "DELETE",
      headers: { ...auth, "x-request-id": rid },
    });
    assert.equal((await app.request("/api/admin/dut/devices", { headers: operator })).status, 401, "revoked");

    const page = await (await app.request("/api/admin/audit?limit=100", { headers: auth })).json();
    const rows = page.entries.reverse().map((e: Record<string, unknown>) =>
      [e.tokenName, e.role, e.method, e.route, e.targetId, e.status, e.outcome].join(" ")
    );
    assert.deepEqual(rows.slice(2), [
      `bootstrap-admin admin POST /api/admin/dut/devices ${deviceId} 201 success`,
      `ops-bot operator PATCH /api/admin/dut/devices/:id ${deviceId} 403 refused`,
      `wallboard viewer DELETE /api/admin/dut/devices/:id ${deviceId} 403 refused`,
      `ops-bot operator POST /api/test-runs/preflight  422 failed`,
      `  POST /api/admin/dut/devices  401 refused`,
      `bootstrap-admin admin PATCH /api/admin/dut/devices/:id ${deviceId} 400 failed`,
      `bootstrap-admin admin DELETE /api/admin/dut/devices/:id ${deviceId} 200 success`,
      `bootstrap-admin admin DELETE /api/admin/tokens/:id ops-bot 200 success`,
    ]);
    assert.deepEqual(rows.slice(0, 2).map((r: string) => r.split(" ").slice(0, 4).join(" ")), [
      "bootstrap-admin admin POST /api/admin/tokens",
      "bootstrap-admin admin POST /api/admin/tokens",
    ]);
    assert.equal(page.entries.at(-1).requestId, rid);
    assert.match(page.entries[0].requestId, /^[0-9a-f-]{36}$/);
    const all = JSON.stringify(page) +
      JSON.stringify(await db.kysely.selectFrom("audit_log").selectAll().execute());
    for (const secret of [TEST_ADMIN_TOKEN, opToken, "s3cret-device-pass", "dut_wrong"]) {
      assert.ok(!all.includes(secret));
    }
    const stored = await db.kysely.selectFrom("api_tokens").selectAll().execute();
    assert.ok(!JSON.stringify(stored).includes(opToken), "only the hash is stored");

    // Filters and paging.
    const f =
      await (await app.request("/api/admin/audit?tokenName=ops-bot&outcome=refused", { headers: auth }))
        .json();
    assert.deepEqual(f.entries.map((e: { method: string }) => e.method), ["PATCH"]);
    const p1 = await (await app.request("/api/admin/audit?limit=4", { headers: auth })).json();
    const p2 =
      await (await app.request(`/api/admin/audit?limit=4&cursor=${p1.nextCursor}`, { headers: auth })).json();
    assert.equal(p1.entries.length + p2.entries.length, 8);
    assert.ok(Number(p2.entries[0].id) < Number(p1.entries[3].id));
    assert.equal((await app.request("/api/admin/audit?outcome=maybe", { headers: auth })).status, 400);
    const listed = await (await app.request("/api/admin/tokens", { headers: auth })).json();
    assert.deepEqual(
      listed.tokens.map((t: { name: string; revokedAt: string | null }) => [t.name, !!t.revokedAt]),
      [
        ["ops-bot", true],
        ["wallboard", false],
      ],
    );
    assert.ok(!JSON.stringify(listed).includes("dut_"));

    // Append-only.
    await assert.rejects(
      sql`update audit_log set token_name = 'someone-else'`.execute(db.kysely),
      /append-only/,
    );
    await assert.rejects(sql`delete from audit_log`.execute(db.kysely), /append-only/);
  },
);

Deno.test({
  name: "deno task token create | list | revoke on the embedded database",
  async fn() {
    const dir = await Deno.makeTempDir();
    const env = {
      DUT_DATA_DIR: dir,
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      DUT_CRED_ENC_KEY: TEST_CRED_KEY,
      DUT_LOG_LEVEL: "error",
    };
    const run = async (...args: string[]) => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "tools/token.ts", ...args],
        cwd: new URL("../../..", import.meta.url),
        env: { ...env, DATABASE_URL: "" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      return {
        code: out.code,
        out: new TextDecoder().decode(out.stdout),
        err: new TextDecoder().decode(out.stderr),
      };
    };
    try {
      const bad = await run("create", "x", "--role", "god");
      assert.equal(bad.code, 2);
      assert.match(bad.err, /--role must be admin, operator or viewer/);
      const c = await run("create", "grafana", "--role", "viewer");
      assert.equal(c.code, 0, c.err);
      const secret = c.out.trim();
      assert.match(secret, /^dut_/);
      const l = await run("list");
      assert.match(l.out, /\tgrafana\tviewer\t.*\tactive/);
      assert.ok(!l.out.includes(secret));
      const dbase = await openDatabase({ dataDir: `${dir}/pglite` });
      try {
        assert.deepEqual(await new TokenStore(dbase.kysely, TEST_ADMIN_TOKEN).resolve(secret), {
          name: "grafana",
          role: "viewer",
        });
      } finally {
        await dbase.close();
      }
      const r = await run("revoke", "grafana");
      assert.equal(r.code, 0, r.err);
      assert.match((await run("list")).out, /grafana\tviewer\t.*\trevoked /);
      assert.equal((await run("revoke", "nobody")).code, 1);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
