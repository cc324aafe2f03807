// NetBox through the API (issue 50): from-netbox → lab plan → lab apply; a re-sync is an empty plan; two
// filters at once select exactly NetBox's own answer; unmapped devices listed; a device gone from NetBox is
// pruned only with the prune flag; the provenance recorded; NetBox's refusals as 502 naming the object; the
// journal write-back per device, its failures kept and retried. Both backends.
import assert from "node:assert/strict";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";
import { generatedDevices, PEER_TOKEN, startNetBoxPeer } from "../../../tools/netbox_peer.ts";
import { netboxJournalWorker } from "../runtime/services.ts";

const CANARY = "canary-Pw-5b1e-netbox";
const MAPPING = {
  apiVersion: "dutlab/v1",
  kind: "NetBoxMapping",
  lab: "netbox",
  vendor: [{ match: { manufacturer: "vendor-a" }, vendor: "fixture-fw" }, {
    match: { platform: "vendor-b-ngfw" },
    vendor: "fixture-fw",
  }],
  managementUrl: { from: "template", template: "https://{name}.lab.example:8443" },
  rules: [{ match: {}, credential: "admin" }, { match: { role: "firewall" }, pollIntervalSeconds: 60 }],
  credentials: { admin: { username: "admin", password: "env:NETBOX_LAB_PASSWORD" } },
};

async function setup(db: Parameters<Parameters<typeof dbTest>[1]>[0]) {
  const t = await testServices(db, fixtureModules());
  const peer = await startNetBoxPeer({ devices: generatedDevices(30) });
  const post = async (path: string, body: unknown) => {
    const res = await t.app.request(path, jsonReq("POST", body, t.auth));
    const text = await res.text();
    assert.ok(!text.includes(CANARY) && !text.includes(PEER_TOKEN), `a secret is in the answer of ${path}`);
    return { status: res.status, body: JSON.parse(text) };
  };
  const netbox = { url: peer.url, token: PEER_TOKEN };
  const sync = (filters: Array<{ name: string; value: string }> = []) =>
    post("/api/admin/dut/lab/from-netbox", { netbox, filters, mapping: MAPPING });
  const plan = (lab: unknown, extra = {}) =>
    post("/api/admin/dut/lab/plan", { lab, secrets: { admin: CANARY }, ...extra });
  const apply = async (lab: unknown) => {
    const p = await plan(lab);
    return post("/api/admin/dut/lab/apply", {
      lab,
      secrets: { admin: CANARY },
      expectedGeneration: p.body.generation,
      planHash: p.body.planHash,
    });
  };
  return { ...t, peer, post, sync, plan, apply, netbox };
}

dbTest(
  "from-netbox → plan → apply; a re-sync plans nothing; unmapped listed; prune only with the flag",
  async (db) => {
    const t = await setup(db);
    try {
      const s = await t.sync();
      assert.equal(s.status, 200, JSON.stringify(s.body));
      // vendor-c-ngfw, vendor-a-switch and vendor-a-bmc: vendor-a-* by manufacturer, vendor-c has no rule.
      assert.equal(s.body.lab.devices.length, 24);
      assert.equal(s.body.unmapped.length, 6);
      assert.ok(
        s.body.unmapped.every((u: { reason: string }) =>
          /no vendor rule covers it \(platform vendor-c-ngfw/.test(u.reason)
        ),
      );
      assert.equal(s.body.provenance.netboxVersion, "4.5.2");
      const p = await t.plan(s.body.lab);
      assert.equal(p.status, 200, JSON.stringify(p.body));
      assert.equal(p.body.summary.create, 24);
      const a = await t.apply(s.body.lab);
      assert.equal(a.status, 200, JSON.stringify(a.body));
      assert.equal(a.body.plan.summary.create, 24);

      const again = await t.sync();
      const p2 = await t.plan(again.body.lab);
      assert.deepEqual(p2.body.summary, { create: 0, update: 0, remove: 0, unchanged: 24, conflict: 0 });

      // Two fields at once: exactly NetBox's own answer.
      const two = await t.sync([{ name: "site", value: "lab-b" }, { name: "role", value: "firewall" }]);
      const own = t.peer.devices.filter((d) =>
        (d.site as { slug: string }).slug === "lab-b" && (d.role as { slug: string }).slug === "firewall"
      ).map((d) => d.name as string);
      const got = [
        ...two.body.lab.devices.map((d: { hostname: string }) => d.hostname),
        ...two.body.unmapped.map((u: { name: string }) => u.name),
      ].sort();
      assert.deepEqual(got, own.sort());
      assert.deepEqual(two.body.provenance.filters, [["site", "lab-b"], ["role", "firewall"]]);

      // A device removed from NetBox: listed as not in the file; removed only with prune.
      t.peer.setDevices(generatedDevices(30).filter((d) => d.id !== 1));
      const gone = await t.sync();
      const p3 = await t.plan(gone.body.lab);
      assert.deepEqual(p3.body.notInFile, ["nb-vendor-a-ngfw-00001"]);
      assert.equal(p3.body.summary.remove, 0);
      const p4 = await t.plan(gone.body.lab, { prune: "disable" });
      assert.equal(p4.body.summary.remove, 1);

      const syncs = await (await t.app.request("/api/admin/dut/netbox/syncs", { headers: t.auth })).json();
      assert.equal(syncs.syncs.length, 4);
      assert.ok(
        syncs.syncs.every((x: { answersSha256: string; netboxUrl: string }) =>
          /^sha256:[0-9a-f]{64}$/.test(x.answersSha256) && x.netboxUrl === t.peer.url
        ),
      );
    } finally {
      await t.peer.close();
    }
  },
);

dbTest(
  "a NetBox sync modifying or pruning a reserved device is a 409 naming the holder; forced, audited",
  async (db) => {
    const t = await setup(db);
    try {
      const s = await t.sync();
      assert.equal((await t.apply(s.body.lab)).status, 200);
      const host = "nb-vendor-a-ngfw-00001";
      const list = await (await t.app.request("/api/admin/dut/devices", { headers: t.auth })).json();
      const id = list.devices.find((d: { hostname: string }) => d.hostname === host).id;
      const r = await t.post("/api/admin/reservations", { deviceIds: [id], holder: "ci-nightly" });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      // NetBox changes the device (a switch now: the firewall rule's poll interval no longer applies).
      t.peer.setDevices(generatedDevices(30).map((d) => d.id === 1 ? { ...d, role: "switch" } : d));
      const changed = await t.sync();
      assert.equal(changed.status, 200);
      const p = await t.plan(changed.body.lab);
      assert.equal(p.body.devices.find((e: { hostname: string }) => e.hostname === host).action, "update");
      const modify = await t.apply(changed.body.lab);
      assert.equal(modify.status, 409, JSON.stringify(modify.body));
      assert.match(
        modify.body.detail,
        /^The lab "netbox" apply would disturb a reservation: nb-vendor-a-ngfw-00001 is reserved by "ci-nightly" \(reservation [0-9a-f-]+\) until /,
      );
      assert.equal(modify.body.reservations[0].reservationId, r.body.id);
      // NetBox drops the device: the sync's prune is refused the same way.
      t.peer.setDevices(generatedDevices(30).filter((d) => d.id !== 1));
      const gone = await t.sync();
      const pp = await t.plan(gone.body.lab, { prune: "disable" });
      const prune = (extra = {}) =>
        t.post("/api/admin/dut/lab/apply", {
          lab: gone.body.lab,
          secrets: { admin: CANARY },
          prune: "disable",
          expectedGeneration: pp.body.generation,
          planHash: pp.body.planHash,
          ...extra,
        });
      const refused = await prune();
      assert.equal(refused.status, 409, JSON.stringify(refused.body));
      assert.match(refused.body.detail, /nb-vendor-a-ngfw-00001 is reserved by "ci-nightly"/);
      const device = await (await t.app.request(`/api/admin/dut/devices/${id}`, { headers: t.auth })).json();
      assert.equal(device.enabled, true, "nothing of the refused sync was written");
      // An admin forces it: applied, and the audit entry names the reservation overridden.
      assert.equal((await prune({ overrideReservations: true })).status, 200);
      const audit = await (await t.app.request("/api/admin/audit", { headers: t.auth })).json();
      assert.ok(
        audit.entries.some((e: { detail: string | null }) =>
          /; forced over reservation\(s\): lab apply; nb-vendor-a-ngfw-00001 held by ci-nightly /
            .test(e.detail ?? "")
        ),
      );
    } finally {
      await t.peer.close();
    }
  },
);

dbTest(
  "NetBox's refusals and bad answers are 502 naming the object; bad input is a 400 naming the field",
  async (db) => {
    const t = await setup(db);
    try {
      t.peer.faults.add("not-json");
      const nj = await t.sync();
      assert.equal(nj.status, 502);
      assert.match(nj.body.detail, /answer for devices .* is not JSON/);
      assert.equal(nj.body.netboxObject, "devices (/api/dcim/devices/)");
      t.peer.faults.clear();
      const wrong = await t.post("/api/admin/dut/lab/from-netbox", {
        netbox: { ...t.netbox, token: "1234567890123456789012345678901234567890" },
        mapping: MAPPING,
      });
      assert.equal(wrong.status, 502);
      assert.match(wrong.body.detail, /may not read status .*403/);
      const reserved = await t.post("/api/admin/dut/lab/from-netbox", {
        netbox: t.netbox,
        filters: [{ name: "limit", value: "5" }],
        mapping: MAPPING,
      });
      assert.equal(reserved.status, 400);
      assert.equal(reserved.body.errors[0].field, "filters.0.name");
      const badToken = await t.post("/api/admin/dut/lab/from-netbox", {
        netbox: { ...t.netbox, token: "hunter2" },
        mapping: MAPPING,
      });
      assert.equal(badToken.status, 400);
      assert.equal(badToken.body.errors[0].field, "netbox.token");
      t.peer.setDevices([
        { id: 1, name: "twin", site: "a", role: "firewall", platform: "vendor-b-ngfw" },
        { id: 2, name: "Twin", site: "a", role: "firewall", platform: "vendor-b-ngfw" },
      ]);
      const dup = await t.sync();
      assert.equal(dup.status, 422);
      assert.match(dup.body.detail, /NetBox devices #1 and #2 map to one hostname, twin/);
      const syncs = await (await t.app.request("/api/admin/dut/netbox/syncs", { headers: t.auth })).json();
      assert.equal(syncs.syncs.length, 0, "a failed import records nothing");
    } finally {
      await t.peer.close();
    }
  },
);

dbTest(
  "a finished run's verdict is written back per device; a refusing NetBox leaves a visible, retried failure",
  async (db) => {
    const t = await setup(db);
    try {
      t.peer.setDevices(generatedDevices(4));
      const s = await t.sync();
      assert.equal((await t.apply(s.body.lab)).status, 200);
      const run = await t.svc.runs.start({ planIdentifier: "fixture-plan" });
      const early = await t.post(`/api/admin/dut/runs/${run.executionId}/netbox-journal`, {
        netbox: t.netbox,
      });
      assert.equal(early.status, 409);
      await t.svc.runs.finish(run.executionId, { outcome: "passed", results: { latencySamplesMs: [1, 2] } });
      const view = await t.svc.runs.get(run.executionId);

      t.peer.faults.add("forbid-journal");
      const refused = await t.post(`/api/admin/dut/runs/${run.executionId}/netbox-journal`, {
        netbox: t.netbox,
      });
      assert.equal(refused.status, 200);
      assert.equal(refused.body.failed, 3);
      assert.ok(
        refused.body.entries.every((e: { lastError: string }) =>
          /may not write journal entry of device #\d+ \(nb-.*\) \(403/.test(e.lastError)
        ),
      );
      assert.equal(
        (await t.svc.runs.get(run.executionId)).reportSha256,
        view.reportSha256,
        "the run is untouched",
      );
      const shown = await (await t.app.request(`/api/admin/dut/runs/${run.executionId}/netbox-journal`, {
        headers: t.auth,
      })).json();
      assert.equal(shown.failed, 3);

      t.peer.faults.clear();
      const retried = await t.post(`/api/admin/dut/runs/${run.executionId}/netbox-journal`, {
        netbox: t.netbox,
      });
      assert.equal(retried.body.posted, 3);
      assert.ok(
        retried.body.entries.every((e: { attempts: number; journalEntryId: number }) =>
          e.attempts === 2 && e.journalEntryId > 0
        ),
      );
      assert.equal(t.peer.journal.length, 3);
      const entry = t.peer.journal[0]!;
      assert.equal(entry.assigned_object_type, "dcim.device");
      assert.match(String(entry.comments), new RegExp(`Report SHA-256: ${view.reportSha256}`));
      assert.match(String(entry.comments), /DSSE envelope: sha256:[0-9a-f]{64}/);
      assert.match(String(entry.comments), new RegExp(`/api/test-runs/${run.executionId}/report.json`));
      const once = await t.post(`/api/admin/dut/runs/${run.executionId}/netbox-journal`, {
        netbox: t.netbox,
      });
      assert.equal(once.body.posted, 3);
      assert.equal(t.peer.journal.length, 3, "posted entries are not posted twice");
    } finally {
      await t.peer.close();
    }
  },
);

dbTest(
  "automatic write-back: a finish queues one entry per device; a 500, a 429 and a 403 are visible and retried",
  async (db) => {
    const peer = await startNetBoxPeer({ devices: generatedDevices(4) });
    const t = await testServices(db, fixtureModules(), {
      DUT_NETBOX_WRITEBACK: "on",
      DUT_NETBOX_URL: peer.url,
      DUT_NETBOX_TOKEN: PEER_TOKEN,
      DUT_NETBOX_RETRY_BASE_MS: "1",
    });
    const worker = netboxJournalWorker(t.svc)!;
    const post = async (path: string, body: unknown) => {
      const res = await t.app.request(path, jsonReq("POST", body, t.auth));
      return { status: res.status, body: await res.json() };
    };
    const shown = async (id: string) =>
      await (await t.app.request(`/api/admin/dut/runs/${id}/netbox-journal`, { headers: t.auth })).json();
    const drain = async () => {
      await worker.tick();
      await worker.idle();
    };
    const due = () =>
      db.kysely.updateTable("netbox_journal").set({ next_at: new Date() })
        .where("status", "=", "failed").execute();
    const finishedRun = async () => {
      const run = await t.svc.runs.start({ planIdentifier: "fixture-plan" });
      await t.svc.runs.finish(run.executionId, { outcome: "passed", results: { latencySamplesMs: [1] } });
      return await t.svc.runs.get(run.executionId);
    };
    try {
      const s = await post("/api/admin/dut/lab/from-netbox", {
        netbox: { url: peer.url, token: PEER_TOKEN },
        mapping: MAPPING,
      });
      const p = await post("/api/admin/dut/lab/plan", { lab: s.body.lab, secrets: { admin: CANARY } });
      const a = await post("/api/admin/dut/lab/apply", {
        lab: s.body.lab,
        secrets: { admin: CANARY },
        expectedGeneration: p.body.generation,
        planHash: p.body.planHash,
      });
      assert.equal(a.status, 200, JSON.stringify(a.body));

      // A device registered by hand (not from NetBox: no netbox:<id> tag) is not queued.
      await t.svc.devices.create({
        hostname: "sw-by-hand",
        vendor: "fixture-fw",
        baseUrl: "https://sw-by-hand.lab.example:8443",
        username: "admin",
        password: CANARY,
        tlsVerifyMode: "self-signed",
        pollIntervalSeconds: 60,
        enabled: true,
      });
      // The finish queues one row per NetBox device of the run, in its transaction; nothing is posted yet.
      const run = await finishedRun();
      assert.ok(run.labAtStart.devices.some((d) => d.hostname === "sw-by-hand"));
      const queued = await shown(run.executionId);
      assert.deepEqual([queued.pending, queued.posted, queued.failed], [3, 0, 0]);
      assert.ok(queued.entries.every((e: { nextAttemptAt: string | null }) => e.nextAttemptAt !== null));

      // A 500 on one entry: that one is failed (visible: API, metric), the others posted; then retried.
      peer.faults.add("journal-500-once");
      await drain();
      const half = await shown(run.executionId);
      assert.deepEqual([half.posted, half.failed, half.pending], [2, 1, 0]);
      const failed = half.entries.find((e: { status: string }) => e.status === "failed");
      assert.match(failed.lastError, /NetBox answered 500 for journal entry of device #\d+ \(nb-/);
      assert.ok(failed.nextAttemptAt !== null && failed.attempts === 1);
      const metrics = await t.svc.metrics.registry.metrics();
      assert.match(metrics, /dutlab_netbox_journal_queued\{status="failed"\} 1/);
      assert.match(metrics, /dutlab_netbox_journal_attempts_total\{result="retry"\} 1/);
      await due();
      await drain();
      const all = await shown(run.executionId);
      assert.deepEqual([all.posted, all.failed, all.pending], [3, 0, 0]);
      assert.equal(peer.journal.length, 3, "one journal entry per device");
      assert.equal(new Set(peer.journal.map((j) => j.assigned_object_id)).size, 3);
      const entry = peer.journal[0]!;
      assert.match(String(entry.comments), new RegExp(`Report SHA-256: ${run.reportSha256}`));
      assert.match(String(entry.comments), /DSSE envelope: sha256:[0-9a-f]{64}/);
      assert.match(String(entry.comments), new RegExp(`/api/test-runs/${run.executionId}/report.json`));
      await drain();
      assert.equal(peer.journal.length, 3, "posted entries leave the queue");

      // A 403 (NetBox refusing): every entry failed with NetBox's reason, the run untouched, retried later.
      const run2 = await finishedRun();
      peer.faults.add("forbid-journal");
      await drain();
      const refused = await shown(run2.executionId);
      assert.equal(refused.failed, 3);
      assert.ok(
        refused.entries.every((e: { lastError: string }) =>
          /may not write journal entry of device #\d+ \(nb-.*\) \(403/.test(e.lastError)
        ),
      );
      const after = await t.svc.runs.get(run2.executionId);
      assert.deepEqual(
        [after.status, after.reportSha256, after.outcome],
        [run2.status, run2.reportSha256, run2.outcome],
        "the run is untouched",
      );
      assert.match(
        await t.svc.metrics.registry.metrics(),
        /dutlab_netbox_journal_queued\{status="failed"\} 3/,
      );
      peer.faults.clear();
      await due();
      await drain();
      const ok = await shown(run2.executionId);
      assert.equal(ok.posted, 3);
      assert.ok(ok.entries.every((e: { attempts: number }) => e.attempts === 2));

      // A 429: the next attempt waits NetBox's Retry-After (7 s), not the 1 ms backoff.
      const run3 = await finishedRun();
      peer.faults.add("journal-429-once");
      await drain();
      const throttled = (await shown(run3.executionId)).entries.find((e: { status: string }) =>
        e.status === "failed"
      );
      assert.match(throttled.lastError, /429/);
      const wait = Date.parse(throttled.nextAttemptAt) - Date.parse(throttled.updatedAt);
      assert.ok(wait >= 6_000 && wait <= 8_000, `next attempt ${wait} ms after the 429`);
      await due();
      await drain();
      assert.equal((await shown(run3.executionId)).posted, 3);
      assert.equal(peer.journal.length, 9);
    } finally {
      await worker.stop();
      await peer.close();
    }
  },
);
