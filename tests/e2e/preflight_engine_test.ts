/**
 * The pre-flight engine and the plan catalog over HTTP: drop-in checks from fixture modules, checks that
 * break the contract, request validation, and the catalog as the API serves it.
 */
import assert from "node:assert/strict";
import { type AdapterFacts, defineCheck } from "@dutlab/core";
import { checkApplies, evaluateCheck } from "../../core/harness/core.ts";
import { checkFixture } from "@dutlab/core/testing";
import { dbTest } from "../../core/harness/db.ts";
import { jsonReq, testServices } from "../../core/harness/app.ts";
import type { LoadedModules } from "@dutlab/core/runtime";
import { fixtureModules, startFixtureDevice } from "@dutlab/core/testing";
import { runPreflight } from "../../core/harness/core.ts";
import type { PreflightResult } from "../../core/harness/core.ts";
import { buildRegistry } from "../../core/harness/core.ts";
import { modules } from "../../modules.gen.ts";
import catalogPlugin from "@dutlab/plugin-plan-catalog";

/** A check that is in no catalog: it reads the fixture vendor's decrypt rules through the adapter's facts. */
const dropIn = defineCheck({
  id: "fixture-decrypt-rules",
  coreVersion: "^1.0.0",
  description: "Fixture: decrypt rules present when the plan decrypts",
  label: "decrypt_policy",
  appliesTo: (d, plan) => d.vendor === "fixture-fw" && plan.tlsDecrypt === "on",
  evaluate: (s, _plan, { facts }) => {
    const n = facts.decryptRuleCount!(s.payload);
    return { pass: n > 0, detail: `${n} decrypt rule(s)` };
  },
});

const mod = (check: unknown, id = (check as { id: string }).id) => ({
  name: `@dutlab/check-${id}`,
  version: "0.0.1",
  module: check,
});

/** The fixture lab: one fixture firewall registered and polled once. */
async function fixtureLab(db: Parameters<Parameters<typeof dbTest>[1]>[0], mods: LoadedModules) {
  const { app, auth, svc } = await testServices(db, mods);
  const dev = await startFixtureDevice();
  const reg = await app.request(
    "/api/admin/dut/devices",
    jsonReq("POST", {
      hostname: "fx-1",
      vendor: "fixture-fw",
      baseUrl: dev.sim.url,
      username: "admin",
      password: dev.state.password,
      tlsVerifyMode: "self-signed",
    }, auth),
  );
  assert.equal(reg.status, 201);
  const { deviceId } = await reg.json();
  const snapshot = async () => {
    const r = await app.request(
      `/api/admin/dut/devices/${deviceId}/snapshot`,
      jsonReq("POST", undefined, auth),
    );
    assert.equal((await r.json()).ok, true);
  };
  await snapshot();
  const preflight = async (planIdentifier = "fixture-plan") => {
    const res = await app.request("/api/test-runs/preflight", jsonReq("POST", { planIdentifier }, auth));
    return { status: res.status, body: await res.json() as PreflightResult };
  };
  return {
    app,
    auth,
    svc,
    dev,
    deviceId,
    snapshot,
    preflight,
    [Symbol.asyncDispose]: () => dev.sim.close(),
  };
}

dbTest("a check added from a fixture module is evaluated with no core change", async (db) => {
  await using base = await fixtureLab(db, fixtureModules());
  const before = await base.preflight();
  assert.deepEqual(before.body.checks.map((c) => c.checkId), ["fixture-ntp"]);
  await db.kysely.deleteFrom("devices").execute();

  // The same core, one more module in the list: the new check runs beside the fixture's own.
  await using l = await fixtureLab(db, fixtureModules({ checks: [mod(dropIn)] }));
  const r = await l.preflight();
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.checks.map((c) => [c.checkId, c.status, c.detail]), [
    ["fixture-ntp", "pass", "1 server(s)"],
    ["fixture-decrypt-rules", "pass", "1 decrypt rule(s)"],
  ]);
  assert.equal(r.body.summary, "2/2 checks passed — ready for fixture-plan");

  l.dev.state.decryptRules = 0;
  await l.snapshot();
  const bad = await l.preflight();
  assert.equal(bad.status, 422);
  const c = bad.body.checks.find((c) => c.checkId === "fixture-decrypt-rules")!;
  assert.deepEqual([c.status, c.detail, c.deviceHostname, c.vendor], [
    "fail",
    "0 decrypt rule(s)",
    "fx-1",
    "fixture-fw",
  ]);
  assert.equal(bad.body.summary, "1/2 checks passed — not ready for fixture-plan: 1 failed, 0 skipped");
});

dbTest("checks that break the contract give error results and cannot spoil other checks", async (db) => {
  const broken = [
    defineCheck({
      ...dropIn,
      id: "bad-applies",
      appliesTo: () => {
        throw new Error("device.role is undefined");
      },
    }),
    // deno-lint-ignore require-await
    { ...dropIn, id: "bad-async", label: "ntp_config", evaluate: async () => ({ pass: true, detail: "ok" }) },
    { ...dropIn, id: "bad-shape", label: "ntp_config", evaluate: () => ({ pass: "yes", detail: 1 }) },
    defineCheck({
      ...dropIn,
      id: "bad-mutates",
      label: "ntp_config",
      evaluate: (s) => {
        (s.payload as { servers: string[] }).servers.length = 0;
        return { pass: true, detail: "emptied the servers" };
      },
    }),
  ];
  // fixture-ntp comes after the mutating check and must still see the stored servers.
  const mods = fixtureModules();
  mods.checks = [...broken.map((b) => mod(b)), ...mods.checks];
  await using l = await fixtureLab(db, mods);
  const r = await l.preflight();
  assert.equal(r.status, 422);
  const by = Object.fromEntries(r.body.checks.map((c) => [c.checkId, c]));
  assert.equal(by["bad-applies"]!.status, "error");
  assert.match(
    by["bad-applies"]!.detail,
    /^check error: appliesTo failed for this device \(device\.role is undefined\)$/,
  );
  assert.ok(by["bad-applies"]!.evidence, "it cites the snapshot of its label when there is one");
  for (const id of ["bad-async", "bad-shape"]) {
    assert.equal(by[id]!.status, "error", id);
    assert.equal(
      by[id]!.detail,
      "check error: evaluate returned no {pass: boolean, detail: string} (checks are synchronous)",
    );
  }
  assert.equal(by["bad-mutates"]!.status, "error");
  assert.match(
    by["bad-mutates"]!.detail,
    /^check error: could not evaluate the ntp_config payload \(.*read.only/i,
  );
  assert.deepEqual([by["fixture-ntp"]!.status, by["fixture-ntp"]!.detail], ["pass", "1 server(s)"]);
  assert.equal(r.body.checksFailed, 4);
  assert.equal(
    r.body.summary,
    "1/5 checks passed — not ready for fixture-plan: 4 failed (4 could not be evaluated), 0 skipped",
  );
});

dbTest("pre-flight answers 404 for an unknown plan and 400 for a bad body", async (db) => {
  const { app, auth } = await testServices(db, modules);
  const nf = await app.request(
    "/api/test-runs/preflight",
    jsonReq("POST", { planIdentifier: "ngfw-nope" }, auth),
  );
  assert.equal(nf.status, 404);
  assert.equal(nf.headers.get("content-type"), "application/problem+json");
  const p = await nf.json();
  assert.equal(p.type, "urn:dutlab:problem:not-found");
  assert.equal(
    p.detail,
    'No plan with identifier "ngfw-nope" (known plans: ngfw-throughput-decrypt-on, ngfw-throughput-decrypt-off, ' +
      "ngfw-throughput-decrypt-on-server-health)",
  );
  const bodies: Array<[unknown, string[]]> = [
    [{}, ["planIdentifier"]],
    [{ planIdentifier: "" }, ["planIdentifier"]],
    [{ planIdentifier: "   " }, ["planIdentifier"]],
    [{ planIdentifier: 42 }, ["planIdentifier"]],
    [{ planIdentifier: "ngfw-throughput-decrypt-on", force: true }, ["body"]],
    [["ngfw-throughput-decrypt-on"], ["body"]],
  ];
  for (const [body, fields] of bodies) {
    const res = await app.request("/api/test-runs/preflight", jsonReq("POST", body, auth));
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.headers.get("content-type"), "application/problem+json");
    const prob = await res.json();
    assert.equal(prob.type, "urn:dutlab:problem:validation", JSON.stringify(body));
    assert.deepEqual(prob.errors.map((e: { field: string }) => e.field), fields, JSON.stringify(body));
  }
  const malformed = await app.request("/api/test-runs/preflight", {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: '{"planIdentifier":',
  });
  assert.equal(malformed.status, 400);
  assert.equal((await malformed.json()).type, "urn:dutlab:problem:malformed-json");
});

dbTest("GET /api/test-runs/plans serves the catalog of the plan-catalog plugin", async (db) => {
  const { app, auth } = await testServices(db, modules);
  const res = await app.request("/api/test-runs/plans", { headers: auth });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.deepEqual(body, JSON.parse(JSON.stringify(catalogPlugin.planCatalog)));
  assert.ok(body.catalogVersion >= 8, "plans select by role and capability since catalogVersion 8");
  assert.deepEqual(body.plans.map((p: { identifier: string }) => p.identifier), [
    "ngfw-throughput-decrypt-on",
    "ngfw-throughput-decrypt-off",
    "ngfw-throughput-decrypt-on-server-health",
  ]);
  assert.equal((await app.request("/api/test-runs/plans")).status, 401);
});

Deno.test("every label a plan depends on is collected by an adapter of that role", () => {
  const registry = buildRegistry(modules);
  for (const p of registry.planCatalog.plans) {
    for (const d of p.dependsOn ?? []) {
      const adapters = [...registry.adapters.values()].map((a) => a.adapter)
        .filter((a) => a.deviceRoles.includes(d.deviceRole));
      for (const label of d.labels) {
        assert.ok(
          adapters.some((a) => a.labels.includes(label)),
          `${p.identifier}: no ${d.deviceRole} adapter collects ${label}, so its drift would never count`,
        );
      }
    }
  }
});

Deno.test("every plan involves only vendors with an adapter and roles those adapters take", () => {
  const registry = buildRegistry(modules);
  const available = registry.vendors.filter((v) => v.available).map((v) => v.key);
  const roles = new Set([...registry.adapters.values()].flatMap((a) => a.adapter.deviceRoles));
  for (const p of registry.planCatalog.plans) {
    // A plan narrows to vendors only when it must; the catalog's plans select by role and capability.
    for (const v of p.vendors ?? []) assert.ok(available.includes(v), `${p.identifier}: vendor ${v}`);
    for (const r of p.deviceRoles) assert.ok(roles.has(r), `${p.identifier}: role ${r}`);
    // Every enabled vendor the plan selects is reached by at least one check of the catalog.
    for (const v of p.vendors ?? available) {
      const adapter = registry.adapters.get(v)?.adapter;
      if (!adapter?.deviceRoles.some((r) => p.deviceRoles.includes(r))) continue;
      const device = { id: "d", hostname: "h", vendor: v, deviceRole: null };
      assert.ok(
        registry.checks.some((c) => checkApplies(c.check, device, p, adapter)),
        `${p.identifier}: ${v} unchecked`,
      );
    }
  }
});

dbTest("one evaluation time for the whole run: ranAt and every check see the injected now", async (db) => {
  await using _lab = await fixtureLab(db, fixtureModules());
  const fresh = defineCheck({
    ...dropIn,
    id: "fixture-age",
    label: "system_info",
    appliesTo: () => true,
    evaluate: (s, _p, { now }) => ({ pass: true, detail: String(now.getTime() - s.collectedAt.getTime()) }),
  });
  const registry = buildRegistry(fixtureModules({ checks: [mod(fresh)] }));
  const now = new Date(Date.now() + 3_600_000);
  const r = await runPreflight(db.kysely, registry, registry.plan("fixture-plan")!, now);
  assert.equal(r.ranAt, now.toISOString());
  const age = r.checks.find((c) => c.checkId === "fixture-age")!;
  assert.equal(Number(age.detail), now.getTime() - Date.parse(age.evidence!.collectedAt));
});

Deno.test("the engine, not the check, refuses an evaluation whose facts lack one the check needs", () => {
  const registry = buildRegistry(modules);
  const needing = registry.checks.map((c) => c.check).filter((c) => c.needs?.length);
  // The three firewall checks whose own guards said this before the engine did, among the others.
  for (const id of ["ngfw-ha-state-sane", "ngfw-deploy-clean", "ntp-source-configured"]) {
    assert.ok(needing.some((c) => c.id === id), id);
  }
  for (const check of needing) {
    const fact = check.needs![0]!;
    let calls = 0;
    // The adapter offers every needed fact (so the check applies), but the evaluation is handed none.
    const offered = Object.fromEntries(check.needs!.map((f) => [f, () => calls++])) as AdapterFacts;
    const fx = checkFixture(check, {
      adapters: [{
        vendorKey: "vendor-x",
        labels: [check.label, ...(check.alsoReads ?? [])],
        deviceRoles: ["ngfw"],
        facts: offered,
      }],
    });
    const snapshot = fx.snapshot("vendor-x", {});
    const adapter = fx.adapter("vendor-x");
    const r = evaluateCheck(
      check,
      fx.device("vendor-x"),
      fx.plan,
      snapshot,
      { now: fx.now, facts: {} },
      adapter,
    );
    assert.equal(r?.status, "error", check.id);
    assert.equal(r?.pass, false);
    assert.equal(
      r?.detail,
      `check error: could not evaluate the ${check.label} payload (vendor vendor-x offers no ${fact} reading)`,
    );
    assert.equal(r?.evidence?.snapshotId, snapshot.id, "the error still cites the snapshot");
    assert.equal(calls, 0, "the check was not evaluated");
    // Handed the facts, the same check is evaluated (whatever it makes of this stub reading).
    const ok = evaluateCheck(
      check,
      fx.device("vendor-x"),
      fx.plan,
      snapshot,
      { now: fx.now, facts: offered },
      adapter,
    );
    assert.doesNotMatch(ok?.detail ?? "", /offers no/, check.id);
  }
});
