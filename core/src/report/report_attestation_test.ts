/**
 * The in-toto test-result attestation (predicate https://in-toto.io/attestation/test-result/v0.1): its
 * content against the verdict and the frozen plan, OpenSSL verification over the documented DSSE PAE bytes
 * (docs/reports.md "Signatures"), GET /api/test-runs/{executionId}/attestations with the report's access rules, and
 * the append-only storage that only the audited delete may clear.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import canonicalize from "canonicalize";
import { dbTest } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";
import { pae } from "./sign.ts";
import { type App, type Auth, finishRun, startRun } from "../../harness/runs_lab.ts";
import { sha256Hex } from "@dutlab/core";

const PLAN = "fixture-plan";
const TEST_RESULT = "https://in-toto.io/attestation/test-result/v0.1";
const dec = new TextDecoder();
const unb64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

async function finished(app: App, auth: Auth, outcome: "passed" | "failed" | "aborted" = "passed") {
  const run = await startRun(app, auth, { planIdentifier: PLAN });
  await finishRun(app, auth, run.executionId, { outcome, results: { latencySamplesMs: [3, 4, 5] } });
  return run.executionId;
}

async function attestations(app: App, id: string, headers: Record<string, string> = {}, query = "") {
  return await app.request(`/api/test-runs/${id}/attestations${query}`, { headers });
}

async function testResult(app: App, auth: Auth, id: string) {
  const res = await attestations(app, id, auth);
  assert.equal(res.status, 200);
  const body = await res.json();
  const entry = body.attestations.find((a: { predicateType: string }) => a.predicateType === TEST_RESULT);
  return { body, entry, statement: JSON.parse(dec.decode(unb64(entry.envelope.payload))) };
}

async function run(cmd: string, args: string[], cwd: string) {
  const out = await new Deno.Command(cmd, {
    args,
    cwd,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

dbTest(
  "the test-result Statement: both envelopes listed; OpenSSL verifies the documented PAE bytes",
  async (db) => {
    const { app, auth, svc } = await testServices(db, fixtureModules());
    const id = await finished(app, auth);
    const reportText = await (await app.request(`/api/test-runs/${id}/report.json`, { headers: auth }))
      .text();
    const report = JSON.parse(reportText);
    const reportEnvelope =
      await (await app.request(`/api/test-runs/${id}/report.dsse.json`, { headers: auth }))
        .text();

    const { body, entry, statement } = await testResult(app, auth, id);
    assert.equal(body.executionId, id);
    assert.deepEqual(body.attestations.map((a: { name: string }) => a.name), [
      `report-${id}.dsse.json`,
      `report-${id}.test-result.dsse.json`,
    ]);
    assert.equal(body.attestations[0].text, reportEnvelope, "the report's envelope, the same bytes");
    assert.equal(body.attestations[0].predicateType, "urn:dutlab:predicate:test-report:v1");
    assert.equal(entry.keyId, svc.signatures.key.keyId);
    assert.deepEqual(JSON.parse(entry.text), entry.envelope);
    const again = (await testResult(app, auth, id)).entry.text;
    assert.equal(again, entry.text, "the same envelope bytes on every fetch");

    // The Statement: the published predicate's fields, the report as subject, the plan by digest.
    assert.equal(statement._type, "https://in-toto.io/Statement/v1");
    assert.equal(statement.predicateType, TEST_RESULT);
    const reportStatement = JSON.parse(dec.decode(unb64(JSON.parse(reportEnvelope).payload)));
    assert.deepEqual(statement.subject, reportStatement.subject);
    assert.equal(statement.subject[1].digest.sha256, await sha256Hex(reportText));
    const p = statement.predicate;
    assert.deepEqual(Object.keys(p).sort(), [
      "configuration",
      "failedTests",
      "passedTests",
      "result",
      "warnedTests",
    ]);
    // The fixture run's verdict is inconclusive (no failure count, no device, a 0 s load): WARNED.
    assert.equal(report.verdict.value, "inconclusive");
    assert.equal(p.result, "WARNED");
    assert.equal(p.configuration[0].name, `plan-${PLAN}.json`);
    assert.equal(p.configuration[0].digest.sha256, report.meta.planSnapshotSha256);
    assert.equal(
      p.configuration[0].digest.sha256,
      await sha256Hex(canonicalize(report.plan)!),
      "the plan's JCS",
    );
    assert.equal(p.configuration[1].uri, `urn:dutlab:verdict-rule:${report.verdict.rule}`);
    // One name per verdict input that applies, by its effect.
    for (const r of report.verdict.reasons) {
      const name = `verdict/${r.input}`;
      const list = r.effect === "pass"
        ? p.passedTests
        : r.effect === "inconclusive"
        ? p.warnedTests
        : r.effect === "none"
        ? null
        : p.failedTests;
      if (list) assert.ok(list.includes(name), `${name} (${r.effect})`);
      else assert.ok(![...p.passedTests, ...p.warnedTests, ...p.failedTests].includes(name), name);
    }
    assert.ok(p.passedTests.includes("verdict/slo"));
    assert.ok(p.warnedTests.includes("verdict/error-rate"));
    assert.deepEqual(p.failedTests, []);

    // OpenSSL 3 over the PAE docs/reports.md "Signatures" documents, built with its printf line.
    const dir = await Deno.makeTempDir({ prefix: "dutlab-attest-" });
    try {
      await Deno.writeTextFile(`${dir}/key.pem`, svc.signatures.key.publicKey.publicKeyPem);
      await Deno.writeFile(`${dir}/payload.json`, unb64(entry.envelope.payload));
      await Deno.writeFile(`${dir}/sig.bin`, unb64(entry.envelope.signatures[0].sig));
      const shell = await run("bash", [
        "-c",
        `{ printf 'DSSEv1 28 application/vnd.in-toto+json %d ' "$(wc -c < payload.json)"; cat payload.json; } > pae.bin`,
      ], dir);
      assert.equal(shell.code, 0, shell.stderr);
      assert.deepEqual(
        await Deno.readFile(`${dir}/pae.bin`),
        pae(entry.envelope.payloadType, unb64(entry.envelope.payload)),
      );
      const verify = [
        "pkeyutl",
        "-verify",
        "-pubin",
        "-inkey",
        "key.pem",
        "-rawin",
        "-sigfile",
        "sig.bin",
        "-in",
      ];
      const ok = await run("openssl", [...verify, "pae.bin"], dir);
      assert.equal(ok.code, 0, ok.stdout + ok.stderr);
      assert.match(ok.stdout, /Signature Verified Successfully/);
      // The result changed from WARNED to PASSED in the payload: refused.
      const forged = dec.decode(await Deno.readFile(`${dir}/pae.bin`)).replace(
        '"result":"WARNED"',
        '"result":"PASSED"',
      );
      assert.ok(forged.includes('"result":"PASSED"'));
      await Deno.writeTextFile(`${dir}/forged.bin`, forged);
      const bad = await run("openssl", [...verify, "forged.bin"], dir);
      assert.notEqual(bad.code, 0, "a changed result fails");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

dbTest(
  "test-result: a failed run is FAILED, an aborted (invalid) run is FAILED, with the failed inputs",
  async (db) => {
    const { app, auth } = await testServices(db, fixtureModules());
    const failed = (await testResult(app, auth, await finished(app, auth, "failed"))).statement.predicate;
    assert.equal(failed.result, "FAILED");
    assert.ok(failed.failedTests.includes("verdict/outcome"));
    const aborted = await finished(app, auth, "aborted");
    const report = await (await app.request(`/api/test-runs/${aborted}/report.json`, { headers: auth }))
      .json();
    assert.equal(report.verdict.value, "invalid");
    const invalid = (await testResult(app, auth, aborted)).statement.predicate;
    assert.equal(invalid.result, "FAILED");
    assert.ok(invalid.failedTests.includes("verdict/outcome"));
  },
);

dbTest("attestations: admin token or the page's share link; 401, 403, 404 otherwise", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const id = await finished(app, auth);
  const { url } = await (await app.request(`/api/test-runs/${id}/share`, jsonReq("POST", undefined, auth)))
    .json();
  const q = new URL(url).search;
  const shared = await attestations(app, id, {}, q);
  assert.equal(shared.status, 200);
  assert.equal((await shared.json()).attestations.length, 2);
  const none = await attestations(app, id);
  assert.equal(none.status, 401);
  await none.body?.cancel();
  const tampered = await attestations(
    app,
    id,
    {},
    q.replace(/sig=(.)/, (_, c: string) => `sig=${c === "A" ? "B" : "A"}`),
  );
  assert.equal(tampered.status, 403);
  await tampered.body?.cancel();
  const other = await finished(app, auth);
  const wrong = await attestations(app, other, {}, q);
  assert.equal(wrong.status, 403, "a link opens its own run only");
  await wrong.body?.cancel();
  const unknown = await attestations(app, crypto.randomUUID(), auth);
  assert.equal(unknown.status, 404);
  assert.equal(unknown.headers.get("content-type"), "application/problem+json");
  await unknown.body?.cancel();
  const active = await startRun(app, auth, { planIdentifier: PLAN });
  const unfinished = await attestations(app, active.executionId, auth);
  assert.equal(unfinished.status, 404);
  await unfinished.body?.cancel();
});

dbTest(
  "run attestations are append-only; a report frozen before them is attested when first asked",
  async (db) => {
    const { app, auth, svc } = await testServices(db, fixtureModules());
    // Finished without the HTTP route (as before this change): no envelope stored yet.
    const legacy = await svc.runs.start({ planIdentifier: PLAN });
    await svc.runs.finish(legacy.executionId, { outcome: "passed", results: { latencySamplesMs: [1, 2] } });
    const count = async () =>
      (await db.kysely.selectFrom("run_attestations").select(db.kysely.fn.countAll().as("n"))
        .executeTakeFirstOrThrow())
        .n;
    assert.equal(Number(await count()), 0);
    const first = await testResult(app, auth, legacy.executionId);
    assert.equal(first.statement.predicateType, TEST_RESULT);
    assert.equal(Number(await count()), 1);

    await assert.rejects(
      sql`update run_attestations set envelope_json = 'x'`.execute(db.kysely),
      /append-only/,
    );
    await assert.rejects(sql`delete from run_attestations`.execute(db.kysely), /append-only/);
    await assert.rejects(sql`truncate run_attestations`.execute(db.kysely), /append-only/);
    // The audited delete of a finished run removes its attestations with it.
    await sql`select dutlab_delete_finished_run(${legacy.executionId}, 'customer asked for erasure', 'ops@lab')`
      .execute(db.kysely);
    assert.equal(Number(await count()), 0);
    const gone = await attestations(app, legacy.executionId, auth);
    assert.equal(gone.status, 404);
    await gone.body?.cancel();
  },
);
