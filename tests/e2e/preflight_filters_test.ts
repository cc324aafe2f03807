/**
 * Issue 29, point 3: device tags, pre-flight filters (devices, checks, tags), dry run and `asOf`, against the
 * real adapters' simulators, checks and plans. The `asOf` acceptance test: start a run, change the lab,
 * re-snapshot, ask pre-flight as of the run's start and compare with the report's annex `preflight-at-start`.
 */
import assert from "node:assert/strict";
import { dbTest } from "../../core/harness/db.ts";
import { jsonReq, testServices } from "../../core/harness/app.ts";
import type { Db } from "../../core/harness/core.ts";
import { sql } from "kysely";
import { latestAsOfSql, payloadCache } from "../../core/harness/core.ts";
import { type PreflightPlan, type PreflightResult } from "../../core/harness/core.ts";
import { runPreflight } from "../../core/harness/core.ts";
import type { ReportData } from "../../core/harness/core.ts";
import { modules } from "../../modules.gen.ts";
import { adapterForRole, adaptersWhere, startWithDecrypt } from "../../core/harness/lab.ts";
import { closeAll, fetchReport, finishRun, snapshot, startRun } from "../../core/harness/runs_lab.ts";

const ON = "ngfw-throughput-decrypt-on";
/** The lab's devices: two enabled adapters of role ngfw, and those of roles switch and bmc. */
const [NGFW_A, NGFW_B] = adaptersWhere(modules, (a) => a.deviceRoles.includes("ngfw"));
const SWITCH = adapterForRole(modules, "switch"), BMC = adapterForRole(modules, "bmc");
const startNgfwA = () => startWithDecrypt(NGFW_A!);
const startNgfwB = async () => await (await NGFW_B!.sim()).startSimulatedDevice();
const startSwitch = async () => await (await SWITCH.sim()).startSimulatedDevice();
const startBmc = async () => await (await BMC.sim()).startSimulatedDevice();

/** The four simulated devices, tagged, registered and snapshotted over the API. */
async function lab(db: Db) {
  const { app, auth, svc } = await testServices(db, modules);
  const sims = {
    ngfwA: await startNgfwA(),
    ngfwB: await startNgfwB(),
    sw: await startSwitch(),
    bmc: await startBmc(),
  };
  await sims.ngfwA.decryption(true);
  const spec = {
    ngfwA: { hostname: "fw-a-1", vendor: NGFW_A!.vendor, tags: ["site:lab1", "fw", "fw"] },
    ngfwB: { hostname: "fw-b-1", vendor: NGFW_B!.vendor, tags: ["fw", "site:lab1"] },
    sw: { hostname: "sw-1", vendor: SWITCH.vendor, tags: ["site:lab1"] },
    bmc: { hostname: "bmc-1", vendor: BMC.vendor, tags: ["site:lab2"] },
  };
  const ids = {} as Record<keyof typeof sims, string>;
  for (const k of Object.keys(sims) as Array<keyof typeof sims>) {
    const res = await app.request(
      "/api/admin/dut/devices",
      jsonReq("POST", {
        ...spec[k],
        baseUrl: sims[k].sim.url,
        ...sims[k].credentials,
        tlsVerifyMode: k === "ngfwB" ? "insecure" : "self-signed",
      }, auth),
    );
    assert.equal(res.status, 201, await res.clone().text());
    ids[k] = (await res.json()).deviceId;
  }
  for (const id of Object.values(ids)) await snapshot(app, auth, id);
  const preflight = async (body: Record<string, unknown>) => {
    const res = await app.request(
      "/api/test-runs/preflight",
      jsonReq("POST", { planIdentifier: ON, ...body }, auth),
    );
    return { status: res.status, body: await res.json() };
  };
  return {
    app,
    auth,
    svc,
    sims,
    ids,
    preflight,
    async [Symbol.asyncDispose]() {
      await closeAll(Object.values(sims));
    },
  };
}

const pairs = (b: PreflightResult) => b.checks.map((c) => `${c.checkId}@${c.deviceHostname}`).sort();

dbTest(
  "device tags are folded, sorted, validated, replaced by PATCH and filter the list (AND)",
  async (db) => {
    await using l = await lab(db);
    const get = async (id: string) =>
      await (await l.app.request(`/api/admin/dut/devices/${id}`, { headers: l.auth })).json();
    assert.deepEqual((await get(l.ids.ngfwA)).tags, ["fw", "site:lab1"], "duplicates folded, sorted");
    const list = async (q: string) => {
      const res = await l.app.request(`/api/admin/dut/devices${q}`, { headers: l.auth });
      const body = await res.json();
      return {
        status: res.status,
        body,
        hosts: res.ok ? body.devices.map((d: { hostname: string }) => d.hostname) : [],
      };
    };
    assert.deepEqual((await list("")).body.devices.map((d: { tags: string[] }) => d.tags), [
      ["site:lab2"],
      ["fw", "site:lab1"],
      ["fw", "site:lab1"],
      ["site:lab1"],
    ]);
    assert.deepEqual((await list("?tag=site:lab1")).hosts, ["fw-a-1", "fw-b-1", "sw-1"]);
    assert.deepEqual((await list("?tag=site:lab1&tag=fw")).hosts, ["fw-a-1", "fw-b-1"], "repeated tag: AND");
    assert.deepEqual((await list("?tag=fw&tag=site:lab2")).hosts, [], "no device carries both");
    assert.deepEqual((await list("?tag=nobody")).hosts, [], "the list filter names no unknown tag");
    assert.deepEqual(
      (await list("?tag=fw&limit=1")).body.nextCursor !== null,
      true,
      "paged with a tag filter",
    );
    const bad = await list("?tag=not%20a%20tag");
    assert.equal(bad.status, 400);
    assert.ok(
      bad.body.errors.some((e: { field: string }) => e.field.startsWith("query.tag")),
      JSON.stringify(bad.body),
    );

    // PATCH replaces the set; [] clears it.
    const patch = async (body: unknown) =>
      await l.app.request(`/api/admin/dut/devices/${l.ids.sw}`, jsonReq("PATCH", body, l.auth));
    let res = await patch({ tags: ["rack:2", "site:lab1", "rack:2"] });
    assert.equal(res.status, 200);
    assert.deepEqual((await res.json()).tags, ["rack:2", "site:lab1"]);
    assert.deepEqual((await list("?tag=rack:2")).hosts, ["sw-1"]);
    res = await patch({ tags: [] });
    assert.deepEqual((await res.json()).tags, []);
    assert.deepEqual((await get(l.ids.sw)).tags, []);
    // Validation: the character set, the length and the count, each naming the field.
    for (
      const [tags, field] of [
        [["has space"], "tags.0"],
        [["ok", "x".repeat(65)], "tags.1"],
        [[""], "tags.0"],
        [Array.from({ length: 33 }, (_, i) => `t${i}`), "tags"],
      ] as const
    ) {
      const r = await patch({ tags });
      const body = await r.json();
      assert.equal(r.status, 400, JSON.stringify(tags));
      assert.ok(body.errors.some((e: { field: string }) => e.field === field), JSON.stringify(body.errors));
    }
    // 33 entries folding to 32 distinct tags are accepted.
    res = await patch({ tags: [...Array.from({ length: 32 }, (_, i) => `t${i}`), "t0"] });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).tags.length, 32);
    // On create too.
    res = await l.app.request(
      "/api/admin/dut/devices",
      jsonReq("POST", {
        hostname: "x-1",
        vendor: SWITCH.vendor,
        baseUrl: "https://192.0.2.1",
        username: "u",
        password: "p",
        tags: ["bad/tag"],
      }, l.auth),
    );
    assert.equal(res.status, 400);
  },
);

dbTest(
  "a filtered pre-flight says so and never passes a plan whose required devices were left out",
  async (db) => {
    await using l = await lab(db);
    const whole = await l.preflight({});
    assert.equal(whole.status, 200, whole.body.summary);
    assert.equal(whole.body.selection, undefined, "no filter, no selection member");

    // One device by hostname, one by id: only their checks, each of which passes; the plan is not judged.
    const two = await l.preflight({ devices: ["fw-a-1", l.ids.sw] });
    assert.equal(two.status, 422);
    assert.equal(two.body.pass, false);
    assert.deepEqual(
      pairs(two.body),
      pairs(whole.body).filter((p) => p.endsWith("@fw-a-1") || p.endsWith("@sw-1")),
    );
    assert.equal(two.body.checksPassed, two.body.checksRun);
    assert.deepEqual(two.body.selection.excluded, {
      pairs: 5,
      devices: ["bmc-1", "fw-b-1"],
      checks: [],
    });
    assert.equal(two.body.selection.complete, false);
    assert.match(
      two.body.summary,
      /^7\/7 checks passed on a filtered selection — not a readiness verdict for /,
    );
    assert.match(
      two.body.summary,
      /left out 5 \(check, device\) pair\(s\) the plan requires \(devices: bmc-1, fw-b-1;/,
    );

    // Tags: AND, intersected with the devices named.
    const fw = await l.preflight({ tags: ["fw", "site:lab1"] });
    assert.deepEqual([...new Set(fw.body.checks.map((c: { deviceHostname: string }) => c.deviceHostname))], [
      "fw-a-1",
      "fw-b-1",
    ]);
    assert.equal(fw.body.pass, false);
    const both = await l.preflight({ tags: ["fw"], devices: ["fw-b-1", "sw-1"] });
    assert.deepEqual(
      [...new Set(both.body.checks.map((c: { deviceHostname: string }) => c.deviceHostname))],
      ["fw-b-1"],
    );

    // Checks: only those; the others are reported as left out.
    const ntp = await l.preflight({ checks: ["ntp-source-configured"] });
    assert.deepEqual(
      ntp.body.checks.map((c: { checkId: string }) => c.checkId),
      Array(4).fill("ntp-source-configured"),
    );
    assert.equal(ntp.body.pass, false);
    assert.deepEqual(ntp.body.selection.excluded.devices, []);
    assert.deepEqual(ntp.body.selection.excluded.checks.sort(), [
      "ngfw-decrypt-state-matches-plan",
      "ngfw-deploy-clean",
      "ngfw-ha-state-sane",
      "snapshot-fresh",
    ]);

    // A filter that leaves out nothing the plan evaluates may pass, and still says it is filtered.
    const all = await l.preflight({ devices: ["bmc-1", "fw-a-1", "fw-b-1", "sw-1"] });
    assert.equal(all.status, 200);
    assert.equal(all.body.pass, true);
    assert.equal(all.body.selection.complete, true);
    assert.equal(
      all.body.summary,
      `12/12 checks passed on a filtered selection — ready for ${ON} (the filter left out nothing it requires)`,
    );

    // A failing check inside the selection is still a failure.
    await l.sims.ngfwA.decryption(false);
    await snapshot(l.app, l.auth, l.ids.ngfwA);
    const bad = await l.preflight({ devices: ["fw-a-1"], checks: ["ngfw-decrypt-state-matches-plan"] });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.checksFailed, 1);
    assert.match(
      bad.body.summary,
      /^0\/1 checks passed on a filtered selection — not a readiness verdict .*; in the selection 1 failed, 0 skipped$/,
    );

    // Unknown device, check or tag: 400 naming each one; a disabled device too.
    await l.app.request(`/api/admin/dut/devices/${l.ids.bmc}`, jsonReq("PATCH", { enabled: false }, l.auth));
    const refused = await l.preflight({
      devices: ["fw-a-1", "no-such-host", "bmc-1", crypto.randomUUID()],
      checks: ["ntp-source-configured", "no-such-check"],
      tags: ["fw", "no-such-tag"],
    });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.type, "urn:dutlab:problem:validation");
    assert.deepEqual(refused.body.errors.map((e: { field: string }) => e.field).sort(), [
      "checks.1",
      "devices.1",
      "devices.2",
      "devices.3",
      "tags.1",
    ]);
    assert.match(refused.body.detail, /unknown device "no-such-host"/);
    assert.match(refused.body.detail, /device "bmc-1" is disabled/);
    assert.match(refused.body.detail, /unknown check "no-such-check"/);
    assert.match(refused.body.detail, /unknown tag "no-such-tag"/);
    for (const body of [{ devices: [] }, { tags: ["a b"] }, { checks: [""] }, { dryRun: "yes" }]) {
      assert.equal((await l.preflight(body)).status, 400, JSON.stringify(body));
    }
  },
);

dbTest(
  "a dry run names every (device, check, label) and the snapshot it would read, reading no payload",
  async (db) => {
    await using l = await lab(db);
    const whole = (await l.preflight({})).body as PreflightResult;
    payloadCache.clear();
    const res = await l.preflight({ dryRun: true });
    assert.equal(res.status, 200);
    const plan = res.body as PreflightPlan;
    assert.equal(plan.dryRun, true);
    assert.equal(payloadCache.size, 0, "no payload was read");
    assert.equal(plan.evaluations, whole.checksRun);
    assert.equal(plan.wouldSkip, 0);
    assert.equal("checks" in plan, false, "nothing evaluated");
    const evidence = plan.reads.filter((r) => r.reads === "evidence");
    assert.deepEqual(
      evidence.map((r) => `${r.checkId}@${r.deviceHostname} ${r.label} ${r.snapshot?.snapshotId}`).sort(),
      whole.checks.map((c) => {
        const label = l.svc.registry.checks.find((k) => k.check.id === c.checkId)!.check.label;
        return `${c.checkId}@${c.deviceHostname} ${label} ${c.evidence?.snapshotId}`;
      }).sort(),
      "the same snapshots the evaluation cites",
    );
    assert.match(plan.summary, /^dry run: would evaluate 12 check\(s\) on 4 device\(s\) for /);

    // A new device without a snapshot: its checks would be skipped; filters apply to the dry run too.
    const sim = await startSwitch();
    try {
      const r = await l.app.request(
        "/api/admin/dut/devices",
        jsonReq("POST", {
          hostname: "sw-2",
          vendor: SWITCH.vendor,
          baseUrl: sim.sim.url,
          ...sim.credentials,
          tlsVerifyMode: "self-signed",
          tags: ["new"],
        }, l.auth),
      );
      assert.equal(r.status, 201);
      const only = (await l.preflight({ dryRun: true, tags: ["new"] })).body as PreflightPlan;
      assert.deepEqual(only.reads.map((x) => [x.deviceHostname, x.checkId, x.label, x.snapshot]), [
        ["sw-2", "ntp-source-configured", "ntp_config", null],
        ["sw-2", "snapshot-fresh", "system_info", null],
      ]);
      assert.equal(only.wouldSkip, 2);
      assert.equal(only.selection?.complete, false);
    } finally {
      await sim.close();
    }
  },
);

dbTest("asOf a run's start reproduces the annex preflight-at-start after the lab changed", async (db) => {
  await using l = await lab(db);
  const run = await startRun(l.app, l.auth, { planIdentifier: ON });
  // Change the lab: decryption off and no NTP server on one firewall; re-snapshot every device.
  await l.sims.ngfwA.decryption(false);
  await l.sims.ngfwA.set("ntp", "off");
  for (const id of Object.values(l.ids)) await snapshot(l.app, l.auth, id);
  const now = await l.preflight({});
  assert.equal(now.status, 422, "the lab as it stands now is not ready");
  await finishRun(l.app, l.auth, run.executionId, {
    outcome: "passed",
    results: { latencySamplesMs: [10, 20, 30] },
  });
  const report = JSON.parse((await fetchReport(l.app, l.auth, run.executionId)).text) as ReportData;
  const annex = JSON.parse(
    report.annexes.find((a) => a.id === "preflight-at-start")!.body,
  ) as PreflightResult;
  assert.equal(annex.pass, true);

  const past = await l.preflight({ asOf: report.meta.startedAt });
  assert.equal(past.status, 200, past.body.summary);
  assert.equal(past.body.asOf, report.meta.startedAt);
  const key = (
    c: PreflightResult["checks"][number],
  ) => [c.checkId, c.deviceId, c.deviceHostname, c.pass, c.status, c.evidence];
  assert.deepEqual(
    past.body.checks.map(key),
    annex.checks.map(key),
    "same checks, devices, pass values and evidence",
  );
  assert.notDeepEqual(now.body.checks.map(key), annex.checks.map(key), "today's answer differs");
  assert.match(past.body.summary, /^12\/12 checks passed as of .* — ready for /);

  // The dry run as of the start names the same snapshots.
  const dry = (await l.preflight({ asOf: report.meta.startedAt, dryRun: true })).body as PreflightPlan;
  assert.deepEqual(
    dry.reads.filter((r) => r.reads === "evidence").map((r) => r.snapshot?.snapshotId).sort(),
    annex.checks.map((c) => c.evidence?.snapshotId).sort(),
  );

  // Before any device was registered: no device takes part. Later than now, or not a date-time: 400.
  const before = await l.preflight({ asOf: "2000-01-01T00:00:00Z" });
  assert.equal(before.status, 422);
  assert.equal(before.body.checksRun, 0);
  for (
    const asOf of [
      new Date(Date.now() + 3_600_000).toISOString(),
      "yesterday",
      "2026-11-23",
      "2026-11-23T10:00:00",
    ]
  ) {
    const r = await l.preflight({ asOf });
    assert.equal(r.status, 400, asOf);
    assert.equal(r.body.errors[0].field, "asOf");
  }
});

dbTest("snapshot-fresh is judged against asOf, not against now", async (db) => {
  await using l = await lab(db);
  const plan = l.svc.registry.plan(ON)!;
  const fresh = (r: PreflightResult) =>
    r.checks.filter((c) => c.checkId === "snapshot-fresh").map((c) => c.pass);
  const asOf = new Date();
  // Evaluated two hours later: every system_info snapshot is stale against now ...
  const later = new Date(asOf.getTime() + 2 * 3_600_000);
  assert.deepEqual(fresh(await runPreflight(db.kysely, l.svc.registry, plan, later)), [
    false,
    false,
    false,
    false,
  ]);
  // ... and fresh against the moment asked for.
  const r = await runPreflight(db.kysely, l.svc.registry, plan, later, { asOf });
  assert.deepEqual(fresh(r), [true, true, true, true]);
  assert.equal(r.ranAt, later.toISOString());
  assert.equal(r.asOf, asOf.toISOString());
});

dbTest(
  "the asOf read is a range of the pair's series (and of snapshots_device_label_id), never a scan of the primary key or the table",
  async (db) => {
    const { svc } = await testServices(db, modules);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      ids.push(
        await svc.devices.create({
          hostname: `sw-${i}`,
          vendor: SWITCH.vendor,
          baseUrl: "https://192.0.2.1",
          username: "u",
          password: "p",
          tlsVerifyMode: "strict",
          pollIntervalSeconds: 300,
          enabled: true,
        }),
      );
    }
    const sha = "0".repeat(64);
    await sql`insert into snapshot_payloads (sha256, payload, size_bytes) values (${sha}, '{}', 2)`.execute(
      db.kysely,
    );
    // 40,000 snapshots: 4 devices × 5 labels × 2,000 polls, one a minute, the newest an hour ago. The older
    // half is not compacted yet (in snapshots_legacy, as migration 2026_11_25_0017 leaves rows until the
    // compaction moves them; ids from the one sequence), the newer half written through the view.
    const polls = (from: number, to: number) =>
      sql`select d.id, l.label, ${sha}, now() - interval '1 hour' - make_interval(mins => 2000 - g), 'bench', '0'
      from generate_series(${from}::int, ${to}::int) g, unnest(${ids}::uuid[]) as d(id),
        unnest(array['ntp_config', 'system_info', 'interfaces', 'resources', 'fabric']) as l(label)
      order by g`;
    await sql`insert into snapshots_legacy (id, device_id, endpoint_label, payload_sha256, collected_at,
        adapter_module, adapter_version) overriding system value
      select nextval(pg_get_serial_sequence('snapshot_rows', 'id')), p.* from (${polls(1, 1000)}) p`
      .execute(db.kysely);
    await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, collected_at, adapter_module,
      adapter_version) ${polls(1001, 2000)}`.execute(db.kysely);
    for (const t of ["snapshot_rows", "snapshot_series", "snapshots_legacy"]) {
      await sql`analyze ${sql.table(t)}`.execute(db.kysely);
    }
    const asOf = new Date(Date.now() - 3 * 3_600_000);
    const q = latestAsOfSql(["ntp_config", "system_info"], [ids.join(","), ids.join(",")], asOf);
    const explained = await sql<{ "QUERY PLAN": unknown }>`explain (format json) ${q}`.execute(db.kysely);
    const plan = explained.rows[0]!["QUERY PLAN"]; // EXPLAIN answers one row
    const nodes: Array<Record<string, unknown>> = [];
    // No InitPlan: whether rows not yet compacted are left is read once with the devices, and chooses the
    // statement (this one walks them).
    const initPlans: Array<Record<string, unknown>> = [];
    const walk = (n: Record<string, unknown>) => {
      if (n["Parent Relationship"] === "InitPlan") {
        initPlans.push(n);
        return;
      }
      nodes.push(n);
      for (const c of (n.Plans as Array<Record<string, unknown>> | undefined) ?? []) walk(c);
    };
    walk(
      (typeof plan === "string" ? JSON.parse(plan) : plan as Array<{ Plan: Record<string, unknown> }>)[0]
        .Plan,
    );
    const all = JSON.stringify(nodes.map((n) => [n["Node Type"], n["Relation Name"], n["Index Name"]]));
    assert.deepEqual(initPlans, []);
    const onRows = nodes.filter((n) => n["Relation Name"] === "snapshot_rows");
    assert.deepEqual(
      onRows.map((n) => [n["Node Type"], n["Index Name"], n["Scan Direction"]]),
      [["Index Scan", "snapshot_rows_series_id", "Backward"]],
      all,
    );
    assert.match(
      String(onRows[0]!["Index Cond"]),
      /^\(\(series_id >= se\.id\) AND \(series_id <= se\.id\)\)$/,
      "both bounds of the series are the index condition",
    );
    // (The pair's label is the label list, a constant, at the pair's label number.)
    const onLegacy = nodes.filter((n) => n["Relation Name"] === "snapshots_legacy");
    assert.deepEqual(
      onLegacy.map((n) => [n["Node Type"], n["Index Name"], n["Scan Direction"]]),
      [["Index Scan", "snapshots_device_label_id", "Forward"]],
      all,
    );
    assert.match(
      String(onLegacy[0]!["Index Cond"]),
      /^\(\(ROW\(device_id, endpoint_label\) >= ROW\(n\.device_id, \('\{ntp_config,system_info\}'::text\[\]\)\[n\.li\]\)\) AND \(ROW\(device_id, endpoint_label\) <= ROW\(n\.device_id, \('\{ntp_config,system_info\}'::text\[\]\)\[n\.li\]\)\)\)$/,
      `both bounds of the pair are the index condition: ${onLegacy[0]!["Index Cond"]}`,
    );
    // And the statement answers: per pair, the last snapshot collected at or before asOf.
    const { rows } = await q.execute(db.kysely);
    assert.equal(rows.length, 8);
    const want = await sql<{ n: string }>`select count(*)::text as n from snapshots
    where endpoint_label = 'ntp_config' and device_id = ${ids[0]} and collected_at <= ${asOf}`.execute(
      db.kysely,
    );
    assert.ok(Number(want.rows[0]!.n) > 0 && Number(want.rows[0]!.n) < 2000);
    for (const r of rows) assert.ok(Number(r.collected_ms) <= asOf.getTime());
    const newest = await sql<{ id: string }>`select max(id)::text as id from snapshots
    where endpoint_label = 'ntp_config' and device_id = ${ids[0]} and collected_at <= ${asOf}`.execute(
      db.kysely,
    );
    assert.equal(
      rows.find((r) => r.device_id === ids[0] && r.endpoint_label === "ntp_config")?.snapshot_id,
      newest.rows[0]!.id,
    );
    // Once the compaction is done (no rows left in snapshots_legacy), the statement without the legacy walk:
    // the series range alone, and the same answer here (asOf falls in the rows written through the view).
    const narrow = latestAsOfSql(["ntp_config", "system_info"], [ids.join(","), ids.join(",")], asOf, false);
    const narrowPlan = await sql<{ "QUERY PLAN": unknown }>`explain (format json) ${narrow}`.execute(
      db.kysely,
    );
    const np = narrowPlan.rows[0]!["QUERY PLAN"]; // EXPLAIN answers one row
    nodes.length = 0;
    initPlans.length = 0;
    walk((typeof np === "string" ? JSON.parse(np) : np as Array<{ Plan: Record<string, unknown> }>)[0].Plan);
    const narrowAll = JSON.stringify(nodes.map((n) => [n["Node Type"], n["Relation Name"], n["Index Name"]]));
    assert.deepEqual(initPlans, []);
    assert.deepEqual(
      nodes.filter((n) => /^snapshot(s_legacy|_rows)$/.test(String(n["Relation Name"])))
        .map((n) => [n["Node Type"], n["Relation Name"], n["Index Name"], n["Scan Direction"]]),
      [["Index Scan", "snapshot_rows", "snapshot_rows_series_id", "Backward"]],
      narrowAll,
    );
    const byPair = (rs: typeof rows) => rs.map((r) => JSON.stringify(r)).sort();
    assert.deepEqual(byPair((await narrow.execute(db.kysely)).rows), byPair(rows));
  },
);
