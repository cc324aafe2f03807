/**
 * Issue 31 point 1: "every finished run's report still verifies after a prune, and its evidence bundle still
 * replays". Besides the snapshots a report cites, a bundle reads snapshots by time (docs/reports.md "Replay"): for a
 * check's `alsoReads` label the last snapshot at or before the pre-flight ("inferred"), and for the drift the
 * last snapshot of each device and label at the run's start and end. Nothing cites those; the prune keeps them
 * (`citedSnapshots`). This lab makes them prunable otherwise (older than the cut-off, not a real change, not
 * the newest, not the first of their hour, not linked to a run), prunes, and checks that every report is the
 * same and verifies, that each bundle reads the very same snapshots and payloads as before, and that the
 * server's replay and the bundle's own verifier (offline, from an empty directory) reproduce every figure.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { childEnv } from "../../core/harness/process.ts";
import { type SimulatedDevice } from "@dutlab/core/testing";
import { dbTest } from "../../core/harness/db.ts";
import { jsonReq, testServices } from "../../core/harness/app.ts";
import { modules } from "../../modules.gen.ts";
import { adapterForRole } from "../../core/harness/lab.ts";
import { readBundleArchive, replayInputsOf } from "../../core/harness/core.ts";
import type { ReplayInputs } from "../../core/harness/core.ts";
import { verifyReportBytes } from "../../core/harness/core.ts";
import { pruneSnapshots } from "../../core/harness/core.ts";
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

const PLAN = "ngfw-throughput-decrypt-on-server-health";
const RESULTS = { latencySamplesMs: [12.5, 14, 80, 101, 33], requests: 5, failedRequests: 0 };

async function bundleOf(app: App, auth: Auth, id: string): Promise<Uint8Array> {
  const res = await app.request(`/api/test-runs/${id}/evidence`, { headers: auth });
  assert.equal(res.status, 200);
  return new Uint8Array(await res.arrayBuffer());
}

/** Every snapshot id a bundle's inputs read (the lab at start and end, the drift's reads, the linked ones). */
function readIds(inputs: ReplayInputs): Array<{ id: string; why: string }> {
  return [
    ...inputs.labAtStart.snapshots.map((s) => ({
      id: s.snapshotId,
      why: `start ${s.basis} ${s.endpointLabel}`,
    })),
    ...inputs.labAtEnd.snapshots.map((s) => ({ id: s.snapshotId, why: `end ${s.endpointLabel}` })),
    ...inputs.driftReads.flatMap((d) =>
      d.snapshot ? [{ id: d.snapshot.id, why: `drift ${d.endpointLabel} at ${d.at}` }] : []
    ),
    ...inputs.linkedSnapshots.map((s) => ({ id: String(s.snapshotId), why: "linked" })),
  ];
}

/** The bundle's own verifier, alone in an empty directory: `--replay` of the archive. */
async function offlineReplay(bundle: Uint8Array, reportSha256: string) {
  const files = await readBundleArchive(bundle);
  const verifier = files.get("verify_report.ts");
  assert.ok(verifier, "the bundle carries its verifier");
  const dir = await Deno.makeTempDir({ prefix: "prune_replay_" });
  try {
    await Deno.writeFile(`${dir}/verify_report.ts`, verifier);
    await Deno.writeFile(`${dir}/evidence.tar.gz`, bundle);
    const r = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "verify_report.ts", "--replay", "evidence.tar.gz"],
      cwd: dir,
      clearEnv: true,
      env: childEnv({}),
      stdout: "piped",
      stderr: "piped",
    }).output();
    const out = new TextDecoder().decode(r.stdout) + new TextDecoder().decode(r.stderr);
    assert.equal(r.code, 0, out);
    assert.match(out, new RegExp(`REPRODUCED reportSha256 ${reportSha256}`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

dbTest(
  "after a prune every finished run's report verifies and its evidence bundle replays from the same snapshots",
  async (db) => {
    const { app, auth } = await testServices(db, modules);
    const sims: SimulatedDevice[] = [];
    try {
      // The enabled adapters of roles ngfw and bmc; decryption set through the ngfw's lab setting.
      const ngfw = adapterForRole(modules, "ngfw"), bmc = adapterForRole(modules, "bmc");
      const ngfwSim = await ngfw.sim();
      const fwDev = await ngfwSim.startSimulatedDevice();
      const decrypt = ngfwSim.labControls(fwDev).settings.decrypt!;
      const fw = { setDecrypt: async (on: boolean) => await decrypt.apply(on ? "on" : "off") };
      await fw.setDecrypt(true);
      sims.push(fwDev, await (await bmc.sim()).startSimulatedDevice());
      const ids = [
        await register(app, auth, ngfw.vendor, "fw-prune-replay", sims[0]!),
        await register(app, auth, bmc.vendor, "bmc-prune-replay", sims[1]!),
      ];
      const poll = async (n: number) => {
        for (let i = 0; i < n; i++) for (const d of ids) await snapshot(app, auth, d);
      };
      await poll(3);
      // Run 1: decrypt turned off during it (an alert, configuration drift; its end reads are linked).
      const r1 = (await startRun(app, auth, { planIdentifier: PLAN })).executionId;
      await fw.setDecrypt(false);
      await poll(1);
      await finishRun(app, auth, r1, { outcome: "passed", results: RESULTS });
      await fw.setDecrypt(true);
      await poll(3);
      // Run 2: nothing polled during it, so its drift's start and end reads are unlinked snapshots.
      const r2 = (await startRun(app, auth, { planIdentifier: PLAN })).executionId;
      await finishRun(app, auth, r2, { outcome: "passed", results: RESULTS });
      await poll(3); // the run's reads are not the newest snapshots
      const runs = [r1, r2];

      const before = new Map<string, { report: string; inputs: ReplayInputs }>();
      for (const id of runs) {
        const report = await fetchReport(app, auth, id);
        assert.equal(report.status, 200);
        before.set(id, {
          report: report.text,
          inputs: replayInputsOf(await readBundleArchive(await bundleOf(app, auth, id))),
        });
      }

      // The fixture exercises the case: the bundles read snapshots that no report, pre-flight result or lab
      // state names, no run is linked to, and that are not the newest of their device and label.
      const texts = [...before.values()].map((b) => b.report);
      const rows = await sql<{ p: string | null; s: string | null }>`select preflight_json::text as p,
        start_state_json::text as s from test_runs`.execute(db.kysely);
      for (const r of rows.rows) texts.push(r.p ?? "", r.s ?? "");
      const named = new Set(
        texts.flatMap((t) => [...t.matchAll(/[sS]napshotId\\*"\s*:\s*\\*"?(\d+)/g)]).map((m) => m[1]!),
      );
      const kept = new Set(
        (await sql<
          { id: string }
        >`select id::text as id from snapshots where test_run_execution_id is not null
          union select snapshot_id::text from snapshot_latest`.execute(db.kysely)).rows.map((r) => r.id),
      );
      const byTime = [...before.values()].flatMap((b) => readIds(b.inputs))
        .filter((r) => !named.has(r.id) && !kept.has(r.id));
      assert.ok(
        byTime.some((r) => r.why.startsWith("drift")),
        `a drift read no one cites: ${JSON.stringify(byTime)}`,
      );
      assert.ok(
        byTime.some((r) => r.why.startsWith("start inferred")),
        `an inferred read no one cites: ${JSON.stringify(byTime)}`,
      );

      // Prune as it would run 31 days from now: every snapshot of the lab is older than the cut-off.
      const policy = { olderThanDays: 30, keepOnePer: "hour" as const, actor: "test" };
      const asOf = new Date(Date.now() + 31 * 86_400_000);
      const count = async () =>
        (await sql<{ n: number }>`select count(*)::int as n from snapshots`.execute(db.kysely)).rows[0]!.n;
      const total = await count();
      const dry = await pruneSnapshots(db.kysely, { ...policy, dryRun: true, asOf });
      assert.equal(await count(), total, "a dry run changes nothing");
      const real = await pruneSnapshots(db.kysely, { ...policy, dryRun: false, asOf });
      assert.equal(real.cutoff, dry.cutoff);
      for (
        const k of ["snapshots", "snapshotBytes", "payloads", "payloadBytes", "bytes", "counts"] as const
      ) {
        assert.deepEqual(real[k], dry[k], k);
      }
      assert.ok(real.snapshots > 0, "the prune deleted something");
      assert.equal(await count(), total - real.snapshots, "it deleted what its dry run counted");
      const left = new Set(
        (await sql<{ id: string }>`select id::text as id from snapshots`.execute(db.kysely)).rows.map((r) =>
          r.id
        ),
      );
      for (const r of byTime) assert.ok(left.has(r.id), `kept: snapshot ${r.id} (${r.why})`);

      for (const id of runs) {
        const was = before.get(id)!;
        // The report: the same bytes, and it verifies.
        const report = await fetchReport(app, auth, id);
        assert.equal(report.text, was.report);
        const v = await verifyReportBytes(new TextEncoder().encode(report.text));
        assert.equal(v.ok, true, JSON.stringify(v.findings));
        const sha = JSON.parse(report.text).reportSha256 as string;
        // The bundle reads exactly what it read before the prune: the same snapshots, the same payloads.
        const bundle = await bundleOf(app, auth, id);
        assert.deepEqual(replayInputsOf(await readBundleArchive(bundle)), was.inputs);
        // The server's replay and the bundle's own verifier reproduce every figure.
        const res = await app.request(`/api/test-runs/${id}/replay`, jsonReq("POST", undefined, auth));
        assert.equal(res.status, 200);
        const replay = await res.json();
        assert.equal(
          replay.reproduced,
          true,
          JSON.stringify(replay.lines.filter((l: { status: string }) => l.status !== "same")),
        );
        assert.equal(replay.replayedReportSha256, sha);
        await offlineReplay(bundle, sha);
      }
    } finally {
      await closeAll(sims);
    }
  },
);
