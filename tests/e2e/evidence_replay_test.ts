/**
 * Issue 30 points 3 and 4: the evidence bundle of a finished run (served with the report's access rule,
 * opened by GNU tar and checked by `sha256sum -c`, the outside judges) and its replay, on the server
 * (`POST …/replay`) and by the built standalone verifier from an empty directory; a changed cited payload,
 * submitted figure or plan is named; old reports say what cannot be reproduced and why.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { childEnv } from "../../core/harness/process.ts";
import { type SimulatedDevice } from "@dutlab/core/testing";
import { dbTest } from "../../core/harness/db.ts";
import { jsonReq, testServices } from "../../core/harness/app.ts";
import { modules } from "../../modules.gen.ts";
import { adapterForRole, startWithDecrypt } from "../../core/harness/lab.ts";
import { fixtureModules } from "@dutlab/core/testing";
import { buildRegistry } from "../../core/harness/core.ts";
import { replayReport } from "../../core/harness/core.ts";
import { readBundleArchive, replayInputsOf } from "../../core/harness/core.ts";
import { sealReport } from "../../core/harness/core.ts";
import type { ReportData } from "../../core/harness/core.ts";
import {
  closeAll,
  finishRun,
  k6HandleSummary,
  k6SummaryExport,
  register,
  snapshot,
  startRun,
} from "../../core/harness/runs_lab.ts";

/** The run's firewall and controller: the enabled adapters of roles ngfw and bmc. */
const NGFW = adapterForRole(modules, "ngfw"), BMC = adapterForRole(modules, "bmc");

const dec = new TextDecoder();

async function run(cmd: string, args: string[], cwd: string) {
  const r = await new Deno.Command(cmd, {
    args,
    cwd,
    clearEnv: true,
    env: childEnv({}),
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: r.code, out: dec.decode(r.stdout), err: dec.decode(r.stderr) };
}

/** Write a bundle's files into a folder (after the test changed some). */
async function writeFolder(dir: string, files: Map<string, Uint8Array>) {
  for (const [p, b] of files) {
    await Deno.mkdir(`${dir}/${p.split("/").slice(0, -1).join("/")}`, { recursive: true });
    await Deno.writeFile(`${dir}/${p}`, b);
  }
}

const sha256 = async (b: Uint8Array | string) =>
  Array.from(
    new Uint8Array(
      await crypto.subtle.digest(
        "SHA-256",
        typeof b === "string" ? new TextEncoder().encode(b) : b as BufferSource,
      ),
    ),
    (x) => x.toString(16).padStart(2, "0"),
  ).join("");

/** Re-list every file in SHA256SUMS, as someone changing a bundle on purpose would. */
async function relist(files: Map<string, Uint8Array>) {
  const lines: string[] = [];
  for (const [p, b] of files) if (p !== "SHA256SUMS") lines.push(`${await sha256(b)}  ${p}`);
  files.set("SHA256SUMS", new TextEncoder().encode(lines.join("\n") + "\n"));
}

dbTest(
  "evidence bundle: served with the report's access, opened by tar, replayed on the server and offline",
  async (db) => {
    const { svc, app, auth } = await testServices(db, modules);
    const sims: SimulatedDevice[] = [];
    try {
      const fw = await startWithDecrypt(NGFW);
      await fw.decryption(true);
      sims.push(fw, await (await BMC.sim()).startSimulatedDevice());
      const ids = [
        await register(app, auth, NGFW.vendor, "fw-a-01", sims[0]!),
        await register(app, auth, BMC.vendor, "bmc-01", sims[1]!),
      ];
      for (const id of ids) await snapshot(app, auth, id);
      const started = await startRun(app, auth, {
        planIdentifier: "ngfw-throughput-decrypt-on-server-health",
      });
      const id = started.executionId;
      await fw.decryption(false); // a TLSDecryptModeChanged alert and configuration drift during the run
      for (const d of ids) await snapshot(app, auth, d);
      await finishRun(app, auth, id, {
        outcome: "passed",
        results: { latencySamplesMs: [12.5, 14, 80, 101, 33], requests: 5, failedRequests: 0 },
      });

      // Access: as the report (token or the print page's share link).
      assert.equal((await app.request(`/api/test-runs/${id}/evidence`)).status, 401);
      const share = await (await app.request(`/api/test-runs/${id}/share`, jsonReq("POST", undefined, auth)))
        .json();
      const q = new URL(share.url).search;
      const shared = await app.request(`/api/test-runs/${id}/evidence${q}`);
      assert.equal(shared.status, 200);
      assert.equal(shared.headers.get("content-type"), "application/gzip");
      const bundle = new Uint8Array(await shared.arrayBuffer());
      // The bundle says whether it holds the PDF (issue 49 point 3): never a silent 200 without it.
      const held = await readBundleArchive(bundle);
      assert.equal(
        shared.headers.get("x-evidence-pdf"),
        held.has("report.pdf") ? "included" : "missing",
      );
      assert.equal(held.has("report.pdf"), !held.has("report.pdf.MISSING.txt"));
      const renderer = svc.pdf;
      type Renderer = typeof svc.pdf;
      const PdfRenderer = svc.pdf.constructor as new (o: Renderer["opts"]) => Renderer;
      (svc as { pdf: Renderer }).pdf = new PdfRenderer({
        executablePath: "/nonexistent/chromium",
        concurrency: 1,
        timeoutMs: 5_000,
      });
      const without = await app.request(`/api/test-runs/${id}/evidence`, { headers: auth });
      (svc as { pdf: Renderer }).pdf = renderer;
      assert.equal(without.status, 200);
      assert.equal(without.headers.get("x-evidence-pdf"), "missing");
      const noPdf = await readBundleArchive(new Uint8Array(await without.arrayBuffer()));
      assert.ok(!noPdf.has("report.pdf"));
      const why = new TextDecoder().decode(noPdf.get("report.pdf.MISSING.txt"));
      assert.match(
        why,
        /^report\.pdf is not in this bundle: the PDF could not be made \(.*No Chromium found/,
      );
      assert.match(
        new TextDecoder().decode(noPdf.get("README.txt")),
        /NOT INCLUDED: the PDF could not be made/,
      );
      assert.match(new TextDecoder().decode(noPdf.get("SHA256SUMS")), / {2}report\.pdf\.MISSING\.txt\n/);
      // A different first character of the signature (replacing it by a fixed one kept it 1 time in 64).
      const tampered = q.replace(/sig=(.)/, (_, c: string) => `sig=${c === "A" ? "B" : "A"}`);
      const bad = await app.request(`/api/test-runs/${id}/evidence${tampered}`);
      assert.equal(bad.status, 403);
      await bad.body?.cancel();
      assert.equal(
        (await app.request(`/api/test-runs/${crypto.randomUUID()}/evidence`, { headers: auth })).status,
        404,
      );

      // Outside judges: GNU tar unpacks it, sha256sum checks the manifest.
      const dir = await Deno.makeTempDir({ prefix: "evidence_" });
      try {
        await Deno.writeFile(`${dir}/evidence.tar.gz`, bundle);
        const tar = await run("tar", ["-xzf", "evidence.tar.gz"], dir);
        assert.equal(tar.code, 0, tar.err);
        const folder = `${dir}/evidence-${id.slice(0, 8)}`;
        const sums = await run("sha256sum", ["-c", "--strict", "SHA256SUMS"], folder);
        assert.equal(sums.code, 0, sums.out + sums.err);
        const listed = sums.out.trim().split("\n");
        for (
          const f of ["report.json", "report.dsse.json", "verify_report.ts", "README.txt", "inputs/plan.json"]
        ) {
          assert.ok(listed.includes(`${f}: OK`), f);
        }
        const report = JSON.parse(await Deno.readTextFile(`${folder}/report.json`)) as ReportData;
        const keys = [...Deno.readDirSync(`${folder}/keys`)].map((e) => e.name);
        assert.ok(keys.includes("report-keys.json") && keys.some((k) => k.endsWith(".pem")));
        // Every payload the report cites is there, named by its SHA-256.
        const cited = new Set<string>();
        for (const a of report.annexes) {
          for (
            const m of a.body.matchAll(
              /"(?:payloadSha256|startPayloadSha256|endPayloadSha256)":"([0-9a-f]{64})"/g,
            )
          ) {
            cited.add(m[1]!);
          }
        }
        assert.ok(cited.size > 3);
        for (const sha of cited) {
          const text = await Deno.readTextFile(`${folder}/payloads/${sha}.json`);
          assert.equal(await sha256(text), sha);
        }
        assert.ok(report.tlsDecrypt.alerts.length > 0, "the run has an alert");
        assert.ok(
          JSON.parse(report.annexes.find((a) => a.id === "configuration-drift")!.body).drift.length > 0,
        );

        // The server's replay reproduces the report.
        const replay =
          await (await app.request(`/api/test-runs/${id}/replay`, jsonReq("POST", undefined, auth))).json();
        assert.equal(
          replay.reproduced,
          true,
          JSON.stringify(replay.lines.filter((l: { status: string }) => l.status !== "same")),
        );
        assert.equal(replay.replayedReportSha256, report.reportSha256);
        const whats = replay.lines.map((l: { what: string }) => l.what) as string[];
        for (
          const w of [
            "aggregate p99_ms",
            "error rate (%)",
            "SLO pass",
            "configuration drift",
            "verdict (rule dutlab-verdict-2)",
            "annex configuration-drift sha256",
            "pre-flight summary",
          ]
        ) assert.ok(whats.includes(w), w);
        assert.ok(
          whats.some((w) => w.startsWith("pre-flight bmc-health-ok on bmc-01")),
          "a check with alsoReads",
        );

        // The bundle's own verifier, alone in an empty directory outside the repository.
        const empty = await Deno.makeTempDir({ prefix: "replay_" });
        try {
          await Deno.copyFile(`${folder}/verify_report.ts`, `${empty}/verify_report.ts`);
          await Deno.copyFile(`${dir}/evidence.tar.gz`, `${empty}/evidence.tar.gz`);
          const ok = await run(Deno.execPath(), [
            "run",
            "-A",
            "verify_report.ts",
            "--replay",
            "evidence.tar.gz",
          ], empty);
          assert.equal(ok.code, 0, ok.out + ok.err);
          assert.match(ok.out, new RegExp(`REPRODUCED reportSha256 ${report.reportSha256}`));
          assert.match(ok.out, /same {6}aggregate p99_ms: sealed 100\.16 \| replayed 100\.16/);
          assert.match(ok.out, /ok {8}manifest SHA256SUMS/);
          assert.match(ok.out, /Ed25519 signature/);

          // One cited payload changed (under its old name, manifest re-listed): replay names it.
          const files = await readBundleArchive(bundle);
          const start = replayInputsOf(files).labAtStart.snapshots;
          const policy = start.find((s) => s.endpointLabel === "decrypt_policy")!.payloadSha256;
          const fwPolicy = `payloads/${policy}.json`;
          const changed = new Map(files);
          const value = JSON.parse(dec.decode(files.get(fwPolicy)!));
          changed.set(fwPolicy, new TextEncoder().encode(JSON.stringify({ ...value, injected: true })));
          await relist(changed);
          const tampered = `${empty}/tampered`;
          await writeFolder(tampered, changed);
          const t = await run(
            Deno.execPath(),
            ["run", "-A", "verify_report.ts", "--replay", "tampered"],
            empty,
          );
          assert.equal(t.code, 1, t.out);
          const sha = fwPolicy.slice("payloads/".length, -".json".length);
          assert.match(t.out, new RegExp(`INPUT {5}payload ${sha}: content hashes to`));
        } finally {
          await Deno.remove(empty, { recursive: true });
        }

        // In process (the same code the bundle carries): each change is named.
        const files = await readBundleArchive(bundle);
        const registry = buildRegistry(modules);
        const base = replayInputsOf(files);
        const clean = await replayReport(registry, report, base);
        assert.equal(clean.exitCode, 0);

        const figure = await replayReport(registry, report, {
          ...base,
          results: { latencySamplesMs: [12.5, 14, 80, 100, 33], requests: 5, failedRequests: 0 },
        });
        assert.equal(figure.exitCode, 1);
        const differs = (r: typeof figure) =>
          r.lines.filter((l) => l.status === "differs").map((l) => l.what);
        assert.ok(differs(figure).includes("aggregate p99_ms"), differs(figure).join(", "));
        const input = figure.lines.find((l) => l.what === "annex results-input sha256")!;
        assert.equal(input.status, "differs");
        assert.match(input.detail!, /\/latencySamplesMsSha256: sealed [0-9a-f]{64}, replayed [0-9a-f]{64}/);
        assert.ok(!differs(figure).some((w) => w.startsWith("pre-flight")), "the pre-flight is not touched");

        const plan = await replayReport(registry, report, {
          ...base,
          plan: { ...base.plan, sloTargetP99Ms: 90 },
        });
        assert.equal(plan.exitCode, 1);
        assert.ok(differs(plan).includes("plan (meta.planSnapshotSha256)"));
        assert.ok(differs(plan).includes("SLO target p99 (ms)"));
        assert.ok(differs(plan).includes("verdict reason slo"), "p99 100.16 ms against 90 ms");
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    } finally {
      await closeAll(sims);
    }
  },
);

dbTest(
  "replay judges by the rule the report names; an unknown rule or no rule is said, not re-judged",
  async (db) => {
    const { app, auth } = await testServices(db, modules);
    const sims: SimulatedDevice[] = [];
    try {
      const fw = await startWithDecrypt(NGFW);
      sims.push(fw);
      const dev = await register(app, auth, NGFW.vendor, "fw-a-01", fw);
      await snapshot(app, auth, dev);
      const { executionId: id } = await startRun(app, auth, {
        planIdentifier: "ngfw-throughput-decrypt-off",
      });
      await finishRun(app, auth, id, { outcome: "passed", results: { latencySamplesMs: [1, 2, 3] } });
      const files = await readBundleArchive(
        new Uint8Array(
          await (await app.request(`/api/test-runs/${id}/evidence`, { headers: auth })).arrayBuffer(),
        ),
      );
      const report = JSON.parse(dec.decode(files.get("report.json")!)) as ReportData;
      const inputs = replayInputsOf(files);
      const registry = buildRegistry(modules);
      const reseal = async (v: ReportData["verdict"]) => {
        const { reportSha256: _, ...rest } = report;
        const draft = { ...rest } as Omit<ReportData, "reportSha256">;
        if (v) draft.verdict = v;
        else delete draft.verdict;
        return await sealReport(draft);
      };
      // Rule 1 (no drift row): reproduced under rule 1.
      const v1 = {
        ...report.verdict!,
        rule: "dutlab-verdict-1",
        reasons: report.verdict!.reasons.filter((r) => r.input !== "configuration-drift"),
      };
      const r1 = await replayReport(registry, await reseal(v1), inputs);
      assert.equal(r1.exitCode, 0, JSON.stringify(r1.lines.filter((l) => l.status !== "same")));
      assert.ok(r1.lines.some((l) => l.what === "verdict (rule dutlab-verdict-1)" && l.status === "same"));
      // A rule this code does not carry.
      const r0 = await replayReport(
        registry,
        await reseal({ ...report.verdict!, rule: "dutlab-verdict-0" }),
        inputs,
      );
      assert.equal(r0.exitCode, 3);
      const line = r0.lines.find((l) => l.what === "verdict (rule dutlab-verdict-0)")!;
      assert.equal(line.status, "not-reproducible");
      assert.match(
        line.detail!,
        /carries the rules dutlab-verdict-2, dutlab-verdict-1, not dutlab-verdict-0/,
      );
      // No verdict at all (frozen before issue 19).
      const none = await replayReport(registry, await reseal(undefined), inputs);
      assert.equal(none.exitCode, 3);
      assert.match(none.lines.find((l) => l.what === "verdict")!.detail!, /frozen before verdicts existed/);
    } finally {
      await closeAll(sims);
    }
  },
);

dbTest("the report frozen before issue 19: replay says what cannot be reproduced and why", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const text = await Deno.readTextFile(
    new URL("../../core/src/report/testdata/report-before-issue-19.json", import.meta.url),
  );
  const r = JSON.parse(text) as ReportData;
  const annex = (id: string) => r.annexes.find((a) => a.id === id)!.body;
  const json = (v: string) => sql`cast(${v}::text as jsonb)`;
  await sql`insert into test_runs (execution_id, plan_identifier, plan_display_name, plan_catalog_version,
      plan_json, plan_snapshot_sha256, license_id, notes, status, started_at, ended_at, outcome,
      start_state_json, preflight_json, results_json, report_json, report_sha256)
    values (${r.meta.executionId}, ${r.meta.planIdentifier}, ${r.meta.planDisplayName}, ${r.meta.planCatalogVersion},
      ${
    json(JSON.stringify(r.plan))
  }, ${r.meta.planSnapshotSha256}, ${r.license.id}, ${r.meta.notes}, 'finished',
      ${r.meta.startedAt}, ${r.meta.endedAt}, ${r.meta.outcome}, ${json(annex("lab-at-start"))},
      ${json(annex("preflight-at-start"))}, ${json("{}")}, ${text}, ${r.reportSha256})`.execute(db.kysely);
  const res = await app.request(
    `/api/test-runs/${r.meta.executionId}/replay`,
    jsonReq("POST", undefined, auth),
  );
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.reproduced, false);
  assert.equal(body.exitCode, 3, JSON.stringify(body.lines));
  const by = (w: string) => body.lines.find((l: { what: string }) => l.what === w);
  assert.equal(by("plan (meta.planSnapshotSha256)").status, "same");
  assert.equal(by("verdict").status, "not-reproducible");
  assert.match(by("verdict").detail, /frozen before verdicts existed, issue 19/);
  assert.equal(by("submitted results").status, "not-reproducible");
});

dbTest(
  "a run finished with a k6 summary (both forms) replays on the server from its stored results",
  async (db) => {
    const { app, auth } = await testServices(db, modules);
    const sims: SimulatedDevice[] = [];
    try {
      const fw = await startWithDecrypt(NGFW);
      sims.push(fw);
      const dev = await register(app, auth, NGFW.vendor, "fw-a-01", fw);
      await snapshot(app, auth, dev);
      for (const k6Summary of [k6SummaryExport(), k6HandleSummary()]) {
        const { executionId } = await startRun(app, auth, { planIdentifier: "ngfw-throughput-decrypt-off" });
        await snapshot(app, auth, dev);
        await finishRun(app, auth, executionId, { outcome: "passed", results: { k6Summary } });
        const res = await app.request(
          `/api/test-runs/${executionId}/replay`,
          jsonReq("POST", undefined, auth),
        );
        const body = await res.json();
        assert.equal(res.status, 200);
        const off = body.lines.filter((l: { status: string }) => l.status !== "same");
        assert.equal(body.reproduced, true, JSON.stringify(off));
        assert.ok(body.lines.some((l: { what: string }) => l.what === "figure requestsPerSecond"));
      }
    } finally {
      await closeAll(sims);
    }
  },
);
