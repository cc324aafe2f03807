import assert from "node:assert/strict";
import { relative } from "node:path";
import { childEnv } from "../../core/harness/process.ts";
import { dbTest } from "../../core/harness/db.ts";
import { TEST_ADMIN_TOKEN, testServices } from "../../core/harness/app.ts";
import { fixtureModules, startFixtureDevice } from "@dutlab/core/testing";
import { verifyReport, verifyReportBytes } from "../../core/harness/core.ts";
import { canonicalJson, jcsSha256, sha256Hex } from "@dutlab/core";
import type { ReportData } from "../../core/harness/core.ts";
import {
  type App,
  type Auth,
  fetchReport,
  finishRun,
  register,
  snapshot,
  startRun,
} from "../../core/harness/runs_lab.ts";
import { main } from "../../tools/verify_report_src.ts";
import { reportFixture } from "../../core/harness/report_fixture.ts";
import { generateSigningKey, ReportSigningKey, signReport } from "../../core/harness/core.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const enc = new TextEncoder();

/** A finished run on the fixture lab with snapshots, so every annex has a body. */
async function reportText(app: App, auth: Auth): Promise<{ executionId: string; text: string }> {
  const dev = await startFixtureDevice();
  try {
    const id = await register(app, auth, "fixture-fw", "fw-verify-1", {
      sim: dev.sim,
      credentials: { username: "admin", password: dev.state.password },
    });
    await snapshot(app, auth, id);
    const run = await startRun(app, auth, { planIdentifier: "fixture-plan", notes: "ünïcødé notes ✓" });
    await snapshot(app, auth, id);
    await finishRun(app, auth, run.executionId, {
      outcome: "passed",
      results: { latencySamplesMs: [4, 8, 15, 16, 23, 42] },
    });
    const r = await fetchReport(app, auth, run.executionId);
    assert.equal(r.status, 200);
    return { executionId: run.executionId, text: r.text };
  } finally {
    await dev.sim.close();
  }
}

/**
 * The range of the JSON value of `"key":` at its first occurrence after `from`; a top-level member
 * (two-space indent) when `from` is not given.
 */
function valueSpan(text: string, key: string, from?: number): [number, number] {
  const needle = from === undefined ? `\n  "${key}": ` : `"${key}": `;
  const k = text.indexOf(needle, from ?? 0);
  assert.ok(k >= 0, key);
  const start = k + needle.length;
  const open = text[start];
  if (open === "{" || open === "[") {
    let depth = 0;
    let inString = false;
    for (let i = start; i < text.length; i++) {
      const ch = text[i];
      if (inString) {
        if (ch === "\\") i++;
        else if (ch === '"') inString = false;
      } else if (ch === '"') inString = true;
      else if (ch === "{" || ch === "[") depth++;
      else if (ch === "}" || ch === "]") {
        if (--depth === 0) return [start, i + 1];
      }
    }
  }
  const end = text.slice(start).search(/,\n|\n/);
  return [start, start + end];
}

const flipAt = (bytes: Uint8Array, i: number) => {
  const copy = new Uint8Array(bytes);
  copy[i]! ^= 0x01;
  return copy;
};

dbTest("the three hash kinds are exactly as documented", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const { text } = await reportText(app, auth);
  const report = JSON.parse(text) as ReportData;
  const { reportSha256, ...rest } = report;
  assert.equal(reportSha256, await sha256Hex(canonicalJson(rest)));
  assert.equal(report.meta.planSnapshotSha256, await sha256Hex(canonicalJson(report.plan)));
  for (const a of report.annexes) assert.equal(a.sha256, await sha256Hex(enc.encode(a.body)));
  const ok = await verifyReportBytes(enc.encode(text));
  assert.equal(ok.ok, true, JSON.stringify(ok.findings));
  assert.equal(ok.reportSha256, reportSha256);
  assert.deepEqual(ok.findings.map((f) => f.what), [
    "reportSha256",
    "meta.planSnapshotSha256",
    ...report.annexes.map((a) => `annex "${a.id}" sha256`),
  ]);
});

dbTest("flipping any single byte of a report is caught", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const { text } = await reportText(app, auth);
  const bytes = enc.encode(text);
  const missed: number[] = [];
  for (let i = 0; i < bytes.length; i++) {
    if ((await verifyReportBytes(flipAt(bytes, i))).ok) missed.push(i);
  }
  assert.deepEqual(missed, [], `flips accepted at byte offsets ${missed.slice(0, 10)}`);
  assert.ok(bytes.length > 5000, `a report of ${bytes.length} bytes`);
});

dbTest("a change in each member is reported against the hash that commits to it", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const { text } = await reportText(app, auth);
  const report = JSON.parse(text) as ReportData;
  const failing = async (mutated: string) => {
    const r = await verifyReportBytes(enc.encode(mutated));
    assert.equal(r.ok, false);
    return r.findings.filter((f) => !f.ok).map((f) => f.what);
  };
  /** Replace one character inside the value of `key` (a letter or digit that stays valid JSON). */
  const mutate = (key: string, from?: number) => {
    const [s, e] = valueSpan(text, key, from);
    for (let i = s; i < e; i++) {
      if (text[i] === "\\") {
        i++; // keep escape sequences valid
        continue;
      }
      const swap = /[0-8]/.test(text[i]!)
        ? String(Number(text[i]) + 1)
        : /[a-y]/.test(text[i]!)
        ? String.fromCharCode(text.charCodeAt(i) + 1)
        : null;
      if (swap) return text.slice(0, i) + swap + text.slice(i + 1);
    }
    throw new Error(`nothing to change in ${key}`);
  };

  for (
    const member of ["generatedAt", "meta", "license", "topology", "tlsDecrypt", "results", "slo", "version"]
  ) {
    if (member === "version") {
      assert.deepEqual(await failing(text.replace('"version": 1', '"version": 2')), [
        "version",
        "reportSha256",
      ]);
      continue;
    }
    assert.deepEqual(await failing(mutate(member)), ["reportSha256"], member);
  }
  assert.deepEqual(await failing(mutate("plan")), ["reportSha256", "meta.planSnapshotSha256"]);
  assert.deepEqual(await failing(mutate("planSnapshotSha256", 0)), [
    "reportSha256",
    "meta.planSnapshotSha256",
  ]);
  assert.deepEqual(await failing(mutate("reportSha256")), ["reportSha256"]);
  const annexes = text.indexOf('"annexes": ');
  for (const a of report.annexes) {
    const at = text.indexOf(`"id": "${a.id}"`, annexes);
    const changed = a.body === "[]"
      ? text.slice(0, at) + text.slice(at).replace('"body": "[]"', '"body": "[ ]"')
      : mutate("body", at);
    assert.deepEqual(await failing(changed), ["reportSha256", `annex "${a.id}" sha256`], a.id);
    assert.deepEqual(await failing(mutate("title", at)), ["reportSha256"], `${a.id} title`);
  }
  // A consistent forgery (body and its hash changed together) is still caught by reportSha256.
  const forged = structuredClone(report);
  forged.annexes[0]!.body += " ";
  forged.annexes[0]!.sha256 = await sha256Hex(forged.annexes[0]!.body);
  assert.deepEqual(
    (await verifyReport(forged)).findings.filter((f) => !f.ok).map((f) => f.what),
    ["reportSha256"],
  );
  // Only a full re-seal passes, which is why the cover's reportSha256 is what must be compared.
  const { reportSha256: _drop, ...rest } = forged;
  assert.equal((await verifyReport({ ...forged, reportSha256: await jcsSha256(rest) })).ok, true);
  // Not a report at all.
  assert.deepEqual(await failing("[]"), ["shape"]);
  assert.deepEqual(await failing("{"), ["JSON"]);
  assert.deepEqual(await failing(text.replace(/"body": "/, '"body": 1, "x": "')), [
    "reportSha256",
    `annex "${report.annexes[0]!.id}"`,
  ]);
});

async function task(args: string[], env: Record<string, string> = {}, cwd = ROOT) {
  const config = cwd === ROOT ? [] : ["--config", `${ROOT}deno.json`];
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", ...config, "verify-report", ...args],
    cwd,
    // As if started from `cwd`: an outer `deno task test` would otherwise pass its own INIT_CWD down (a
    // Deno.Command env adds to the inherited one, it cannot remove a variable).
    clearEnv: true,
    env: childEnv({ INIT_CWD: cwd, ...env }),
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

dbTest("deno task verify-report checks a file and a served URL and exits 1 on a mismatch", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const { executionId, text } = await reportText(app, auth);
  const sha = (JSON.parse(text) as ReportData).reportSha256;
  const dir = await Deno.makeTempDir({ prefix: "dutlab-verify-" });
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, app.fetch);
  try {
    const good = `${dir}/report.json`;
    await Deno.writeTextFile(good, text);
    const ok = await task([good]);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    assert.match(
      ok.stdout,
      new RegExp(`^OK reportSha256 ${sha} \\(signature NOT CHECKED: no --key, no envelope\\)$`, "m"),
    );

    // From any directory: a relative path is relative to where the command was started.
    const inDir = await task(["report.json"], {}, dir);
    assert.equal(inDir.code, 0, inDir.stdout + inDir.stderr);
    const sub = `${ROOT}tests`;
    const fromSub = await task([relative(sub, good)], {}, sub);
    assert.equal(fromSub.code, 0, fromSub.stdout + fromSub.stderr);

    const bad = `${dir}/tampered.json`;
    await Deno.writeTextFile(bad, text.replace('"outcome": "passed"', '"outcome": "failed"'));
    const no = await task([bad]);
    assert.equal(no.code, 1, no.stdout + no.stderr);
    assert.match(no.stdout, /MISMATCH {2}reportSha256: stated [0-9a-f]{64}, recomputed [0-9a-f]{64}/);
    assert.match(no.stdout, /^FAILED: 1 finding\(s\) differ$/m);

    const wrongExpect = await task([good, "--expect", "0".repeat(64)]);
    assert.equal(wrongExpect.code, 1);
    assert.match(wrongExpect.stdout, /MISMATCH {2}--expect/);
    assert.equal((await task([good, "--expect", sha])).code, 0);

    const base = `http://127.0.0.1:${server.addr.port}`;
    const env = { ADMIN_TOKEN: TEST_ADMIN_TOKEN };
    const url = await task([`${base}/api/test-runs/${executionId}/report.json`], env);
    assert.equal(url.code, 0, url.stdout + url.stderr);
    assert.match(url.stdout, /ok {8}X-Report-Sha256 header/);
    const page = await task([`${base}/runs/${executionId}/report`], env);
    assert.equal(page.code, 0, "a print-page URL is read as its report.json");
    assert.ok(page.stdout.includes(`/api/test-runs/${executionId}/report.json`));

    const noToken = await task([`${base}/api/test-runs/${executionId}/report.json`]);
    assert.equal(noToken.code, 2);
    assert.match(noToken.stderr, /HTTP 401 \(set ADMIN_TOKEN\)/);
    assert.equal((await task([])).code, 2, "usage");
    assert.equal((await task([`${dir}/missing.json`])).code, 2);
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

// Issue 33 point 5, the verifier's silence: every input gets a line saying what was and was not checked
// (the signature of a bare report.json too), and an input that is not a report (a run's JSON, a problem
// body) gets one clear line instead of a MISMATCH per missing member. Runs the verifier's source in
// process (tools/verify_report.ts is its build, checked by `deno task gen:verifier --check`).
/** Run the verifier on files written to a temporary folder; its exit code and printed lines. */
async function verify(
  files: Record<string, string>,
  args: string[],
): Promise<{ code: number; lines: string[] }> {
  const dir = await Deno.makeTempDir({ prefix: "verify_cli_" });
  const lines: string[] = [];
  const log = console.log;
  const error = console.error;
  try {
    for (const [name, text] of Object.entries(files)) await Deno.writeTextFile(`${dir}/${name}`, text);
    console.log = (...a: unknown[]) => lines.push(a.join(" "));
    console.error = (...a: unknown[]) => lines.push(a.join(" "));
    const code = await main(args.map((a) => a.startsWith("@") ? `${dir}/${a.slice(1)}` : a));
    return { code, lines };
  } finally {
    console.log = log;
    console.error = error;
    await Deno.remove(dir, { recursive: true });
  }
}

const fixtureText = async () => JSON.stringify(await reportFixture(), null, 2) + "\n";

Deno.test("a bare report.json: hashes checked, and the signature named as NOT CHECKED", async () => {
  const { code, lines } = await verify({ "report.json": await fixtureText() }, ["@report.json"]);
  assert.equal(code, 0, lines.join("\n"));
  assert.ok(
    lines.some((l) => /^ {2}-- {8}signature: NOT CHECKED \(no --key, no envelope/.test(l)),
    lines.join("\n"),
  );
  assert.match(
    lines.at(-1)!,
    /^OK reportSha256 [0-9a-f]{64} \(signature NOT CHECKED: no --key, no envelope\)$/,
  );
});

Deno.test("report and envelope without --key: the signature is NOT CHECKED (no --key); with it, checked", async () => {
  const text = await fixtureText();
  const key = await ReportSigningKey.fromText(await generateSigningKey());
  const envelope = await signReport(key, text);
  const bare = await verify({ "report.json": text, "e.json": envelope }, [
    "@report.json",
    "--envelope",
    "@e.json",
  ]);
  assert.equal(bare.code, 0, bare.lines.join("\n"));
  assert.ok(bare.lines.some((l) => l.includes("signature: NOT CHECKED (no --key)")), bare.lines.join("\n"));
  assert.match(bare.lines.at(-1)!, /^OK reportSha256 [0-9a-f]{64} \(signature NOT CHECKED: no --key\)$/);
  const keyed = await verify(
    { "report.json": text, "e.json": envelope, "key.pem": key.publicKey.publicKeyPem },
    ["@report.json", "--envelope", "@e.json", "--key", "@key.pem"],
  );
  assert.equal(keyed.code, 0, keyed.lines.join("\n"));
  assert.match(keyed.lines.at(-1)!, new RegExp(`^OK reportSha256 [0-9a-f]{64} signed by ${key.keyId}$`));
});

Deno.test("a run's JSON is one clear line, not a MISMATCH per member", async () => {
  const report = await reportFixture();
  // What GET /api/test-runs/{id} answers: it carries a reportSha256 too, which made the verifier check it.
  const runJson = JSON.stringify({
    runId: report.meta.runId,
    executionId: report.meta.executionId,
    planIdentifier: report.meta.planIdentifier,
    status: "finished",
    startedAt: report.meta.startedAt,
    endedAt: report.meta.endedAt,
    reportSha256: report.reportSha256,
    verdict: null,
  });
  const { code, lines } = await verify({ "run.json": runJson }, ["@run.json"]);
  assert.equal(code, 1);
  assert.equal(lines.filter((l) => l.includes("MISMATCH")).length, 0, lines.join("\n"));
  const said = lines.filter((l) => l.includes("NOT A REPORT"));
  assert.equal(said.length, 1, lines.join("\n"));
  assert.match(
    said[0]!,
    new RegExp(`a test run's JSON .*report is at /api/test-runs/${report.meta.executionId}/report\\.json`),
  );
  assert.equal(lines.at(-1), "FAILED: the input is not a report; nothing was checked");
});

Deno.test("a problem body (e.g. a 401 saved as report.json) is one clear line", async () => {
  const problem = JSON.stringify({
    type: "urn:dutlab:problem:unauthorized",
    title: "Unauthorized",
    status: 401,
    detail: "Missing or invalid bearer token",
  });
  const { code, lines } = await verify({ "report.json": problem }, ["@report.json"]);
  assert.equal(code, 1);
  assert.equal(lines.filter((l) => l.includes("MISMATCH")).length, 0, lines.join("\n"));
  assert.equal(lines.filter((l) => l.includes("NOT A REPORT")).length, 1);
  assert.ok(
    lines.some((l) => /problem\+json.*HTTP 401 Unauthorized: Missing or invalid bearer token/.test(l)),
  );
});

Deno.test("--replay on something that is not a bundle: a usage-level error, exit 2", async () => {
  const { code, lines } = await verify({ "x.json": "{}" }, ["--replay", "@x.json"]);
  assert.equal(code, 2);
  assert.match(lines.join("\n"), /neither a folder nor a \.tar\.gz/);
});
