import assert from "node:assert/strict";
import { dbTest } from "../../harness/db.ts";
import { testServices } from "../../harness/app.ts";
import { defineAdapter } from "../../mod.ts";
import { fixtureAdapter, fixtureModules, startFixtureDevice } from "../../testing/fixture_modules.ts";
import type { ReportData } from "./types.ts";
import { fetchReport, finishRun, register, snapshot, startRun } from "../../harness/runs_lab.ts";

/** The fixture firewall as an older adapter release would be: no inventory fact. */
const withoutInventory = defineAdapter({
  ...fixtureAdapter,
  vendorKey: "fixture-fw-noinv",
  inventoryLabel: undefined,
  facts: { ...fixtureAdapter.facts, inventory: undefined },
});

dbTest("the report names the lab, the customer and each device's model, software and serial", async (db) => {
  const mods = fixtureModules({
    adapters: [{ name: "@dutlab/adapter-fixture-fw-noinv", version: "0.0.1", module: withoutInventory }],
  });
  const { app, auth } = await testServices(db, mods, { DUT_LAB_NAME: "Lab Øst, rack B" });
  const devs = await Promise.all([1, 2, 3, 4].map(() => startFixtureDevice()));
  try {
    const creds = (i: number) => ({
      sim: devs[i]!.sim,
      credentials: { username: "admin", password: "fixture-pass" },
    });
    const ok = await register(app, auth, "fixture-fw", "fw-ok", creds(0));
    const broken = await register(app, auth, "fixture-fw", "fw-broken", creds(1));
    const never = await register(app, auth, "fixture-fw", "fw-never-polled", creds(2));
    const old = await register(app, auth, "fixture-fw-noinv", "fw-old-adapter", creds(3));
    devs[1]!.state.system = { model: 42 };
    for (const id of [ok, broken, old]) await snapshot(app, auth, id);

    const run = await startRun(app, auth, { planIdentifier: "fixture-plan", customer: "ACME Networks" });
    assert.equal(run.customer, "ACME Networks");
    assert.equal(run.labName, "Lab Øst, rack B");
    await finishRun(app, auth, run.executionId, { outcome: "passed", results: { latencySamplesMs: [5] } });
    const r = JSON.parse((await fetchReport(app, auth, run.executionId)).text) as ReportData;
    assert.equal(r.license.holder, "ACME Networks");
    assert.equal(r.license.issuer, "Lab Øst, rack B");
    assert.ok(
      r.license.restrictions.en.includes(
        "issued by Lab Øst, rack B under licence LAB-INTERNAL to ACME Networks",
      ),
    );
    const inv = r.topology.inventory!;
    assert.deepEqual(
      { ...inv[ok], snapshotId: undefined, payloadSha256: undefined },
      {
        status: "read",
        model: "FX-1000",
        softwareVersion: "1.2.3",
        serialNumber: "FX123",
        snapshotId: undefined,
        payloadSha256: undefined,
      },
    );
    assert.match(inv[ok]!.payloadSha256!, /^[0-9a-f]{64}$/);
    assert.equal(inv[broken]!.status, "unreadable");
    assert.equal(inv[broken]!.model, null);
    assert.equal(inv[never]!.status, "no-snapshot");
    assert.equal(inv[old]!.status, "not-supported");
    // The API view of the finished run says the same (read from the report).
    const view = await (await app.request(`/api/test-runs/${run.executionId}`, { headers: auth })).json();
    assert.equal(view.customer, "ACME Networks");
    assert.deepEqual(view.labAtStart.inventory, inv);
  } finally {
    await Promise.allSettled(devs.map((d) => d.sim.close()));
  }
});
