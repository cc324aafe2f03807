/**
 * Pre-flight against the real adapters' simulators and the real check catalog and plans (modules.gen.ts):
 * register each simulated device over the API, snapshot it, run pre-flight, drive each check to fail.
 */
import assert from "node:assert/strict";
import { type KyselyPlugin, sql } from "kysely";
import { dbTest, jsonReq, testServices } from "@dutlab/core/testing";
import type { Db } from "../core/src/db/open.ts";
import { payloadCache, runPreflight } from "../core/src/preflight/engine.ts";
import { RunService } from "../core/src/runs/service.ts";
import type { CheckResult, PreflightResult } from "../core/src/preflight/engine.ts";
import { defineCheck } from "@dutlab/core";
import { modules } from "../modules.gen.ts";
import { webSha256Hex } from "../core/testing/poller_lab.ts";
import type { LoadedModules } from "@dutlab/core/runtime";
import { startSimulatedDevice as startNgfwA } from "@dutlab/adapter-vendor-a-ngfw/sim";
import { startSimulatedDevice as startNgfwB } from "@dutlab/adapter-vendor-b-ngfw/sim";
import { startSimulatedDevice as startSwitch } from "@dutlab/adapter-vendor-a-switch/sim";
import { startSimulatedDevice as startBmc } from "@dutlab/adapter-vendor-a-bmc/sim";

const ON = "ngfw-throughput-decrypt-on";
const OFF = "ngfw-throughput-decrypt-off";

/** Which checks apply to which vendor (spec 4.9): 5 + 3 + 2 + 2 = 12 results for the four-device lab. */
const EXPECTED: Record<string, string[]> = {
  "vendor-a-ngfw": [
    "ngfw-deploy-clean",
    "ngfw-decrypt-state-matches-plan",
    "ntp-source-configured",
    "ngfw-ha-state-sane",
    "snapshot-fresh",
  ],
  "vendor-b-ngfw": ["ngfw-decrypt-state-matches-plan", "ntp-source-configured", "snapshot-fresh"],
  "vendor-a-switch": ["ntp-source-configured", "snapshot-fresh"],
  "vendor-a-bmc": ["ntp-source-configured", "snapshot-fresh"],
};

type Res = { status: number; body: PreflightResult };

/** The invariants every pre-flight answer keeps, whatever the lab's state. */
function assertConsistent({ status, body }: Res): void {
  const by = (s: CheckResult["status"]) => body.checks.filter((c) => c.status === s).length;
  assert.equal(body.checksRun, body.checks.length);
  assert.equal(body.checksRun, body.checksPassed + body.checksFailed + body.checksSkipped);
  assert.equal(body.checksPassed, by("pass"));
  assert.equal(body.checksFailed, by("fail") + by("error"));
  assert.equal(body.checksSkipped, by("skipped"));
  assert.equal(body.pass, body.checksRun > 0 && body.checksPassed === body.checksRun);
  assert.equal(status, body.pass ? 200 : 422);
  for (const c of body.checks) {
    assert.equal(c.pass, c.status === "pass", c.checkId);
    assert.equal(c.evidence === null, c.status === "skipped", `${c.checkId} on ${c.deviceHostname}`);
  }
  const head = `${body.checksPassed}/${body.checksRun} checks passed`;
  if (body.pass) assert.equal(body.summary, `${head} — ready for ${body.planIdentifier}`);
  else {
    assert.ok(body.summary.startsWith(`${head} — not ready for ${body.planIdentifier}: `), body.summary);
    if (body.checksRun > 0) {
      assert.match(
        body.summary,
        new RegExp(`: ${body.checksFailed} failed.*, ${body.checksSkipped} skipped$`),
      );
    }
  }
}

/** The four simulated devices, registered over the API ("self-signed": pinned on first connect). */
async function lab(db: Db, mods: LoadedModules = modules, opts: { snapshot?: boolean } = {}) {
  const { app, auth, svc } = await testServices(db, mods);
  const sims = {
    ngfwA: await startNgfwA(),
    ngfwB: await startNgfwB(),
    sw: await startSwitch(),
    bmc: await startBmc(),
  };
  sims.ngfwA.setDecrypt(true); // the FDM simulator starts with decryption off; vendor-b starts with it on
  const all = [sims.ngfwA, sims.ngfwB, sims.sw, sims.bmc];
  const ids = {} as Record<keyof typeof sims, string>;
  const hostnames = { ngfwA: "fw-a-1", ngfwB: "fw-b-1", sw: "sw-1", bmc: "bmc-1" };
  const vendors = {
    ngfwA: "vendor-a-ngfw",
    ngfwB: "vendor-b-ngfw",
    sw: "vendor-a-switch",
    bmc: "vendor-a-bmc",
  };
  for (const k of Object.keys(sims) as Array<keyof typeof sims>) {
    ids[k] = await register(hostnames[k], vendors[k], sims[k]);
  }

  async function register(hostname: string, vendor: string, sim: typeof all[number]): Promise<string> {
    // vendor-b is registered "insecure", the others "self-signed" (pinned on first connect).
    const tlsVerifyMode = vendor === "vendor-b-ngfw" ? "insecure" : "self-signed";
    const res = await app.request(
      "/api/admin/dut/devices",
      jsonReq("POST", {
        hostname,
        vendor,
        baseUrl: sim.sim.url,
        ...sim.credentials,
        tlsVerifyMode,
      }, auth),
    );
    assert.equal(res.status, 201, await res.clone().text());
    return (await res.json()).deviceId;
  }
  async function snapshot(id: string) {
    const res = await app.request(`/api/admin/dut/devices/${id}/snapshot`, jsonReq("POST", undefined, auth));
    const body = await res.json();
    assert.equal(res.status, 200);
    assert.equal(body.ok, true, JSON.stringify(body));
  }
  async function preflight(planIdentifier: string): Promise<Res> {
    const res = await app.request("/api/test-runs/preflight", jsonReq("POST", { planIdentifier }, auth));
    const r = { status: res.status, body: await res.json() as PreflightResult };
    assertConsistent(r);
    return r;
  }
  if (opts.snapshot !== false) { for (const id of Object.values(ids)) await snapshot(id); }
  return {
    app,
    auth,
    svc,
    sims,
    ids,
    register,
    snapshot,
    preflight,
    async [Symbol.asyncDispose]() {
      await Promise.allSettled(all.map((s) => s.close()));
    },
  };
}

const failing = (b: PreflightResult) =>
  b.checks.filter((c) => !c.pass).map((c) => `${c.checkId}@${c.deviceHostname}:${c.status}`).sort();

dbTest(
  "a lab in good state is ready for the decrypt-on plan and not for the decrypt-off plan",
  async (db) => {
    await using l = await lab(db);
    const on = await l.preflight(ON);
    assert.equal(on.status, 200, JSON.stringify(failing(on.body)));
    assert.equal(on.body.planIdentifier, ON);
    assert.equal(on.body.checksRun, 12);
    assert.equal(on.body.summary, `12/12 checks passed — ready for ${ON}`);
    const got = on.body.checks.map((c) => `${c.vendor} ${c.checkId}`).sort();
    const want = Object.entries(EXPECTED).flatMap(([v, ids]) => ids.map((id) => `${v} ${id}`)).sort();
    assert.deepEqual(got, want);
    const decrypt = on.body.checks.filter((c) => c.checkId === "ngfw-decrypt-state-matches-plan");
    assert.deepEqual(decrypt.map((c) => c.detail), [
      "the plan requires decrypt-on and 1 decrypt rule(s) are configured",
      "the plan requires decrypt-on and 1 decrypt rule(s) are configured",
    ]);

    const off = await l.preflight(OFF);
    assert.equal(off.status, 422);
    assert.equal(off.body.pass, false);
    assert.deepEqual(failing(off.body), [
      "ngfw-decrypt-state-matches-plan@fw-a-1:fail",
      "ngfw-decrypt-state-matches-plan@fw-b-1:fail",
    ]);
    assert.equal(off.body.summary, `10/12 checks passed — not ready for ${OFF}: 2 failed, 0 skipped`);
    for (const c of off.body.checks.filter((c) => !c.pass)) {
      assert.equal(c.detail, "the plan requires decrypt-off but 1 decrypt rule(s) are configured");
    }

    // The operator turns decryption off on both firewalls, re-snapshots: now the decrypt-off plan is ready.
    l.sims.ngfwA.setDecrypt(false);
    for (const p of l.sims.ngfwB.state.policies) p["ssl-ssh-profile"] = "certificate-inspection";
    await l.snapshot(l.ids.ngfwA);
    await l.snapshot(l.ids.ngfwB);
    assert.equal((await l.preflight(OFF)).status, 200);
    const on2 = await l.preflight(ON);
    assert.deepEqual(failing(on2.body), [
      "ngfw-decrypt-state-matches-plan@fw-a-1:fail",
      "ngfw-decrypt-state-matches-plan@fw-b-1:fail",
    ]);
    assert.ok(
      on2.body.checks.filter((c) => !c.pass).every((c) =>
        c.detail === "the plan requires decrypt-on but no decrypt rules are configured"
      ),
    );
  },
);

dbTest(
  "each check fails when the simulated lab drifts, and passes after the fix and a re-snapshot",
  async (db) => {
    await using l = await lab(db);
    const { ngfwA, ngfwB, sw, bmc } = l.sims;
    const ntpA = [...ngfwA.state.ntpServers];
    const ntpSw = [...sw.state.ntpProviders];
    const ntpBmc = bmc.state.ntpServers;
    /** [what changes, which device, the failures and detail expected, the fix] */
    const drifts: Array<{
      name: string;
      device: keyof typeof l.ids;
      breakIt(): void;
      fixIt(): void;
      fails: string[];
      detail: RegExp;
    }> = [
      {
        name: "a pending change",
        device: "ngfwA",
        breakIt: () => ngfwA.addPendingChange("accessrule", "lab-throughput-permit"),
        fixIt: () => ngfwA.deploy("DEPLOYED"),
        fails: ["ngfw-deploy-clean@fw-a-1:fail"],
        detail: /^deployment state DEPLOYED, 1 pending change\(s\); deploy or discard the pending changes$/,
      },
      {
        name: "a deployment still running",
        device: "ngfwA",
        breakIt: () => ngfwA.deploy("DEPLOYING"),
        fixIt: () => ngfwA.deploy("DEPLOYED"),
        fails: ["ngfw-deploy-clean@fw-a-1:fail"],
        detail: /^deployment state DEPLOYING, 0 pending change\(s\); expected DEPLOYED$/,
      },
      {
        name: "decrypt rules removed on vendor-a",
        device: "ngfwA",
        breakIt: () => ngfwA.setDecrypt(false),
        fixIt: () => ngfwA.setDecrypt(true),
        fails: ["ngfw-decrypt-state-matches-plan@fw-a-1:fail"],
        detail: /^the plan requires decrypt-on but no decrypt rules are configured$/,
      },
      {
        name: "deep inspection removed on vendor-b",
        device: "ngfwB",
        breakIt: () => ngfwB.state.policies.forEach((p) => p["ssl-ssh-profile"] = "no-inspection"),
        fixIt: () => ngfwB.state.policies[1]!["ssl-ssh-profile"] = "custom-deep-inspection",
        fails: ["ngfw-decrypt-state-matches-plan@fw-b-1:fail"],
        detail: /^the plan requires decrypt-on but no decrypt rules are configured$/,
      },
      {
        name: "NTP servers removed on vendor-a-ngfw",
        device: "ngfwA",
        breakIt: () => ngfwA.state.ntpServers = [],
        fixIt: () => ngfwA.state.ntpServers = [...ntpA],
        fails: ["ntp-source-configured@fw-a-1:fail"],
        detail: /^no time server is configured$/,
      },
      {
        name: "NTP sync off on vendor-b-ngfw",
        device: "ngfwB",
        breakIt: () => ngfwB.state.ntp.ntpsync = "disable",
        fixIt: () => ngfwB.state.ntp.ntpsync = "enable",
        fails: ["ntp-source-configured@fw-b-1:fail"],
        detail: /^no time server is configured$/,
      },
      {
        name: "NTP providers removed on the switch",
        device: "sw",
        breakIt: () => sw.state.ntpProviders = [],
        fixIt: () => sw.state.ntpProviders = [...ntpSw],
        fails: ["ntp-source-configured@sw-1:fail"],
        detail: /^no time server is configured$/,
      },
      {
        name: "NTP servers removed on the BMC",
        device: "bmc",
        breakIt: () => bmc.state.ntpServers = [],
        fixIt: () => bmc.state.ntpServers = ntpBmc,
        fails: ["ntp-source-configured@bmc-1:fail"],
        detail: /^no time server is configured$/,
      },
      {
        name: "an HA node failed",
        device: "ngfwA",
        breakIt: () => ngfwA.state.ha.nodeState = "HA_FAILED_NODE",
        fixIt: () => ngfwA.state.ha.nodeState = "HA_ACTIVE_NODE",
        fails: ["ngfw-ha-state-sane@fw-a-1:fail"],
        detail: /^HA state HA_FAILED_NODE maps to no catalog state \(expected one of ACTIVE, STANDBY_READY/,
      },
    ];
    for (const d of drifts) {
      d.breakIt();
      await l.snapshot(l.ids[d.device]);
      const bad = await l.preflight(ON);
      assert.equal(bad.status, 422, d.name);
      assert.deepEqual(failing(bad.body), d.fails, d.name);
      const f = bad.body.checks.find((c) => !c.pass)!;
      assert.match(f.detail, d.detail, d.name);
      assert.equal(f.deviceId, l.ids[d.device]);
      assert.equal(
        bad.body.summary,
        `11/12 checks passed — not ready for ${ON}: 1 failed, 0 skipped`,
        d.name,
      );
      d.fixIt();
      await l.snapshot(l.ids[d.device]);
      const good = await l.preflight(ON);
      assert.equal(good.status, 200, `${d.name} fixed: ${failing(good.body)}`);
    }
    // The HA state the fix left behind is reported with the adapter's mapping.
    const ha = (await l.preflight(ON)).body.checks.find((c) => c.checkId === "ngfw-ha-state-sane")!;
    assert.equal(ha.detail, "HA state HA_ACTIVE_NODE (maps to ACTIVE)");
  },
);

dbTest("a device with no snapshots gets skipped results and the lab is not ready", async (db) => {
  await using l = await lab(db, modules, { snapshot: false });
  const nothing = await l.preflight(ON);
  assert.equal(nothing.status, 422);
  assert.equal(nothing.body.checksSkipped, 12);
  assert.equal(nothing.body.summary, `0/12 checks passed — not ready for ${ON}: 0 failed, 12 skipped`);

  for (const k of ["ngfwA", "ngfwB", "sw"] as const) await l.snapshot(l.ids[k]);
  const r = await l.preflight(ON);
  assert.equal(r.status, 422, "skipped checks and no failures: not ready");
  assert.equal(r.body.pass, false);
  assert.equal(r.body.checksFailed, 0);
  assert.equal(r.body.checksSkipped, 2);
  assert.equal(r.body.summary, `10/12 checks passed — not ready for ${ON}: 0 failed, 2 skipped`);
  const skipped = r.body.checks.filter((c) => c.status === "skipped");
  assert.deepEqual(skipped.map((c) => c.checkId).sort(), ["ntp-source-configured", "snapshot-fresh"]);
  for (const c of skipped) {
    assert.equal(c.deviceId, l.ids.bmc);
    assert.equal(c.pass, false);
    assert.equal(c.evidence, null);
    assert.match(c.detail, /^no (ntp_config|system_info) snapshot of this device yet/);
  }
  await l.snapshot(l.ids.bmc);
  assert.equal((await l.preflight(ON)).status, 200);
});

dbTest("an old system_info snapshot fails snapshot-fresh", async (db) => {
  await using l = await lab(db);
  // Snapshots are append-only (UPDATE refused), so the old reading is a row of its own: the switch's
  // system_info as collected two hours ago, made the latest of its label the way the poll cycle does.
  const two = new Date(Date.now() - 2 * 3600_000);
  const [cur] = await db.kysely.selectFrom("snapshots").selectAll()
    .where("device_id", "=", l.ids.sw).where("endpoint_label", "=", "system_info").execute();
  assert.ok(cur, "the switch has a system_info snapshot");
  const { id } = await db.kysely.insertInto("snapshots").values({
    device_id: cur.device_id,
    endpoint_label: "system_info",
    payload_sha256: cur.payload_sha256,
    collected_at: two,
    test_run_execution_id: null,
    adapter_module: cur.adapter_module,
    adapter_version: cur.adapter_version,
  }).returning(sql<string>`id::text`.as("id")).executeTakeFirstOrThrow();
  await db.kysely.updateTable("snapshot_latest").set({ snapshot_id: id })
    .where("device_id", "=", l.ids.sw).where("endpoint_label", "=", "system_info").execute();

  const r = await l.preflight(ON);
  assert.equal(r.status, 422);
  assert.deepEqual(failing(r.body), ["snapshot-fresh@sw-1:fail"]);
  const c = r.body.checks.find((c) => !c.pass)!;
  assert.deepEqual(c.evidence, {
    snapshotId: id,
    payloadSha256: cur.payload_sha256,
    collectedAt: two.toISOString(),
  });
  assert.match(c.detail, /^latest system_info snapshot is 120 min old \(collected .+; limit 60 min\)/);

  // A fresh poll makes it pass again.
  await l.snapshot(l.ids.sw);
  assert.equal((await l.preflight(ON)).status, 200);

  // The same lab evaluated 61 minutes from now: every device's snapshots have gone stale.
  const later = await runPreflight(
    db.kysely,
    l.svc.registry,
    l.svc.registry.plan(ON)!,
    new Date(Date.now() + 61 * 60_000),
  );
  assert.deepEqual(
    failing(later).map((f) => f.split("@")[0]),
    ["snapshot-fresh", "snapshot-fresh", "snapshot-fresh", "snapshot-fresh"],
  );
  assert.equal(later.checksRun, 12);
});

dbTest("disabled devices are left out of pre-flight", async (db) => {
  await using l = await lab(db);
  l.sims.bmc.state.ntpServers = [];
  await l.snapshot(l.ids.bmc);
  assert.deepEqual(failing((await l.preflight(ON)).body), ["ntp-source-configured@bmc-1:fail"]);
  const patch = await l.app.request(
    `/api/admin/dut/devices/${l.ids.bmc}`,
    jsonReq("PATCH", { enabled: false }, l.auth),
  );
  assert.equal(patch.status, 200);
  const r = await l.preflight(ON);
  assert.equal(r.status, 200);
  assert.equal(r.body.checksRun, 10);
  assert.ok(r.body.checks.every((c) => c.deviceId !== l.ids.bmc));
  // With every device disabled no check runs: not ready.
  for (const id of Object.values(l.ids)) {
    await l.app.request(`/api/admin/dut/devices/${id}`, jsonReq("PATCH", { enabled: false }, l.auth));
  }
  const none = await l.preflight(ON);
  assert.equal(none.status, 422);
  assert.equal(none.body.checksRun, 0);
  assert.equal(
    none.body.summary,
    `0/0 checks passed — not ready for ${ON}: no enabled device takes part in the plan`,
  );
});

dbTest("evidence cites exactly what the snapshot listing returns for that snapshot", async (db) => {
  await using l = await lab(db);
  // A second poll: evidence must cite the newest snapshot, not the first one.
  for (const id of Object.values(l.ids)) await l.snapshot(id);
  const r = await l.preflight(ON);
  for (const c of r.body.checks) {
    const label = {
      "ngfw-deploy-clean": "deploy_status",
      "ngfw-decrypt-state-matches-plan": "decrypt_policy",
      "ntp-source-configured": "ntp_config",
      "ngfw-ha-state-sane": "ha_status",
      "snapshot-fresh": "system_info",
    }[
      c.checkId
    ];
    const res = await l.app.request(
      `/api/admin/dut/snapshots?deviceId=${c.deviceId}&endpointLabel=${label}`,
      { headers: l.auth },
    );
    const { snapshots } = await res.json();
    assert.equal(snapshots.length, 2, `${c.checkId} on ${c.deviceHostname}`);
    const [newest] = snapshots;
    assert.deepEqual(c.evidence, {
      snapshotId: newest.id,
      payloadSha256: newest.payloadSha256,
      collectedAt: newest.collectedAt,
    });
  }
});

dbTest(
  "a check that throws or meets an unreadable payload gives an error result, never a 500",
  async (db) => {
    const boom = defineCheck({
      id: "lab-boom",
      coreVersion: "^1.0.0",
      description: "A check with a bug",
      label: "system_info",
      appliesTo: (d) => d.vendor === "vendor-a-switch",
      evaluate: () => {
        throw new TypeError("Cannot read properties of undefined (reading 'model')");
      },
    });
    const mods: LoadedModules = {
      ...modules,
      checks: [...modules.checks, { name: "@dutlab/check-lab-boom", version: "0.0.1", module: boom }],
    };
    await using l = await lab(db, mods);
    // The BMC's latest ntp_config replaced by a payload its adapter cannot read (a DB-level forgery).
    const junk = '{"NTP":"nope"}';
    const hex = await webSha256Hex(junk);
    await db.kysely.insertInto("snapshot_payloads").values({
      sha256: hex,
      payload: junk,
      size_bytes: junk.length,
    })
      .execute();
    const { id } = await db.kysely.insertInto("snapshots").values({
      device_id: l.ids.bmc,
      endpoint_label: "ntp_config",
      payload_sha256: hex,
      collected_at: new Date(),
      test_run_execution_id: null,
      adapter_module: "@dutlab/adapter-vendor-a-bmc",
      adapter_version: "1.0.0",
    }).returning(sql<string>`id::text`.as("id")).executeTakeFirstOrThrow();
    await db.kysely.updateTable("snapshot_latest").set({ snapshot_id: id })
      .where("device_id", "=", l.ids.bmc).where("endpoint_label", "=", "ntp_config").execute();

    const r = await l.preflight(ON);
    assert.equal(r.status, 422);
    assert.deepEqual(failing(r.body), ["lab-boom@sw-1:error", "ntp-source-configured@bmc-1:error"]);
    const [b, n] = r.body.checks.filter((c) => !c.pass).sort((x, y) => x.checkId.localeCompare(y.checkId));
    assert.ok(b && n, "two failing checks");
    assert.equal(
      b.detail,
      "check error: could not evaluate the system_info payload (Cannot read properties of undefined (reading 'model'))",
    );
    assert.match(
      n.detail,
      /^check error: could not evaluate the ntp_config payload \(.*ManagerNetworkProtocol/,
    );
    assert.equal(n.evidence?.snapshotId, id);
    assert.equal(
      r.body.summary,
      `11/13 checks passed — not ready for ${ON}: 2 failed (2 could not be evaluated), 0 skipped`,
    );
  },
);

/** Every row of every table, to compare before and after. */
async function dump(db: Db) {
  const out: Record<string, unknown[]> = {};
  for (
    const t of ["devices", "snapshot_payloads", "snapshots", "snapshot_latest", "test_runs", "run_alerts"]
  ) {
    out[t] =
      (await sql<Record<string, unknown>>`select * from ${sql.table(t)} order by 1, 2`.execute(db.kysely))
        .rows.map((r) => JSON.parse(JSON.stringify(r)));
  }
  return out;
}

dbTest("pre-flight writes nothing and contacts no device", async (db) => {
  await using l = await lab(db);
  l.sims.ngfwA.state.ha.nodeState = "HA_FAILED_NODE"; // a device state pre-flight must not pick up
  const all = Object.values(l.sims);
  const requests = all.map((s) => s.sim.requests.length);
  const before = await dump(db);
  assert.ok(before.snapshots!.length >= 4 * 7);
  const results = [await l.preflight(ON), await l.preflight(OFF), await l.preflight(ON)];
  const unknown = await l.app.request(
    "/api/test-runs/preflight",
    jsonReq("POST", { planIdentifier: "x" }, l.auth),
  );
  assert.equal(unknown.status, 404);
  assert.deepEqual(await dump(db), before, "no row added, changed or removed in any table");
  assert.deepEqual(all.map((s) => s.sim.requests.length), requests, "no request reached any simulator");
  assert.equal(results[0]!.status, 200, "the HA change on the device is not seen without a snapshot");
});

dbTest(
  "pre-flight reads with at most three queries, whatever the number of devices and checks",
  async (db) => {
    payloadCache.clear();
    await using l = await lab(db);
    const queries: string[] = [];
    const counter: KyselyPlugin = {
      transformQuery: (a) => (queries.push(a.node.kind), a.node),
      transformResult: (a) => Promise.resolve(a.result),
    };
    const plan = l.svc.registry.plan(ON)!;
    const counted = db.kysely.withPlugin(counter);
    const four = await runPreflight(counted, l.svc.registry, plan);
    assert.equal(four.checksRun, 12);
    // The enabled devices, the latest snapshots of the pairs a check applies to, then their payloads.
    assert.deepEqual(queries, ["SelectQueryNode", "RawNode", "RawNode"]);
    // Again: every payload is in the payload cache now, so none is read.
    queries.length = 0;
    assert.deepEqual(await runPreflight(counted, l.svc.registry, plan, new Date(four.ranAt)), four);
    assert.deepEqual(queries, ["SelectQueryNode", "RawNode"]);

    // Four more devices (the same simulators under other names), all polled: still three queries.
    const more = {
      ngfwA: "vendor-a-ngfw",
      ngfwB: "vendor-b-ngfw",
      sw: "vendor-a-switch",
      bmc: "vendor-a-bmc",
    };
    for (const [k, vendor] of Object.entries(more) as Array<[keyof typeof more, string]>) {
      const id = await l.register(`${vendor}-2`, vendor, l.sims[k]);
      await l.snapshot(id);
    }
    queries.length = 0;
    const eight = await runPreflight(counted, l.svc.registry, plan);
    assert.equal(eight.checksRun, 24);
    assert.equal(eight.pass, true, JSON.stringify(failing(eight)));
    assert.ok(queries.length <= 3, queries.join(", "));
    assert.deepEqual(queries.slice(0, 2), ["SelectQueryNode", "RawNode"]);
  },
);

dbTest("the server-health plan adds the opt-in BMC checks: power on and health OK", async (db) => {
  const HEALTH = "ngfw-throughput-decrypt-on-server-health";
  await using l = await lab(db);
  const ok = await l.preflight(HEALTH);
  assert.equal(ok.status, 200, JSON.stringify(failing(ok.body)));
  assert.equal(ok.body.summary, `14/14 checks passed — ready for ${HEALTH}`);
  const bmc = ok.body.checks.filter((c) => c.checkId.startsWith("bmc-"));
  assert.deepEqual(bmc.map((c) => [c.checkId, c.deviceHostname, c.vendor]), [
    ["bmc-health-ok", "bmc-1", "vendor-a-bmc"],
    ["bmc-power-on", "bmc-1", "vendor-a-bmc"],
  ]);
  assert.match(bmc[0]!.detail, /^health OK: ComputerSystem \S+, Chassis \S+, Manager \S+$/);
  assert.equal(bmc[1]!.detail, "system power state On");
  // The other plans do not run them (opt-in): still 12 checks.
  assert.equal((await l.preflight(ON)).body.checksRun, 12);

  l.sims.bmc.state.powerState = "Off";
  l.sims.bmc.state.health = "Warning";
  await l.snapshot(l.ids.bmc);
  const bad = await l.preflight(HEALTH);
  assert.equal(bad.status, 422);
  assert.deepEqual(failing(bad.body), ["bmc-health-ok@bmc-1:fail", "bmc-power-on@bmc-1:fail"]);
  const [health, power] = bad.body.checks.filter((c) => c.checkId.startsWith("bmc-"));
  assert.ok(health && power, "two BMC check results");
  assert.match(health.detail, /^ComputerSystem \S+ health is Warning \(expected OK\)$/);
  assert.equal(power.detail, "system power state Off (expected On)");
  assert.equal((await l.preflight(ON)).status, 200, "the decrypt-on plan does not look at server health");
});

dbTest(
  "a run's start reads the lab once for its pre-flight and its lab state, parsing each payload at most once",
  async (db) => {
    payloadCache.clear();
    await using l = await lab(db);
    const texts = new Set(
      (await sql<{ payload: string }>`select payload from snapshot_payloads`.execute(db.kysely)).rows
        .map((r) => r.payload),
    );
    const queries: string[] = [];
    const counter: KyselyPlugin = {
      transformQuery: (a) => (queries.push(a.node.kind), a.node),
      transformResult: (a) => Promise.resolve(a.result),
    };
    const runs = new RunService(db.kysely.withPlugin(counter), l.svc.registry, "LAB-INTERNAL");
    const parsed = new Map<string, number>();
    const parse = JSON.parse;
    JSON.parse = ((text: string, reviver?: (k: string, v: unknown) => unknown) => {
      if (texts.has(text)) parsed.set(text, (parsed.get(text) ?? 0) + 1);
      return parse(text, reviver);
    }) as typeof JSON.parse;
    let run;
    try {
      run = await runs.start({ planIdentifier: ON });
    } finally {
      JSON.parse = parse;
    }
    // One read: the enabled devices, the latest snapshots (the checks' labels and the lab state's), the
    // payloads; no second read of devices or snapshots for the lab state.
    assert.deepEqual(queries.slice(0, queries.indexOf("InsertQueryNode") + 1), [
      "SelectQueryNode", // no active run
      "SelectQueryNode", // the enabled devices
      "RawNode", // the latest snapshot of each pair a check or the lab state reads
      "RawNode", // their payloads
      "InsertQueryNode", // the run
    ]);
    assert.ok(parsed.size > 0, "the payloads were parsed");
    for (const [text, n] of parsed) assert.equal(n, 1, `parsed ${n} times: ${text.slice(0, 80)}`);
    // The lab state read from it: both firewalls' decrypt state and every device's inventory.
    const row = await db.kysely.selectFrom("test_runs").select("start_state_json")
      .where("execution_id", "=", run.executionId).executeTakeFirstOrThrow();
    const state = typeof row.start_state_json === "string"
      ? JSON.parse(row.start_state_json)
      : row.start_state_json;
    assert.deepEqual(
      Object.values(state.decrypt as Record<string, { state: string }>).map((d) => d.state).sort(),
      ["on", "on"],
    );
    assert.equal(state.devices.length, 4);
    assert.equal(run.preflightAtStart.pass, true, JSON.stringify(run.preflightAtStart));
  },
);
