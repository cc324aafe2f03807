/**
 * What pre-flight reads, and what it shares: only the (device, label) pairs a check applies to are
 * fetched, each distinct payload is parsed once and shared between devices, and yet every result cites
 * its own device's snapshot and no check can change what another check reads. Snapshots are written
 * straight into the tables, so payloads can be anything, even text that is not JSON.
 */
import assert from "node:assert/strict";
import { type KyselyPlugin, sql } from "kysely";
import { defineCheck } from "@dutlab/core";
import { dbTest } from "../../harness/db.ts";
import { testServices } from "../../harness/app.ts";
import type { Db } from "../db/open.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";
import type { CheckDefinition } from "../check.ts";
import { buildRegistry, type Registry } from "../registry.ts";
import { evaluateCheck, summarize } from "./evaluate.ts";
import { PayloadCache, payloadCache } from "../lab/read.ts";
import { runPreflight } from "./engine.ts";
import { latestSnapshots } from "../snapshots/store.ts";
import { webSha256Hex as sha256Hex } from "../../harness/poller_lab.ts";

const PLAN = "fixture-plan";
const NOT_JSON = "{not json: a payload no check may read";

const mod = (check: CheckDefinition) => ({
  name: `@dutlab/check-${check.id}`,
  version: "0.0.1",
  module: check,
});

/** A registry with the fixture vendor and plan and exactly these checks (in this order). */
function registryWith(...checks: CheckDefinition[]): Registry {
  const mods = fixtureModules();
  mods.checks = checks.map(mod);
  return buildRegistry(mods);
}

/** A check of `label` that applies where `where` says and reports what it was handed. */
function reporter(id: string, label: string, where: (hostname: string) => boolean): CheckDefinition {
  return defineCheck({
    id,
    coreVersion: "^1.0.0",
    description: `reports its ${label} snapshot`,
    label,
    appliesTo: (d) => where(d.hostname),
    evaluate: (s) => ({
      pass: true,
      detail: JSON.stringify([s.deviceId, s.endpointLabel, s.id, s.collectedAt.toISOString(), s.payload]),
    }),
  });
}

/** Fixture devices registered through the device service (no device is contacted), by hostname. */
async function devices(db: Db, ...hostnames: string[]): Promise<Record<string, string>> {
  const { svc } = await testServices(db, fixtureModules());
  const ids: Record<string, string> = {};
  for (const [i, hostname] of hostnames.entries()) {
    ids[hostname] = await svc.devices.create({
      hostname,
      vendor: "fixture-fw",
      baseUrl: `https://127.0.0.1:${9 + i}`,
      username: "admin",
      password: "fixture-pass",
      tlsVerifyMode: "self-signed",
      pollIntervalSeconds: 300,
      enabled: true,
    });
  }
  return ids;
}

/** Store `text` as the latest `label` snapshot of a device, the way the poll cycle does; its id. */
async function put(db: Db, deviceId: string, label: string, text: string, at = new Date()): Promise<string> {
  const sha = await sha256Hex(text);
  await db.kysely.insertInto("snapshot_payloads")
    .values({ sha256: sha, payload: text, size_bytes: new TextEncoder().encode(text).length })
    .onConflict((oc) => oc.column("sha256").doNothing()).execute();
  const { id } = await db.kysely.insertInto("snapshots").values({
    device_id: deviceId,
    endpoint_label: label,
    payload_sha256: sha,
    collected_at: at,
    test_run_execution_id: null,
    adapter_module: "@dutlab/adapter-fixture-fw",
    adapter_version: "0.0.1",
  }).returning(sql<string>`id::text`.as("id")).executeTakeFirstOrThrow();
  await db.kysely.insertInto("snapshot_latest").values({
    device_id: deviceId,
    endpoint_label: label,
    snapshot_id: id,
  })
    .onConflict((oc) => oc.columns(["device_id", "endpoint_label"]).doUpdateSet({ snapshot_id: id }))
    .execute();
  return id;
}

/**
 * The pre-flight result as the engine's contract defines it, computed the plain way: every check in
 * registry order × every enabled device by hostname, `evaluateCheck` on the latest snapshot of the
 * check's label (listing helper, every label, every payload parsed).
 */
async function reference(db: Db, registry: Registry, now: Date) {
  const plan = registry.plan(PLAN)!;
  const rows = await db.kysely.selectFrom("devices").selectAll().where("enabled", "=", true)
    .orderBy("hostname").orderBy("id").execute();
  const latest = await latestSnapshots(db.kysely, rows.map((d) => d.id));
  const checks = registry.checks.flatMap(({ check }) =>
    rows.flatMap((d) => {
      const device = { id: d.id, hostname: d.hostname, vendor: d.vendor, deviceRole: d.device_role };
      const s = latest.find((l) => l.device_id === d.id && l.endpoint_label === check.label);
      const snapshot = s
        ? {
          id: s.id,
          deviceId: d.id,
          endpointLabel: check.label,
          vendor: d.vendor,
          payload: JSON.parse(s.payload),
          payloadSha256: s.payload_sha256,
          collectedAt: new Date(s.collected_at),
        }
        : null;
      const facts = registry.adapters.get(d.vendor)?.adapter.facts ?? {};
      const r = evaluateCheck(check, device, plan, snapshot, { now: new Date(now), facts });
      return r ? [r] : [];
    })
  );
  return summarize(plan, checks, now);
}

dbTest("pre-flight gives the same result as evaluateCheck over every latest snapshot", async (db) => {
  const ids = await devices(db, "fx-c", "fx-a", "fx-b");
  for (const [h, id] of Object.entries(ids)) {
    await put(db, id, "ntp_config", JSON.stringify({ servers: h === "fx-b" ? [] : ["10.0.0.1"] }));
    if (h !== "fx-c") await put(db, id, "decrypt_policy", JSON.stringify({ rules: [{ id: 1 }], host: h }));
    await put(db, id, "system_info", JSON.stringify({ model: "FX-1000" }), new Date(Date.now() - 7_200_000));
  }
  const ntp = defineCheck({
    id: "ntp",
    coreVersion: "^1.0.0",
    description: "ntp",
    label: "ntp_config",
    appliesTo: () => true,
    evaluate: (s, _p, { facts }) => {
      const n = facts.ntpServers!(s.payload).length;
      return { pass: n > 0, detail: `${n} server(s)` };
    },
  });
  const registry = registryWith(
    ntp,
    reporter("decrypt-ab", "decrypt_policy", (h) => h !== "fx-b"),
    defineCheck({
      ...ntp,
      id: "age",
      label: "system_info",
      evaluate: () => ({ pass: false, detail: "old" }),
    }),
    defineCheck({ ...ntp, id: "shaky", appliesTo: (d) => (d.hostname === "fx-c" ? JSON.parse("{") : true) }),
  );
  const now = new Date();
  const r = await runPreflight(db.kysely, registry, registry.plan(PLAN)!, now);
  assert.deepEqual(r, await reference(db, registry, now));
  assert.deepEqual(r.checks.map((c) => `${c.checkId}@${c.deviceHostname}:${c.status}`), [
    "ntp@fx-a:pass",
    "ntp@fx-b:fail",
    "ntp@fx-c:pass",
    "decrypt-ab@fx-a:pass",
    "decrypt-ab@fx-c:skipped",
    "age@fx-a:fail",
    "age@fx-b:fail",
    "age@fx-c:fail",
    "shaky@fx-a:pass",
    "shaky@fx-b:fail",
    "shaky@fx-c:error",
  ]);
});

dbTest("snapshots of pairs no check applies to are not read: they cannot change the result", async (db) => {
  const ids = await devices(db, "fx-1", "fx-2");
  for (const id of Object.values(ids)) {
    await put(db, id, "ntp_config", JSON.stringify({ servers: ["10.0.0.1"] }));
    await put(db, id, "decrypt_policy", JSON.stringify({ rules: [{ id: 1 }] }));
  }
  // fx-2 takes part in no check; decrypt_policy is read for fx-1 only.
  const registry = registryWith(
    reporter("ntp-1", "ntp_config", (h) => h === "fx-1"),
    reporter("decrypt-1", "decrypt_policy", (h) => h === "fx-1"),
  );
  const plan = registry.plan(PLAN)!;
  const now = new Date();
  const before = await runPreflight(db.kysely, registry, plan, now);
  assert.deepEqual(before.checks.map((c) => `${c.checkId}@${c.deviceHostname}`), [
    "ntp-1@fx-1",
    "decrypt-1@fx-1",
  ]);

  // Every latest snapshot of fx-2 becomes text no JSON parser accepts: a read of any of them would fail.
  for (const label of ["ntp_config", "decrypt_policy"]) await put(db, ids["fx-2"]!, label, NOT_JSON);
  assert.deepEqual(await runPreflight(db.kysely, registry, plan, now), before);

  // A check whose appliesTo throws for fx-2 still cites fx-2's snapshot, and reads no payload.
  const shaky = defineCheck({
    ...reporter("shaky", "ntp_config", () => true),
    appliesTo: (d) => {
      if (d.hostname === "fx-2") throw new Error("no role");
      return false;
    },
  });
  const withShaky = registryWith(...registry.checks.map((c) => c.check), shaky);
  const r = await runPreflight(db.kysely, withShaky, withShaky.plan(PLAN)!, now);
  assert.deepEqual(r.checks.slice(0, 2), before.checks);
  const e = r.checks[2]!;
  assert.deepEqual([e.checkId, e.deviceHostname, e.status, e.detail], [
    "shaky",
    "fx-2",
    "error",
    "check error: appliesTo failed for this device (no role)",
  ]);
  const [latest] = await db.kysely.selectFrom("snapshot_latest").select(
    sql<string>`snapshot_id::text`.as("id"),
  )
    .where("device_id", "=", ids["fx-2"]!).where("endpoint_label", "=", "ntp_config").execute();
  assert.ok(latest, "fx-2 has a latest ntp_config snapshot");
  assert.equal(e.evidence?.snapshotId, latest.id);
  assert.equal(e.evidence?.payloadSha256, await sha256Hex(NOT_JSON));
});

dbTest("devices with identical payloads share them, yet each result cites its own snapshot", async (db) => {
  const ids = await devices(db, "fx-1", "fx-2", "fx-3");
  const same = JSON.stringify({ servers: ["10.0.0.1", "10.0.0.2"] });
  const at = (min: number) => new Date(Date.UTC(2026, 10, 21, 10, min));
  const other = JSON.stringify({ servers: [] });
  const snap = {
    "fx-1": await put(db, ids["fx-1"]!, "ntp_config", same, at(1)),
    "fx-2": await put(db, ids["fx-2"]!, "ntp_config", same, at(2)),
    "fx-3": await put(db, ids["fx-3"]!, "ntp_config", other, at(3)),
  };
  assert.notEqual(snap["fx-1"], snap["fx-2"]);
  const registry = registryWith(reporter("ntp", "ntp_config", () => true));
  const r = await runPreflight(db.kysely, registry, registry.plan(PLAN)!);
  const sha = { same: await sha256Hex(same), other: await sha256Hex(other) };
  assert.deepEqual(r.checks.map((c) => [c.deviceHostname, c.evidence]), [
    ["fx-1", { snapshotId: snap["fx-1"], payloadSha256: sha.same, collectedAt: at(1).toISOString() }],
    ["fx-2", { snapshotId: snap["fx-2"], payloadSha256: sha.same, collectedAt: at(2).toISOString() }],
    ["fx-3", { snapshotId: snap["fx-3"], payloadSha256: sha.other, collectedAt: at(3).toISOString() }],
  ]);
  // What each check was handed is its own device's snapshot around the shared payload.
  assert.deepEqual(r.checks.map((c) => JSON.parse(c.detail)), [
    [ids["fx-1"], "ntp_config", snap["fx-1"], at(1).toISOString(), JSON.parse(same)],
    [ids["fx-2"], "ntp_config", snap["fx-2"], at(2).toISOString(), JSON.parse(same)],
    [ids["fx-3"], "ntp_config", snap["fx-3"], at(3).toISOString(), { servers: [] }],
  ]);
});

dbTest("a check cannot change what another check or another device's check reads", async (db) => {
  const ids = await devices(db, "fx-1", "fx-2");
  const payload = { servers: ["10.0.0.1", "10.0.0.2"], nested: { list: [{ host: "a" }] } };
  for (const id of Object.values(ids)) await put(db, id, "ntp_config", JSON.stringify(payload));
  type P = typeof payload;
  const base = reporter("x", "ntp_config", () => true);
  const registry = registryWith(
    // Writes deep inside the shared payload: refused (frozen), an error result.
    defineCheck({
      ...base,
      id: "writes-deep",
      evaluate: (s) => {
        (s.payload as P).nested.list[0]!.host = "changed";
        return { pass: true, detail: "wrote" };
      },
    }),
    // Tries every other change, swallowing the refusals, then replaces its own copy's payload.
    defineCheck({
      ...base,
      id: "tries-all",
      evaluate: (s) => {
        const p = s.payload as P;
        const attempts = [
          () => p.servers.push("10.9.9.9"),
          () => (p.servers.length = 0),
          () => delete (p as Partial<P>).servers,
          () => Object.defineProperty(p, "servers", { value: [] }),
          () => Object.setPrototypeOf(p.nested, { host: "proto" }),
          () => ((p as Record<string, unknown>).extra = 1),
        ];
        const refused = attempts.filter((a) => {
          try {
            a();
            return false;
          } catch {
            return true;
          }
        }).length;
        s.payload = { servers: [] }; // its own snapshot object: allowed, seen by nobody else
        return { pass: true, detail: `${refused}/${attempts.length} refused; ${JSON.stringify(s.payload)}` };
      },
    }),
    base,
  );
  const r = await runPreflight(db.kysely, registry, registry.plan(PLAN)!);
  const by = (id: string) => r.checks.filter((c) => c.checkId === id);
  for (const c of by("writes-deep")) {
    assert.equal(c.status, "error");
    assert.match(c.detail, /^check error: could not evaluate the ntp_config payload \(.*read.only/i);
  }
  assert.deepEqual(by("tries-all").map((c) => c.detail), [
    '6/6 refused; {"servers":[]}',
    '6/6 refused; {"servers":[]}',
  ]);
  // The last check of each device reads the payload as stored.
  assert.deepEqual(by("x").map((c) => [c.deviceId, JSON.parse(c.detail)[4]]), [
    [ids["fx-1"], payload],
    [ids["fx-2"], payload],
  ]);
});

dbTest(
  "both reads see one state of the database: a device deleted between them is still whole",
  async (db) => {
    const ids = await devices(db, "fx-1", "fx-2");
    for (const id of Object.values(ids)) {
      await put(db, id, "ntp_config", JSON.stringify({ servers: ["10.0.0.1"] }));
    }
    const registry = registryWith(reporter("ntp", "ntp_config", () => true));
    const plan = registry.plan(PLAN)!;
    const now = new Date();
    const before = await runPreflight(db.kysely, registry, plan, now);
    assert.equal(before.checksPassed, 2);

    // Once the device list has been read, another session deletes fx-2 (its snapshots go with it).
    let results = 0;
    const deleteAfterFirstRead: KyselyPlugin = {
      transformQuery: (a) => a.node,
      async transformResult(a) {
        if (results++ === 0) await db.kysely.deleteFrom("devices").where("id", "=", ids["fx-2"]!).execute();
        return a.result;
      },
    };
    const r = await runPreflight(db.kysely.withPlugin(deleteAfterFirstRead), registry, plan, now);
    assert.equal(results, 2);
    assert.equal(
      (await db.kysely.selectFrom("snapshot_latest").select("device_id").where("device_id", "=", ids["fx-2"]!)
        .execute()).length,
      0,
    );
    assert.deepEqual(r, before, "fx-2 keeps its snapshot: not a registered device without snapshots");
  },
  // PGlite is one session: another query cannot run between the two reads (it would join the transaction).
  { only: ["postgres"] },
);

dbTest("parsed payloads are kept across pre-flights: a cached payload is not read again", async (db) => {
  payloadCache.clear();
  const ids = await devices(db, "fx-1");
  const text = JSON.stringify({ servers: ["10.0.0.9"], cacheProbe: crypto.randomUUID() });
  const sha = await sha256Hex(text);
  await put(db, ids["fx-1"]!, "ntp_config", text);
  const registry = registryWith(reporter("ntp-1", "ntp_config", () => true));
  const plan = registry.plan(PLAN)!;
  const now = new Date();
  const first = await runPreflight(db.kysely, registry, plan, now);
  assert.equal(first.checks[0]!.status, "pass");
  assert.ok(payloadCache.has(sha), "the parsed payload is cached");
  // Corrupt the stored text behind the engine's back (a real payload never changes: UPDATE is refused).
  await db.kysely.transaction().execute(async (tx) => {
    await sql`alter table snapshot_payloads disable trigger snapshot_payloads_no_update`.execute(tx);
    await sql`update snapshot_payloads set payload = ${NOT_JSON} where sha256 = ${sha}`.execute(tx);
    await sql`alter table snapshot_payloads enable trigger snapshot_payloads_no_update`.execute(tx);
  });
  assert.deepEqual(await runPreflight(db.kysely, registry, plan, now), first, "served from the cache");
  payloadCache.clear();
  const reread = await runPreflight(db.kysely, registry, plan, now);
  assert.equal(reread.checks[0]!.status, "error", "without the cache the corrupted text is read");
});

Deno.test("the payload cache keeps the most recently used payloads within its budget", () => {
  const c = new PayloadCache(30);
  const text = (k: string) => JSON.stringify({ k: k.repeat(4) }); // 12 characters
  c.put("a", text("a"));
  c.put("b", text("b"));
  assert.deepEqual(c.get("a")?.value, { k: "aaaa" }); // parsed on first read; a is now the most recent
  assert.ok(Object.isFrozen(c.get("a")?.value), "a parsed payload is frozen");
  c.put("c", text("c")); // over budget: b (least recently used) goes
  assert.deepEqual([c.has("a"), c.has("b"), c.has("c")], [true, false, true]);
  assert.equal(c.bytes, 24);
  const huge = c.put("huge", JSON.stringify({ k: "x".repeat(40) })); // larger than the budget: not kept
  assert.deepEqual([c.has("huge"), c.size], [false, 2]);
  assert.equal((huge.value as { k: string }).k.length, 40, "yet usable by the pre-flight that read it");
  assert.throws(() => c.put("bad", "{not json").value, SyntaxError);
});
