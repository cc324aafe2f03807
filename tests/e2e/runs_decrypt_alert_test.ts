import assert from "node:assert/strict";
import { dbTest } from "@dutlab/core/testing";
import { testServices } from "../../core/harness/app.ts";
import { startSimulatedDevice as startNgfwA } from "@dutlab/adapter-vendor-a-ngfw/sim";
import { startSimulatedDevice as startNgfwB } from "@dutlab/adapter-vendor-b-ngfw/sim";
import { modules } from "../../modules.gen.ts";
import type { DecryptAlert, ReportData } from "../../core/harness/core.ts";
import { verifyReport } from "../../core/harness/core.ts";
import {
  type App,
  type Auth,
  closeAll,
  fetchReport,
  finishRun,
  register,
  snapshot,
  startRun,
} from "../../core/harness/runs_lab.ts";

const PLAN = "ngfw-throughput-decrypt-on";

/** The id of the newest `decrypt_policy` snapshot of a device. */
async function latestDecryptSnapshot(app: App, auth: Auth, deviceId: string): Promise<string> {
  const res = await app.request(
    `/api/admin/dut/snapshots?deviceId=${deviceId}&endpointLabel=decrypt_policy&limit=1`,
    { headers: auth },
  );
  return (await res.json()).snapshots[0].id;
}

const alertsOf = async (app: App, auth: Auth, id: string): Promise<DecryptAlert[]> =>
  (await (await app.request(`/api/test-runs/${id}`, { headers: auth })).json()).alerts;

dbTest(
  "a firewall's decrypt change during a run raises TLSDecryptModeChanged and invalidates the SLO verdict",
  async (db) => {
    const { app, auth } = await testServices(db, modules);
    const fwA = await startNgfwA();
    const fwB = await startNgfwB();
    try {
      fwA.setDecrypt(true);
      const a = await register(app, auth, "vendor-a-ngfw", "fw-a", fwA);
      const b = await register(app, auth, "vendor-b-ngfw", "fw-b", fwB);
      await snapshot(app, auth, a);
      await snapshot(app, auth, b);

      const run = await startRun(app, auth, { planIdentifier: PLAN });
      const lab = run.labAtStart as { tlsDecrypt: string; decrypt: Record<string, { state: string }> };
      assert.equal(lab.decrypt[a]!.state, "on");
      assert.equal(lab.decrypt[b]!.state, "on");
      assert.equal(lab.tlsDecrypt, "on");

      // Polls with no change raise nothing.
      await snapshot(app, auth, a);
      await snapshot(app, auth, b);
      assert.deepEqual(await alertsOf(app, auth, run.executionId), []);

      // fw-a stops decrypting: one alert, at the poll that saw it, citing the decrypt_policy snapshot.
      fwA.setDecrypt(false);
      const poll = await snapshot(app, auth, a);
      const first = await alertsOf(app, auth, run.executionId);
      assert.deepEqual(first, [{
        name: "TLSDecryptModeChanged",
        at: poll.lastPollAt,
        deviceId: a,
        deviceHostname: "fw-a",
        from: "on",
        to: "off",
        snapshotId: await latestDecryptSnapshot(app, auth, a),
      }]);
      await snapshot(app, auth, a); // still off: no second alert for the same state
      assert.equal((await alertsOf(app, auth, run.executionId)).length, 1);

      // fw-a back on, fw-b off: each change is one more alert, from the last known state.
      fwA.setDecrypt(true);
      await snapshot(app, auth, a);
      const policy = fwB.state.policies.find((p) => p.name === "lab-decrypt")!;
      policy["ssl-ssh-profile"] = "certificate-inspection";
      await snapshot(app, auth, b);
      const all = await alertsOf(app, auth, run.executionId);
      assert.deepEqual(all.map((x) => [x.deviceHostname, x.from, x.to]), [
        ["fw-a", "on", "off"],
        ["fw-a", "off", "on"],
        ["fw-b", "on", "off"],
      ]);

      // Latencies far under the 250 ms target: the verdict still is not a pass.
      await finishRun(app, auth, run.executionId, {
        outcome: "passed",
        results: { latencySamplesMs: [10, 11, 12, 13, 14] },
      });
      const { text } = await fetchReport(app, auth, run.executionId);
      const report = JSON.parse(text) as ReportData;
      assert.equal((await verifyReport(report)).ok, true);
      assert.equal(report.slo.observedP99Ms < report.slo.targetP99Ms, true);
      assert.equal(report.slo.errorBudgetBurnedPct, 0);
      assert.equal(report.slo.pass, false);
      assert.equal(report.verdict?.value, "invalid", "a decrypt alert cannot read as a pass");
      assert.equal(report.verdict?.reasons.find((r) => r.input === "decrypt-alerts")?.effect, "invalid");
      assert.match(
        report.slo.verdictNote ?? "",
        /^Results invalidated: TLS decryption changed during the run/,
      );
      for (const x of all) {
        assert.ok(report.slo.verdictNote!.includes(`${x.deviceHostname} ${x.from} to ${x.to} at ${x.at}`));
      }
      assert.deepEqual(report.tlsDecrypt, {
        required: "on",
        activeAtStart: "on",
        activeAtEnd: "mixed",
        alerts: all,
        resultsInvalidated: true,
      });
      assert.deepEqual(JSON.parse(report.annexes.find((x) => x.id === "decrypt-alerts")!.body), all);
      const linked = JSON.parse(report.annexes.find((x) => x.id === "snapshots")!.body) as Array<
        { snapshotId: string }
      >;
      for (const x of all) {
        assert.ok(linked.some((s) => s.snapshotId === x.snapshotId), "the alert's snapshot is annexed");
      }

      const page = await (await app.request(`/runs/${run.executionId}/report`, { headers: auth })).text();
      assert.ok(page.includes("SLO FAIL"));
      assert.ok(!page.includes("SLO PASS"));
      assert.ok(page.includes("TLSDecryptModeChanged"));
      assert.ok(page.includes("Changed during the run: results invalidated"));

      // After the run, changes raise nothing for it.
      fwA.setDecrypt(false);
      await snapshot(app, auth, a);
      assert.equal((await alertsOf(app, auth, run.executionId)).length, 3);
    } finally {
      await closeAll([fwA, fwB]);
    }
  },
);
