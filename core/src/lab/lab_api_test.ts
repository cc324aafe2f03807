// The lab as code, server side (issue 35): plan and apply routes, one transaction, generations, prune,
// adopt, rename, fingerprints under key rotation. Both backends.
import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, TEST_CRED_KEY, testServices } from "../../harness/app.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";
import { buildKeyRing } from "../runtime/services.ts";
import { reencryptCredentials } from "../devices/key_rotation.ts";
import { labJsonSchemaText } from "./file.ts";
import { sha256Hex } from "@dutlab/core";
import type { Db } from "../db/open.ts";

const CANARY = "canary-Pw-7f3e9b1c-d0d0";

const labOf = (hosts: string[], over: Record<string, unknown> = {}) => ({
  apiVersion: "dutlab/v1",
  kind: "Lab",
  metadata: { name: "lab1" },
  defaults: { vendor: "fixture-fw", credential: "admin", pollIntervalSeconds: 60, tags: ["site:a"] },
  credentials: { admin: { username: "admin", password: "env:LAB1_PASSWORD" } },
  devices: hosts.map((h) => ({ hostname: h, baseUrl: `https://${h}.lab.example:8443` })),
  ...over,
});

async function setup(db: Db) {
  const t = await testServices(db, fixtureModules());
  const post = async (path: string, body: unknown) => {
    const res = await t.app.request(path, jsonReq("POST", body, t.auth));
    const text = await res.text();
    assert.ok(!text.includes(CANARY), `the canary password is in the answer of ${path}`);
    return { status: res.status, body: JSON.parse(text) };
  };
  const plan = (lab: unknown, extra: Record<string, unknown> = {}) =>
    post("/api/admin/dut/lab/plan", { lab, secrets: { admin: CANARY }, ...extra });
  const apply = async (lab: unknown, extra: Record<string, unknown> = {}) => {
    const { force: _, ...planExtra } = extra;
    const p = await plan(lab, planExtra);
    assert.equal(p.status, 200, JSON.stringify(p.body));
    return post("/api/admin/dut/lab/apply", {
      lab,
      secrets: { admin: CANARY },
      expectedGeneration: p.body.generation,
      planHash: p.body.planHash,
      ...extra,
    });
  };
  const devices = async () =>
    (await (await t.app.request("/api/admin/dut/devices", { headers: t.auth })).json()).devices as Array<
      Record<string, unknown>
    >;
  const generation = async () =>
    Number(
      (await db.kysely.selectFrom("labs").select("generation").where("name", "=", "lab1").executeTakeFirst())
        ?.generation ?? 0,
    );
  return { ...t, post, plan, apply, devices, generation };
}

dbTest("a lab applied then planned again is clean, and a second apply changes no updatedAt", async (db) => {
  const t = await setup(db);
  const hosts = ["fw-1", "fw-2", "fw-3"];
  const first = await t.plan(labOf(hosts));
  assert.equal(first.status, 200);
  assert.deepEqual(first.body.summary, { create: 3, update: 0, remove: 0, unchanged: 0, conflict: 0 });
  assert.equal(first.body.generation, 0);
  assert.match(first.body.planHash, /^sha256:[0-9a-f]{64}$/);
  assert.deepEqual(await t.devices(), [], "a plan changes nothing");

  const r = await t.apply(labOf(hosts));
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.generation, 1);
  const after = await t.devices();
  assert.deepEqual(after.map((d) => [d.hostname, d.managedBy, d.pollIntervalSeconds, d.tags]), [
    ["fw-1", "lab1", 60, ["site:a"]],
    ["fw-2", "lab1", 60, ["site:a"]],
    ["fw-3", "lab1", 60, ["site:a"]],
  ]);
  const again = await t.plan(labOf(hosts));
  assert.deepEqual(again.body.summary, { create: 0, update: 0, remove: 0, unchanged: 3, conflict: 0 });
  assert.ok(again.body.devices.every((e: { credential: string }) => e.credential === "unchanged"));

  const second = await t.apply(labOf(hosts));
  assert.equal(second.status, 200);
  assert.equal(second.body.changed, false);
  assert.equal(second.body.generation, 1, "an apply that changes nothing keeps the generation");
  assert.deepEqual((await t.devices()).map((d) => d.updatedAt), after.map((d) => d.updatedAt));

  // One audit entry per apply, with the plan hash and counts; never the password.
  const audit = await db.kysely.selectFrom("audit_log").selectAll().where(
    "route",
    "=",
    "/api/admin/dut/lab/apply",
  )
    .execute();
  assert.equal(audit.length, 2);
  assert.match(audit[0]!.detail!, /lab lab1 apply sha256:[0-9a-f]{64} generation 0→1: 3 created, 0 updated/);
  const everything = JSON.stringify(
    (await sql`select * from audit_log`.execute(db.kysely)).rows,
    (_, v) => typeof v === "bigint" ? String(v) : v,
  );
  assert.ok(!everything.includes(CANARY));
  // The stored credential is encrypted and fingerprinted, never in plaintext.
  const rows = JSON.stringify(await db.kysely.selectFrom("devices").selectAll().execute());
  assert.ok(!rows.includes(CANARY));
});

dbTest(
  "a changed field and a changed password show as an update, the password only as changed",
  async (db) => {
    const t = await setup(db);
    await t.apply(labOf(["fw-1", "fw-2"]));
    const lab = labOf(["fw-1", "fw-2"]);
    lab.devices[1] = { ...lab.devices[1]!, baseUrl: "https://fw-2.lab.example:9443" };
    const p = await t.plan(lab);
    assert.deepEqual(p.body.devices.map((e: { action: string }) => e.action), ["unchanged", "update"]);
    assert.deepEqual(p.body.devices[1].changes, [{
      field: "baseUrl",
      old: "https://fw-2.lab.example:8443",
      new: "https://fw-2.lab.example:9443",
    }]);
    const other = await t.post("/api/admin/dut/lab/plan", { lab, secrets: { admin: "another-password" } });
    assert.deepEqual(other.body.devices.map((e: { credential: string }) => e.credential), [
      "changed",
      "changed",
    ]);
    assert.ok(!JSON.stringify(other.body).includes("another-password"));
  },
);

dbTest(
  "a server-side failure on the third of five devices leaves registry and generation as before",
  async (db) => {
    const t = await setup(db);
    await t.apply(labOf(["fw-0"]));
    const before = await t.devices();
    const gen = await t.generation();
    // A real failure of the database in the middle of the apply: a trigger refusing the third new device.
    await sql`create function refuse_fw3() returns trigger language plpgsql as $$
    begin raise exception 'injected failure on %', new.hostname; end $$`.execute(db.kysely);
    await sql`create trigger refuse_fw3 before insert on devices for each row
    when (new.hostname = 'fw-3') execute function refuse_fw3()`.execute(db.kysely);
    const lab = labOf(["fw-0", "fw-1", "fw-2", "fw-3", "fw-4", "fw-5"]);
    const p = await t.plan(lab);
    assert.deepEqual(p.body.summary.create, 5);
    const r = await t.post("/api/admin/dut/lab/apply", {
      lab,
      secrets: { admin: CANARY },
      expectedGeneration: p.body.generation,
      planHash: p.body.planHash,
    });
    assert.equal(r.status, 500);
    assert.deepEqual(await t.devices(), before);
    assert.equal(await t.generation(), gen);
  },
);

dbTest("of two applies from the same generation one succeeds and the other answers 412", async (db) => {
  const t = await setup(db);
  const a = labOf(["fw-1", "fw-2"]);
  const b = labOf(["fw-1", "fw-2", "fw-3"]);
  const pa = await t.plan(a);
  const pb = await t.plan(b);
  const send = (lab: unknown, p: { body: { generation: number } }) =>
    t.post("/api/admin/dut/lab/apply", {
      lab,
      secrets: { admin: CANARY },
      expectedGeneration: p.body.generation,
    });
  const results = await Promise.all([send(a, pa), send(b, pb)]);
  assert.deepEqual(results.map((r) => r.status).sort(), [200, 412]);
  const refused = results.find((r) => r.status === 412)!;
  assert.equal(refused.body.type, "urn:dutlab:problem:precondition-failed");
  assert.equal(await t.generation(), 1);
  // A plan made before a change of the registry is stale even at the same generation.
  const p = await t.plan(labOf(["fw-1", "fw-2"]));
  const id = (await t.devices())[0]!.id;
  await t.app.request(`/api/admin/dut/devices/${id}`, jsonReq("PATCH", { notes: "by hand" }, t.auth));
  const stale = await t.post("/api/admin/dut/lab/apply", {
    lab: labOf(["fw-1", "fw-2"]),
    secrets: { admin: CANARY },
    expectedGeneration: p.body.generation,
    planHash: p.body.planHash,
  });
  assert.equal(stale.status, 412);
});

dbTest("prune touches only this lab's devices, never one created through the API", async (db) => {
  const t = await setup(db);
  const api = await t.app.request(
    "/api/admin/dut/devices",
    jsonReq("POST", {
      hostname: "by-hand",
      vendor: "fixture-fw",
      baseUrl: "https://by-hand:8443",
      username: "u",
      password: "pw",
    }, t.auth),
  );
  assert.equal(api.status, 201);
  await t.apply(labOf(["fw-1", "fw-2", "fw-3", "fw-4"]));
  const kept = labOf(["fw-1", "fw-2", "fw-3"]);
  const noPrune = await t.plan(kept);
  assert.deepEqual(noPrune.body.notInFile, ["fw-4"]);
  assert.equal(noPrune.body.summary.remove, 0);
  const r = await t.apply(kept, { prune: "disable" });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const byHost = Object.fromEntries((await t.devices()).map((d) => [d.hostname, d]));
  assert.equal(byHost["fw-4"]!.enabled, false, "pruned by disabling");
  assert.equal(byHost["by-hand"]!.enabled, true);
  assert.equal(byHost["by-hand"]!.managedBy, null);
  // More than half of the lab is refused without force; delete then removes them.
  const few = labOf(["fw-1"]);
  const refused = await t.apply(few, { prune: "delete" });
  assert.equal(refused.status, 422);
  const forced = await t.apply(few, { prune: "delete", force: true });
  assert.equal(forced.status, 200, JSON.stringify(forced.body));
  assert.deepEqual((await t.devices()).map((d) => d.hostname), ["by-hand", "fw-1"]);
  // An empty devices list needs force too.
  const empty = await t.apply(labOf([]));
  assert.equal(empty.status, 422);
});

dbTest("prune=delete is refused (409) for a device in an active run", async (db) => {
  const t = await setup(db);
  await t.apply(labOf(["fw-1", "fw-2", "fw-3"]));
  const fw3 = (await t.devices()).find((d) => d.hostname === "fw-3")!;
  await sql`insert into test_runs (execution_id, plan_identifier, plan_display_name, plan_catalog_version,
    plan_json, plan_snapshot_sha256, license_id, status, started_at, start_state_json, preflight_json)
    values (${crypto.randomUUID()}, 'p', 'P', 1, '{}'::jsonb, 'x', 'l', 'active', now(),
    ${
    JSON.stringify({ devices: [{ id: fw3.id, hostname: "fw-3", vendor: "fixture-fw", deviceRole: "ngfw" }] })
  }::jsonb,
    '{}'::jsonb)`.execute(db.kysely);
  const r = await t.apply(labOf(["fw-1", "fw-2"]), { prune: "delete" });
  assert.equal(r.status, 409);
  assert.match(r.body.detail, /active run/);
  assert.equal((await t.devices()).length, 3);
});

dbTest("a device registered outside any lab is a conflict until adopt", async (db) => {
  const t = await setup(db);
  await t.app.request(
    "/api/admin/dut/devices",
    jsonReq("POST", {
      hostname: "fw-1",
      vendor: "fixture-fw",
      baseUrl: "https://fw-1.lab.example:8443",
      username: "admin",
      password: CANARY,
    }, t.auth),
  );
  const p = await t.plan(labOf(["fw-1"]));
  assert.equal(p.body.devices[0].action, "conflict");
  const refused = await t.apply(labOf(["fw-1"]));
  assert.equal(refused.status, 409);
  const adopted = await t.apply(labOf(["fw-1"]), { adopt: true });
  assert.equal(adopted.status, 200);
  assert.deepEqual(adopted.body.plan.devices[0].changes.map((c: { field: string }) => c.field), [
    "pollIntervalSeconds",
    "tags",
    "managedBy",
  ]);
  assert.equal(adopted.body.plan.devices[0].credential, "unchanged", "the API-set password's fingerprint");
  assert.equal((await t.devices())[0]!.managedBy, "lab1");
});

dbTest("a renamed device (movedFrom) keeps its id and snapshots", async (db) => {
  const t = await setup(db);
  await t.apply(labOf(["fw-1", "fw-2"]));
  const old = (await t.devices()).find((d) => d.hostname === "fw-2")!;
  const text = '{"a":1}';
  const sha = await sha256Hex(text);
  await db.kysely.insertInto("snapshot_payloads").values({ sha256: sha, payload: text, size_bytes: 7 })
    .execute();
  await db.kysely.insertInto("snapshots").values({
    device_id: old.id as string,
    endpoint_label: "ntp_config",
    payload_sha256: sha,
    collected_at: new Date(),
    test_run_execution_id: null,
    adapter_module: "@dutlab/adapter-fixture-fw",
    adapter_version: "0.0.1",
  }).execute();
  const lab = labOf(["fw-1", "fw-2b"]);
  (lab.devices[1] as Record<string, unknown>).movedFrom = ["fw-2"];
  const p = await t.plan(lab);
  assert.equal(p.body.devices[1].action, "update");
  assert.equal(p.body.devices[1].movedFrom, "fw-2");
  const r = await t.apply(lab, { prune: "disable" });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.plan.summary.remove, 0);
  const moved = (await t.devices()).find((d) => d.hostname === "fw-2b")!;
  assert.equal(moved.id, old.id);
  const snaps = await db.kysely.selectFrom("snapshots").select("device_id").execute();
  assert.deepEqual(snaps.map((s) => s.device_id), [old.id]);
});

dbTest("errors name JSON paths: the schema's (400), then the service's rules (422)", async (db) => {
  const t = await setup(db);
  const bad = labOf(["fw-1"]);
  bad.credentials = { admin: { username: "admin", password: CANARY } };
  (bad.devices[0] as Record<string, unknown>).baseUrl = "http://fw-1";
  const r = await t.post("/api/admin/dut/lab/plan", { lab: bad, secrets: {} });
  assert.equal(r.status, 400);
  assert.deepEqual(r.body.errors.map((e: { field: string }) => e.field).sort(), [
    "$.credentials.admin.password",
    "$.devices[0].baseUrl",
  ]);
  const rules = labOf(["fw-1", "fw-1"], {
    defaults: { vendor: "nope", credential: "missing" },
  });
  (rules.devices[0] as Record<string, unknown>).deviceRole = "router";
  const r2 = await t.post("/api/admin/dut/lab/plan", { lab: rules, secrets: {} });
  assert.equal(r2.status, 422);
  assert.deepEqual(r2.body.errors.map((e: { field: string }) => e.field), [
    "$.defaults.vendor",
    "$.devices[0].deviceRole",
    "$.defaults.credential",
    "$.defaults.vendor",
    "$.defaults.credential",
    "$.devices[1].hostname",
  ]);
  const unresolved = await t.post("/api/admin/dut/lab/plan", { lab: labOf(["fw-1"]), secrets: {} });
  assert.equal(unresolved.status, 422);
  assert.deepEqual(unresolved.body.errors.map((e: { field: string }) => e.field), [
    "$.credentials.admin.password",
  ]);
});

dbTest(
  "a lab plan's schema errors say in plain words what each field expects, never zod's wording",
  async (db) => {
    const t = await setup(db);
    const r = await t.post("/api/admin/dut/lab/plan", {
      lab: labOf(["fw-1"], { devices: { hostname: "fw-1" } }),
    });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.errors, [
      { field: "$.devices", message: "must be a list of devices, not an object" },
      {
        field: "secrets",
        message:
          "is required: an object giving each credential's password by its name ({} when the file names no credential)",
      },
    ]);
    assert.match(
      r.body.detail,
      /^"\$\.devices": must be a list of devices, not an object; "secrets": is required/,
    );
    assert.doesNotMatch(JSON.stringify(r.body), /Invalid input|expected \w+, received/);
    const none = await t.post("/api/admin/dut/lab/plan", { secrets: {} });
    assert.equal(none.status, 400);
    assert.deepEqual(none.body.errors.map((e: { field: string }) => e.field), ["lab"]);
  },
);

dbTest("a hostname another lab holds is a 409 whose detail names that lab", async (db) => {
  const t = await setup(db);
  assert.equal((await t.apply(labOf(["fw-1"]))).status, 200);
  const other = labOf(["fw-1", "fw-2"], { metadata: { name: "lab2" } });
  const p = await t.plan(other);
  assert.equal(p.body.devices[0].action, "conflict");
  const r = await t.post("/api/admin/dut/lab/apply", {
    lab: other,
    secrets: { admin: CANARY },
    expectedGeneration: p.body.generation,
    planHash: p.body.planHash,
  });
  assert.equal(r.status, 409);
  assert.equal(
    r.body.detail,
    '1 device(s) of the lab file conflict with the registry: fw-1 is managed by lab "lab1"',
  );
  assert.deepEqual(r.body.errors, [{ field: "fw-1", message: 'managed by lab "lab1"' }]);
  // Through the device API too: the hostname is held by lab1's file.
  const res = await t.app.request(
    "/api/admin/dut/devices",
    jsonReq("POST", {
      hostname: "fw-1",
      vendor: "fixture-fw",
      baseUrl: "https://fw-1.lab.example:8443",
      username: "admin",
      password: CANARY,
    }, t.auth),
  );
  const body = await res.json();
  assert.equal(res.status, 409);
  assert.match(body.detail, /^A device with hostname "fw-1" is already registered, managed by lab "lab1"/);
  assert.deepEqual(body.errors, [{
    field: "hostname",
    message: 'is already registered, managed by lab "lab1"',
  }]);
});

dbTest("fingerprints stay valid through a key rotation", async (db) => {
  const t = await setup(db);
  await t.apply(labOf(["fw-1"]));
  const next = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";
  const both = await buildKeyRing(next, TEST_CRED_KEY);
  const r = await reencryptCredentials(db.kysely, both);
  assert.equal(r.rotated, 1);
  const row = await db.kysely.selectFrom("devices").select("password_fp").executeTakeFirstOrThrow();
  assert.ok(row.password_fp!.startsWith(`${both.current.id}.`));
  // A service on the new key alone still finds the credential unchanged.
  const rotated = await testServices(db, fixtureModules(), { DUT_CRED_ENC_KEY: next });
  const res = await rotated.app.request(
    "/api/admin/dut/lab/plan",
    jsonReq("POST", { lab: labOf(["fw-1"]), secrets: { admin: CANARY } }, rotated.auth),
  );
  const plan = await res.json();
  assert.equal(plan.devices[0].action, "unchanged");
});

dbTest("the lab file's JSON Schema is served and equals the committed copy", async (db) => {
  const t = await setup(db);
  const res = await t.app.request("/api/lab.schema.json");
  assert.equal(res.status, 200, "public: no token");
  assert.equal(res.headers.get("content-type"), "application/schema+json");
  const served = await res.text();
  assert.equal(served, labJsonSchemaText());
  const committed = await Deno.readTextFile(new URL("../../../schemas/lab.schema.json", import.meta.url));
  assert.equal(committed, served, "schemas/lab.schema.json is stale: run deno task lab:schema");
}, { only: ["pglite"] });
