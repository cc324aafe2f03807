/**
 * Issue 33 point 5, the verifier's silence: every input gets a line saying what was and was not checked
 * (the signature of a bare report.json too), and an input that is not a report (a run's JSON, a problem
 * body) gets one clear line instead of a MISMATCH per missing member. Runs the verifier's source in
 * process (tools/verify_report.ts is its build, checked by `deno task gen:verifier --check`).
 */
import assert from "node:assert/strict";
import { main } from "../../tools/verify_report_src.ts";
import { reportFixture } from "../../core/harness/report_fixture.ts";
import { generateSigningKey, ReportSigningKey, signReport } from "../../core/harness/core.ts";

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

const reportText = async () => JSON.stringify(await reportFixture(), null, 2) + "\n";

Deno.test("a bare report.json: hashes checked, and the signature named as NOT CHECKED", async () => {
  const { code, lines } = await verify({ "report.json": await reportText() }, ["@report.json"]);
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
  const text = await reportText();
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
