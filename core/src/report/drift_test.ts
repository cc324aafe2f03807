/**
 * The `configuration-drift` annex of a finished run (docs/polling.md "Diffs and change history"): what changed on the
 * lab's devices between the start and the end of the run, without the volatile paths that move every poll.
 */
import assert from "node:assert/strict";
import { dbTest } from "../../harness/db.ts";
import { testServices } from "../../harness/app.ts";
import {
  fixtureAdapter,
  fixtureModules,
  fixturePlugin,
  startFixtureDevice,
} from "../../testing/fixture_modules.ts";
import { verifyReport } from "./verify.ts";
import type { ReportData } from "./types.ts";
import { fetchReport, finishRun, register, snapshot, startRun } from "../../harness/runs_lab.ts";

/** The fixture plan, depending on the firewalls' NTP and decrypt configuration as the catalog's plans do. */
const dependingPlugin = {
  ...fixturePlugin,
  planCatalog: {
    ...fixturePlugin.planCatalog,
    plans: fixturePlugin.planCatalog.plans.map((p) => ({
      ...p,
      dependsOn: [{ deviceRole: "ngfw", labels: ["ntp_config", "decrypt_policy"] }],
    })),
  },
};

dbTest("changing NTP and decryption during a run shows both as drift, and not the uptime", async (db) => {
  const mods = fixtureModules();
  mods.adapters[0] = {
    ...mods.adapters[0]!,
    module: { ...fixtureAdapter, volatilePaths: { system_info: ["/uptime"] } },
  };
  mods.plugins[0] = { ...mods.plugins[0]!, module: dependingPlugin };
  const { app, auth } = await testServices(db, mods);
  const dev = await startFixtureDevice();
  try {
    const system = (uptime: number) => ({ model: "FX-1000", serial: "FX123", version: "1.2.3", uptime });
    const deviceId = await register(app, auth, "fixture-fw", "fw-drift-1", {
      sim: dev.sim,
      credentials: { username: "admin", password: dev.state.password },
    });
    dev.state.system = system(100);
    await snapshot(app, auth, deviceId);
    const run = await startRun(app, auth, { planIdentifier: "fixture-plan" });
    dev.state.system = system(160);
    await snapshot(app, auth, deviceId);
    dev.state.ntp = ["10.0.0.9"];
    dev.state.decryptRules = 0;
    dev.state.system = system(220);
    await snapshot(app, auth, deviceId);
    await finishRun(app, auth, run.executionId, { outcome: "passed", results: { latencySamplesMs: [5] } });

    const report = JSON.parse((await fetchReport(app, auth, run.executionId)).text) as ReportData;
    assert.equal((await verifyReport(report)).ok, true);
    const annex = report.annexes.find((a) => a.id === "configuration-drift");
    assert.ok(annex, "the report has a configuration-drift annex");
    const drift = JSON.parse(annex.body);
    assert.equal(drift.compared, 3);
    assert.deepEqual(drift.notCompared, []);
    assert.deepEqual(
      drift.drift.map((d: { endpointLabel: string; deviceId: string }) => [d.deviceId, d.endpointLabel]),
      [[deviceId, "ntp_config"], [deviceId, "decrypt_policy"]],
    );
    const [ntp, decrypt] = drift.drift;
    assert.deepEqual(ntp.changes, [{
      op: "replace",
      path: "/servers/0",
      before: "10.0.0.1",
      after: "10.0.0.9",
    }]);
    assert.equal(ntp.deviceHostname, "fw-drift-1");
    assert.deepEqual(decrypt.changes.map((c: { op: string; path: string }) => [c.op, c.path]), [
      ["remove", "/rules/0"],
    ]);
    assert.notEqual(ntp.startSnapshotId, ntp.endSnapshotId);

    // The plan depends on both labels: the verdict is invalid with a configuration-drift reason naming them.
    assert.equal(report.verdict?.rule, "dutlab-verdict-2");
    assert.equal(report.verdict?.value, "invalid");
    const reason = report.verdict?.reasons.find((r) => r.input === "configuration-drift");
    assert.equal(reason?.effect, "invalid");
    assert.match(
      reason!.detail,
      /fw-drift-1 ntp_config \(1 change\), fw-drift-1 decrypt_policy \(1 change\)/,
    );
    assert.doesNotMatch(reason!.detail, /system_info|uptime/);

    // The printed report reads the drift as a table: one row per change, the uptime nowhere.
    const page = await (await app.request(`/runs/${run.executionId}/report`, { headers: auth })).text();
    // The cover's verdict table shows the reason like the others.
    assert.match(
      page,
      /Configuration drift during the run<\/td>\s*<td>\s*<span class="chip [a-z]+">INVALID<\/span>/,
    );
    const table = page.slice(page.indexOf('data-annex-table="configuration-drift"'));
    assert.ok(table.length < page.length, "the page has the drift table");
    const rows = table.slice(0, table.indexOf("</table>")).split("<tr").slice(2);
    assert.equal(rows.length, 2);
    assert.match(rows[0]!, /fw-drift-1.*ntp_config.*\/servers\/0.*10\.0\.0\.1.*10\.0\.0\.9/s);
    assert.match(rows[1]!, /decrypt_policy.*\/rules\/0.*\(none\)/s);
    assert.doesNotMatch(table.slice(0, table.indexOf("</table>")), /uptime/);
  } finally {
    await dev.sim.close();
  }
});

dbTest("a run during which nothing but volatile paths moved has no drift", async (db) => {
  const mods = fixtureModules();
  mods.adapters[0] = {
    ...mods.adapters[0]!,
    module: { ...fixtureAdapter, volatilePaths: { system_info: ["/uptime"] } },
  };
  const { app, auth } = await testServices(db, mods);
  const dev = await startFixtureDevice();
  try {
    const deviceId = await register(app, auth, "fixture-fw", "fw-drift-2", {
      sim: dev.sim,
      credentials: { username: "admin", password: dev.state.password },
    });
    dev.state.system = { model: "FX-1000", uptime: 1 };
    await snapshot(app, auth, deviceId);
    const run = await startRun(app, auth, { planIdentifier: "fixture-plan" });
    dev.state.system = { model: "FX-1000", uptime: 2 };
    await snapshot(app, auth, deviceId);
    await finishRun(app, auth, run.executionId, { outcome: "passed", results: { latencySamplesMs: [5] } });
    const report = JSON.parse((await fetchReport(app, auth, run.executionId)).text) as ReportData;
    const drift = JSON.parse(report.annexes.find((a) => a.id === "configuration-drift")!.body);
    assert.deepEqual([drift.compared, drift.drift], [3, []]);
    assert.deepEqual(
      report.verdict?.reasons.find((r) => r.input === "configuration-drift"),
      {
        input: "configuration-drift",
        effect: "pass",
        detail: "No configuration drift between run start and end",
      },
    );
  } finally {
    await dev.sim.close();
  }
});
