/**
 * Issue 50 "Done when": a finished run's verdict is written back as a journal entry per device, and a failing
 * NetBox leaves a visible, retried failure, through a real `serve` process with DUT_NETBOX_WRITEBACK=on (the
 * write-back worker started by server.ts) against the local NetBox peer: the run's finish queues one entry
 * per device, a 500 on one entry shows it `failed` with its next attempt (API and `dutlab runs netbox-journal
 * --show`), and the worker posts it on its own. Both backends.
 */
import assert from "node:assert/strict";
import { dbTest } from "../../core/harness/db.ts";
import { childEnv } from "../../core/harness/process.ts";
import { ServeProcess } from "../../core/harness/serve.ts";
import { TEST_ADMIN_TOKEN } from "../../core/harness/app.ts";
import { generatedDevices, PEER_TOKEN, startNetBoxPeer } from "../../tools/netbox_peer.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const MAPPING = {
  apiVersion: "dutlab/v1",
  kind: "NetBoxMapping",
  lab: "netbox",
  // Three of the peer's five platforms (each named after an enabled vendor key), mapped to that vendor.
  vendor: generatedDevices(5).slice(0, 3).map(({ platform: p }) => ({
    match: { platform: p },
    vendor: p,
  })),
  managementUrl: { from: "template", template: "https://{name}.lab.example:8443" },
  rules: [{ match: {}, credential: "admin" }],
  credentials: { admin: { username: "admin", password: "env:NETBOX_LAB_PASSWORD" } },
};

dbTest(
  "serve with DUT_NETBOX_WRITEBACK=on posts a finished run's journal entries; a 500 is shown and retried",
  async (db) => {
    const peer = await startNetBoxPeer({ devices: generatedDevices(5) });
    const work = await Deno.makeTempDir({ prefix: "dutlab-netbox-wb-" });
    const svc = ServeProcess.overTestDb(db, work, {
      DUT_API_POLLER_DISABLE: "1",
      DUT_NETBOX_WRITEBACK: "on",
      DUT_NETBOX_URL: peer.url,
      DUT_NETBOX_TOKEN: PEER_TOKEN,
      DUT_NETBOX_POLL_MS: "50",
      DUT_NETBOX_RETRY_BASE_MS: "2000",
    });
    const auth = { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, "content-type": "application/json" };
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${svc.base}${path}`, {
        method,
        headers: auth,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      assert.ok(!text.includes(PEER_TOKEN), `the NetBox token is in the answer of ${path}`);
      return { status: res.status, body: JSON.parse(text) };
    };
    /** The run's write-back once `done` holds (the worker runs every 50 ms; bounded by the test's own timeout). */
    const journalWhen = async (id: string, done: (j: { posted: number; failed: number }) => boolean) => {
      for (;;) {
        const j = await call("GET", `/api/admin/dut/runs/${id}/netbox-journal`);
        if (done(j.body)) return j.body;
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    try {
      await svc.ready();
      const s = await call("POST", "/api/admin/dut/lab/from-netbox", {
        netbox: { url: peer.url, token: PEER_TOKEN },
        mapping: MAPPING,
      });
      assert.equal(s.status, 200, JSON.stringify(s.body));
      const secrets = { admin: "pw-admin-1" };
      const plan = await call("POST", "/api/admin/dut/lab/plan", { lab: s.body.lab, secrets });
      const apply = await call("POST", "/api/admin/dut/lab/apply", {
        lab: s.body.lab,
        secrets,
        expectedGeneration: plan.body.generation,
        planHash: plan.body.planHash,
      });
      assert.equal(apply.status, 200, JSON.stringify(apply.body));
      const devices = s.body.lab.devices.length as number;
      assert.equal(devices, 3);

      peer.faults.add("journal-500-once");
      const run = await call("POST", "/api/test-runs", { planIdentifier: "ngfw-throughput-decrypt-on" });
      assert.equal(run.status, 201, JSON.stringify(run.body));
      const id = run.body.executionId as string;
      const fin = await call("POST", `/api/test-runs/${id}/finish`, {
        outcome: "passed",
        results: { latencySamplesMs: [1, 2, 3] },
      });
      assert.equal(fin.status, 200, JSON.stringify(fin.body));

      // The 500 is visible: one entry failed, with NetBox's answer and its next attempt.
      const failing = await journalWhen(id, (j) => j.failed === 1);
      const failed = (failing as unknown as { entries: Array<Record<string, unknown>> }).entries
        .find((e) => e.status === "failed")!;
      assert.match(String(failed.lastError), /NetBox answered 500 for journal entry of device #\d+/);
      assert.ok(failed.nextAttemptAt !== null);
      const metrics = await (await fetch(`${svc.base}/metrics`, { headers: auth })).text();
      assert.match(metrics, /dutlab_netbox_journal_attempts_total\{result="retry"\} 1/);

      // Retried by the worker on its own: every device posted once.
      const done = await journalWhen(id, (j) => j.posted === devices);
      assert.equal(done.failed, 0);
      assert.equal(peer.journal.length, devices);
      assert.equal(new Set(peer.journal.map((e) => e.assigned_object_id)).size, devices);
      for (const e of peer.journal) {
        assert.match(String(e.comments), new RegExp(`Report SHA-256: ${fin.body.reportSha256}`));
        assert.match(String(e.comments), /DSSE envelope: sha256:[0-9a-f]{64}/);
      }
      assert.ok(peer.requests.every((r) => r.authorization === `Bearer ${PEER_TOKEN}`));

      // The CLI shows what the queue holds.
      const show = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          "--config",
          `${ROOT}deno.json`,
          `${ROOT}cli/main.ts`,
          "runs",
          "netbox-journal",
          id,
          "--show",
        ],
        cwd: work,
        clearEnv: true,
        env: childEnv({ DUT_URL: svc.base, DUT_TOKEN: TEST_ADMIN_TOKEN }, {
          remove: ["DUT_URL", "DUT_TOKEN"],
        }),
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      const out = new TextDecoder().decode(show.stdout);
      assert.equal(show.code, 0, new TextDecoder().decode(show.stderr));
      assert.match(out, new RegExp(`${devices} posted, 0 failed`));
      assert.match(out, /posted +2 +- +journal entry #\d+/);
    } finally {
      await svc.stop();
      await peer.close();
      await Deno.remove(work, { recursive: true }).catch(() => {});
    }
  },
);
