/**
 * Issue 29 point 1: `dutlab`, the command-line client, run as a child process (`deno run cli/main.ts`, what
 * `deno task cli` runs) against a real `serve` process and the lab's simulators (`tools/lab.ts`): the CI job
 * of docs/ci.md "Command-line client", its exit codes, one-line errors and output formats. JUnit
 * files are judged by `xmllint --schema` with the published windyroad JUnit XSD.
 */
import assert from "node:assert/strict";
// deno-lint-ignore no-import-prefix -- test-only: kept out of deno.json and deno.lock (tests/gate/lockfiles_test.ts)
import { marked } from "npm:marked@18.2.1";
import { childEnv } from "../../core/harness/process.ts";
import { dbTest } from "../../core/harness/db.ts";
import { ServeProcess, startLab } from "../../core/harness/serve.ts";
import { TEST_ADMIN_TOKEN } from "../../core/harness/app.ts";
import { commandHelp } from "../../cli/_main.ts";
import { COMMANDS } from "../../cli/_main.ts";
import { modules } from "../../modules.gen.ts";
import { adapterForRole } from "../../core/harness/lab.ts";

/** The lab's devices: one simulator per enabled adapter. */
const N = modules.adapters.length;
/** The lab's first firewall (it offers the lab setting deploy, LAB_FAULTS) and its switch: by role. */
const FW = adapterForRole(modules, "ngfw").vendor, SW = adapterForRole(modules, "switch").vendor;

const ROOT = new URL("../..", import.meta.url).pathname;
const XSD = `${ROOT}tests/testdata/junit/JUnit.xsd`;
const PLAN = "ngfw-throughput-decrypt-on";
const dec = new TextDecoder();
/** The escape that starts an ANSI colour. */
const ESC = "\u001b";

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** `dutlab …` as a child process in `cwd`, with DUT_URL and DUT_TOKEN (the inherited environment otherwise). */
async function dutlab(
  cwd: string,
  env: Record<string, string>,
  args: string[],
  stdin?: string,
): Promise<Ran> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--config", `${ROOT}deno.json`, `${ROOT}cli/main.ts`, ...args],
    cwd,
    clearEnv: true,
    env: childEnv(env, { remove: ["DUT_URL", "DUT_TOKEN"] }),
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const o = await child.output();
  return { code: o.code, stdout: dec.decode(o.stdout), stderr: dec.decode(o.stderr) };
}

/** A failed command's stderr: exactly one line, no stack. */
function oneLineError(r: Ran) {
  const lines = r.stderr.trimEnd().split("\n");
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0]!, /^dutlab: /);
  assert.doesNotMatch(r.stderr, /\n\s+at |\.ts:\d+:\d+/);
}

async function xmllint(...args: string[]): Promise<{ ok: boolean; out: string; err: string }> {
  const o = await new Deno.Command("xmllint", { args, stdout: "piped", stderr: "piped" }).output();
  return { ok: o.success, out: dec.decode(o.stdout), err: dec.decode(o.stderr) };
}

dbTest(
  "the CLI drives devices, snapshots, pre-flight, runs, reports and tokens against serve and the lab; exit codes follow the table",
  async (db, t) => {
    const work = await Deno.makeTempDir({ prefix: "dutlab-cli-" });
    const lab = await startLab(`${work}/lab-data`);
    const svc = ServeProcess.overTestDb(db, work, { DUT_API_POLLER_DISABLE: "1" });
    const env = { DUT_URL: svc.base, DUT_TOKEN: TEST_ADMIN_TOKEN };
    const run = (args: string[], stdin?: string, extra: Record<string, string> = {}) =>
      dutlab(work, { ...env, ...extra }, args, stdin);
    try {
      await svc.ready();
      const shown = await lab.show();
      let executionId = "";

      await t.step("devices apply registers the lab, then updates it (by hostname)", async () => {
        const devices = shown.map((d) => ({
          hostname: d.hostname,
          vendor: d.vendor,
          baseUrl: d.url,
          username: d.username,
          password: d.password,
          tlsVerifyMode: "self-signed",
        }));
        await Deno.writeTextFile(`${work}/lab.json`, JSON.stringify(devices));
        const first = await run(["devices", "apply", "-f", "lab.json"]);
        assert.equal(first.code, 0, first.stderr);
        assert.equal((first.stdout.match(/ registered /g) ?? []).length, N, first.stdout);
        const again = await run(["devices", "apply", "-f", "-"], JSON.stringify(devices));
        assert.equal(again.code, 0, again.stderr);
        assert.equal((again.stdout.match(/ updated /g) ?? []).length, N, again.stdout);
        const list = await run(["devices", "list", "--json"]);
        assert.deepEqual(
          JSON.parse(list.stdout).devices.map((d: { hostname: string }) => d.hostname).sort(),
          shown.map((d) => d.hostname).sort(),
        );
        const table = await run(["devices", "list"]);
        assert.match(table.stdout.split("\n")[0]!, /^HOSTNAME\s+VENDOR\s+ROLE\s+ENABLED\s+STATUS/);
        assert.ok(!table.stdout.includes(ESC), "no colour off a terminal");
      });

      await t.step("snapshot --all prints a progress line per device and a summary", async () => {
        const r = await run(["snapshot", "--all"]);
        assert.equal(r.code, 0, r.stdout + r.stderr);
        const lines = r.stdout.trimEnd().split("\n");
        assert.deepEqual(
          lines.slice(0, N).map((l) => l.replace(/ .*/, "")),
          Array.from({ length: N }, (_, i) => `[${i + 1}/${N}]`),
        );
        for (const l of lines.slice(0, N)) assert.match(l, new RegExp(`^\\[\\d+/${N}\\] lab-\\S+\\s+ok\\b`));
        assert.equal(lines[N], `${N} devices: ${N} ok, 0 failed`);
      });

      await t.step("preflight to a JUnit file: exit 0, valid against the XSD", async () => {
        const r = await run(["preflight", PLAN, "--format", "junit", "--out", "preflight.xml"]);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stderr, /pre-flight passed: junit written to preflight\.xml/);
        const v = await xmllint("--noout", "--schema", XSD, `${work}/preflight.xml`);
        assert.ok(v.ok, v.err);
        const human = await run(["preflight", PLAN]);
        assert.equal(human.code, 0);
        assert.match(human.stdout, /^DEVICE\s+CHECK\s+STATUS\s+DETAIL/);
        assert.match(human.stdout, /\nPASS \d+\/\d+ checks passed — ready for /);
      });

      await t.step("runs start, finish with the k6 export; exit codes follow the verdict", async () => {
        const started = await run(["runs", "start", PLAN, "-q"]);
        assert.equal(started.code, 0, started.stderr);
        executionId = started.stdout.trim();
        assert.match(executionId, /^[0-9a-f-]{36}$/);
        const busy = await run(["runs", "start", PLAN]);
        assert.equal(busy.code, 1, "a second active run is refused (409)");
        oneLineError(busy);
        const active = await run(["runs", "get", executionId]);
        assert.equal(active.code, 0, "an active run has no verdict yet");
        const fin = await run([
          "runs",
          "finish",
          executionId,
          "--k6",
          `${ROOT}examples/k6-summary.json`,
          "--json",
        ]);
        const finished = JSON.parse(fin.stdout);
        assert.equal(fin.code, finished.verdict.value === "pass" ? 0 : 1, fin.stderr);
        const got = await run(["runs", "get", executionId, "--format", "markdown"]);
        assert.equal(got.code, fin.code);
        assert.equal(marked.lexer(got.stdout).filter((x) => x.type === "table").length, 1, got.stdout);
        const xml = await run(["runs", "get", executionId, "--format", "junit", "--out", "run.xml"]);
        assert.equal(xml.code, fin.code);
        const v = await xmllint("--noout", "--schema", XSD, `${work}/run.xml`);
        assert.ok(v.ok, v.err);
        const list = await run(["runs", "list", "--status", "finished"]);
        assert.match(list.stdout, new RegExp(executionId));
      });

      await t.step("report get and verify (by file and by executionId)", async () => {
        const got = await run(["report", "get", executionId, "--out", "report.json"]);
        assert.equal(got.code, 0, got.stderr);
        assert.match(got.stderr, /report written to report\.json \(\d+ bytes, report sha256:[0-9a-f]{64}\)/);
        const byFile = await run(["report", "verify", "report.json"]);
        assert.equal(byFile.code, 0, byFile.stdout + byFile.stderr);
        const byId = await run(["report", "verify", executionId]);
        assert.equal(byId.code, 0, byId.stdout + byId.stderr);
        const report = JSON.parse(await Deno.readTextFile(`${work}/report.json`));
        report.meta.executionId = crypto.randomUUID();
        await Deno.writeTextFile(`${work}/tampered.json`, JSON.stringify(report));
        assert.equal((await run(["report", "verify", "tampered.json"])).code, 1);
        const pdf = await run(["report", "pdf", executionId, "--out", "report.pdf"]);
        assert.equal(pdf.code, 0, pdf.stderr);
        const pdfOk = await run(["report", "verify", "report.pdf", "--key", `${svc.base}/api/report-keys`]);
        assert.equal(pdfOk.code, 0, pdfOk.stdout + pdfOk.stderr);
      });

      await t.step("runs compare: a slower second run is a regression (exit 1), JUnit valid", async () => {
        const second = await run(["runs", "start", PLAN, "-q"]);
        assert.equal(second.code, 0, second.stderr);
        const id2 = second.stdout.trim();
        await Deno.writeTextFile(`${work}/samples.json`, JSON.stringify([500, 600, 900, 1200]));
        const fin = await run(["runs", "finish", id2, "--samples", "samples.json"]);
        assert.equal(fin.code, 1, "raw samples without a duration: not a pass verdict");
        const cmp = await run(["runs", "compare", executionId, id2, "--format", "junit", "--out", "cmp.xml"]);
        assert.equal(cmp.code, 1, cmp.stderr);
        const v = await xmllint("--noout", "--schema", XSD, `${work}/cmp.xml`);
        assert.ok(v.ok, v.err);
        assert.equal(
          (await xmllint("--xpath", "count(//testcase/failure)", `${work}/cmp.xml`)).out.trim(),
          "1",
        );
        const table = await run(["runs", "compare", executionId, id2]);
        assert.equal(table.code, 1);
        assert.match(table.stdout, /^RUN\s+BASELINE\s+VERDICT\s+P99 MS/);
        const same = await run(["runs", "compare", executionId, executionId]);
        assert.equal(same.code, 2, "a duplicate id is the service's 400");
        oneLineError(same);
      });

      await t.step(
        "a failing check stops pre-flight with exit 1 and a JUnit file naming the check",
        async () => {
          await lab.set(FW, "deploy=failed");
          const snap = await run(["snapshot", `lab-${FW}`]);
          assert.equal(snap.code, 0, snap.stdout);
          const r = await run(["preflight", PLAN, "--format", "junit", "--out", "failed.xml"]);
          assert.equal(r.code, 1);
          const v = await xmllint("--noout", "--schema", XSD, `${work}/failed.xml`);
          assert.ok(v.ok, v.err);
          const failed = await xmllint("--xpath", "string(//testcase[failure]/@name)", `${work}/failed.xml`);
          assert.equal(failed.out.trim(), "ngfw-deploy-clean");
          const csv = await run(["preflight", PLAN, "--format", "csv"]);
          assert.equal(csv.code, 1);
          assert.match(csv.stdout, /^device,vendor,check,status,detail,/);
          await lab.set(FW, "deploy=ok");
        },
      );

      await t.step("errors: one line, the documented exit code", async () => {
        const cases: Array<[string[], number, RegExp, Record<string, string>?]> = [
          [["devices", "get", "no-such-host"], 4, /No device with hostname "no-such-host"/],
          [["runs", "get", crypto.randomUUID()], 4, /HTTP 404/],
          [["preflight", "no-such-plan"], 4, /HTTP 404: No plan with identifier "no-such-plan"/],
          [["preflight", PLAN, "--format", "yaml"], 2, /--format must be one of json, junit, markdown, csv/],
          [["preflight", PLAN, "--bogus"], 2, /Unknown option '--bogus'/],
          [["runs", "list", "--limit", "0"], 2, /HTTP 400: .*query\.limit/],
          [["devices", "list"], 3, /HTTP 401/, { DUT_TOKEN: "x".repeat(30) }],
          [["devices", "list"], 2, /No token/, { DUT_TOKEN: "" }],
          [["nope"], 2, /Unknown command "nope"/],
        ];
        for (const [args, code, re, extra] of cases) {
          const r = await run(args, undefined, extra);
          assert.equal(r.code, code, `${args.join(" ")}: ${r.stderr}`);
          oneLineError(r);
          assert.match(r.stderr, re);
        }
      });

      await t.step("tokens: a viewer token may read, not write (exit 3)", async () => {
        const made = await run(["tokens", "create", "ci-viewer", "--role", "viewer", "-q"]);
        assert.equal(made.code, 0, made.stderr);
        const viewer = { DUT_TOKEN: made.stdout.trim() };
        assert.equal((await run(["devices", "list"], undefined, viewer)).code, 0);
        await Deno.writeTextFile(`${work}/viewer.token`, made.stdout);
        const refused = await run(
          ["devices", "set", `lab-${SW}`, "--notes", "x", "--token-file", "viewer.token"],
          undefined,
          { DUT_TOKEN: "" },
        );
        assert.equal(refused.code, 3, refused.stderr);
        oneLineError(refused);
        const list = await run(["tokens", "list"]);
        assert.match(list.stdout, /ci-viewer\s+viewer/);
        assert.doesNotMatch(list.stdout, new RegExp(viewer.DUT_TOKEN));
        assert.equal((await run(["tokens", "revoke", "ci-viewer"])).code, 0);
        assert.equal((await run(["devices", "list"], undefined, viewer)).code, 3);
      });

      await t.step("devices set, test, add and rm", async () => {
        const set = await run(["devices", "set", `lab-${SW}`, "--notes", "rack 4", "--json"]);
        assert.equal(set.code, 0, set.stderr);
        assert.equal(JSON.parse(set.stdout).notes, "rack 4");
        const test = await run(["devices", "test", `lab-${SW}`]);
        assert.equal(test.code, 0, test.stdout);
        const sw = shown.find((d) => d.vendor === SW)!;
        const add = await run([
          "devices",
          "add",
          "--hostname",
          "extra-switch",
          "--vendor",
          sw.vendor,
          "--base-url",
          sw.url,
          "--username",
          sw.username,
          "--password-file",
          "-",
          "--tls-verify-mode",
          "self-signed",
        ], sw.password + "\n");
        assert.equal(add.code, 0, add.stderr);
        assert.equal((await run(["devices", "get", "extra-switch"])).code, 0);
        const dup = await run([
          "devices",
          "add",
          "--hostname",
          "extra-switch",
          "--vendor",
          sw.vendor,
          "--base-url",
          sw.url,
          "--username",
          sw.username,
          "--password-file",
          "-",
        ], sw.password);
        assert.equal(dup.code, 1, "a duplicate hostname is a 409");
        oneLineError(dup);
        assert.equal((await run(["devices", "rm", "extra-switch"])).code, 0);
        assert.equal((await run(["devices", "get", "extra-switch"])).code, 4);
      });

      // The request members of issue 29 points 3 and 4, passed through by the CLI.
      await t.step({
        name: "preflight filters, dry run and as-of against the service",
        fn: async () => {
          const only = await run(["preflight", PLAN, "--check", "ngfw-deploy-clean", "--json"]);
          assert.ok(only.code === 0 || only.code === 1, only.stderr);
          const checks = JSON.parse(only.stdout).checks as Array<{ checkId: string; deviceHostname: string }>;
          assert.ok(checks.length > 0 && checks.every((c) => c.checkId === "ngfw-deploy-clean"));
          const one = await run(["preflight", PLAN, "--device", `lab-${FW}`, "--json"]);
          assert.ok(
            JSON.parse(one.stdout).checks.every((c: { deviceHostname: string }) =>
              c.deviceHostname === `lab-${FW}`
            ),
          );
          assert.equal((await run(["preflight", PLAN, "--dry-run", "--json"])).code, 0);
          const past = await run(["preflight", PLAN, "--as-of", new Date().toISOString(), "--json"]);
          assert.ok(past.code === 0 || past.code === 1, past.stderr);
          const unknown = await run(["preflight", PLAN, "--check", "no-such-check"]);
          assert.equal(unknown.code, 2);
          assert.match(unknown.stderr, /no-such-check/);
        },
      });
      await t.step({
        name: "device tags: set with devices set --tag, filtered by devices list --tag",
        fn: async () => {
          assert.equal((await run(["devices", "set", `lab-${FW}`, "--tag", "edge"])).code, 0);
          const r = await run(["devices", "list", "--tag", "edge", "--json"]);
          assert.equal(r.code, 0, r.stderr);
          assert.deepEqual(JSON.parse(r.stdout).devices.map((d: { hostname: string }) => d.hostname), [
            `lab-${FW}`,
          ]);
        },
      });
      await t.step({
        name: "a gated start over a failing pre-flight exits 1; --override starts it",
        fn: async () => {
          await lab.set(FW, "deploy=failed");
          assert.equal((await run(["snapshot", `lab-${FW}`])).code, 0);
          const gated = await run(["runs", "start", PLAN, "--require-preflight-pass"]);
          assert.equal(gated.code, 1);
          assert.match(gated.stderr, /Run not started: pre-flight did not pass/);
          assert.match(gated.stdout, /ngfw-deploy-clean/);
          const over = await run([
            "runs",
            "start",
            PLAN,
            "--require-preflight-pass",
            "--override",
            "vendor ticket 42",
            "-q",
          ]);
          assert.equal(over.code, 0, over.stderr);
          await lab.set(FW, "deploy=ok");
        },
      });

      await t.step("the service gone: exit 3", async () => {
        await svc.stop();
        const r = await run(["runs", "list"]);
        assert.equal(r.code, 3);
        oneLineError(r);
        assert.match(r.stderr, /Cannot reach the service at http:\/\/127\.0\.0\.1:\d+/);
      });
    } finally {
      await svc.stop();
      await lab.stop();
      await Deno.remove(work, { recursive: true }).catch(() => {});
    }
  },
);

Deno.test("every command has --help; colour only on a terminal and never with NO_COLOR", async () => {
  for (const c of COMMANDS) assert.match(commandHelp(c), new RegExp(`Usage: dutlab ${c.path.join(" ")}`));
  const work = await Deno.makeTempDir();
  try {
    const help = await dutlab(work, {}, ["runs", "start", "--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--require-preflight-pass/);
    // `script` gives the CLI a terminal; the service is a throwaway one answering a fixed device list.
    const device = {
      id: crypto.randomUUID(),
      hostname: "fw",
      vendor: "v",
      deviceRole: null,
      baseUrl: "https://fw",
      username: "u",
      tlsVerifyMode: "strict",
      tlsWarning: null,
      pollIntervalSeconds: 300,
      notes: null,
      enabled: true,
      lastPollAt: null,
      lastPollStatus: "ok",
      lastPollError: null,
      pinnedCertSha256: null,
      createdAt: "2026-11-25T00:00:00Z",
      updatedAt: "2026-11-25T00:00:00Z",
    };
    await using server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      () => Response.json({ devices: [device], vendors: [] }),
    );
    const cmd = `${Deno.execPath()} run -A --config ${ROOT}deno.json ${ROOT}cli/main.ts devices list`;
    const onTty = async (noColor: string | null) => {
      const env = childEnv({ DUT_URL: `http://127.0.0.1:${server.addr.port}`, DUT_TOKEN: TEST_ADMIN_TOKEN });
      if (noColor === null) delete env.NO_COLOR;
      else env.NO_COLOR = noColor;
      const o = await new Deno.Command("script", {
        args: ["-qec", cmd, "/dev/null"],
        cwd: work,
        clearEnv: true,
        env,
        stdout: "piped",
        stderr: "piped",
      }).output();
      return dec.decode(o.stdout);
    };
    assert.ok((await onTty(null)).includes(`${ESC}[32mok`));
    assert.ok(!(await onTty("1")).includes(ESC));
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});

Deno.test("pass-through flags are sent with the issue's JSON names (devices, checks, tags, dryRun, asOf, …)", async () => {
  const work = await Deno.makeTempDir();
  const seen: Array<{ method: string; path: string; query: string; body: unknown }> = [];
  const preflight = {
    planIdentifier: "p",
    ranAt: "2026-11-25T00:00:00.000Z",
    checksRun: 0,
    checksPassed: 0,
    checksFailed: 0,
    checksSkipped: 0,
    pass: true,
    checks: [],
    summary: "0/0",
  };
  await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const url = new URL(req.url);
    const text = await req.text();
    seen.push({
      method: req.method,
      path: url.pathname,
      query: url.search,
      body: text ? JSON.parse(text) : null,
    });
    if (url.pathname === "/api/test-runs/preflight") return Response.json(preflight);
    if (url.pathname === "/api/test-runs") {
      return Response.json({ executionId: crypto.randomUUID() }, { status: 201 });
    }
    if (url.pathname === "/api/admin/dut/devices" && req.method === "POST") {
      return Response.json({ ok: true, deviceId: crypto.randomUUID() }, { status: 201 });
    }
    return Response.json({ devices: [], vendors: [] });
  });
  const env = { DUT_URL: `http://127.0.0.1:${server.addr.port}`, DUT_TOKEN: TEST_ADMIN_TOKEN };
  try {
    const pf = await dutlab(work, env, [
      "preflight",
      "p",
      "--device",
      "fw-1",
      "--device",
      "fw-2",
      "--check",
      "ntp",
      "--tag",
      "edge",
      "--dry-run",
      "--as-of",
      "2026-11-25T10:00:00Z",
      "--json",
    ]);
    assert.equal(pf.code, 0, pf.stderr);
    assert.deepEqual(seen.at(-1)!.body, {
      planIdentifier: "p",
      devices: ["fw-1", "fw-2"],
      checks: ["ntp"],
      tags: ["edge"],
      dryRun: true,
      asOf: "2026-11-25T10:00:00Z",
    });
    assert.equal(seen.at(-1)!.query, "?format=json");
    const badTime = await dutlab(work, env, ["preflight", "p", "--as-of", "yesterday"]);
    assert.equal(badTime.code, 2);
    oneLineError(badTime);
    const start = await dutlab(work, env, [
      "runs",
      "start",
      "p",
      "--require-preflight-pass",
      "--override",
      "why",
      "-q",
    ]);
    assert.equal(start.code, 0, start.stderr);
    assert.deepEqual(seen.at(-1)!.body, {
      planIdentifier: "p",
      requirePreflightPass: true,
      override: { reason: "why" },
    });
    await dutlab(work, env, ["devices", "list", "--tag", "a", "--tag", "b"]);
    assert.equal(new URLSearchParams(seen.at(-1)!.query).getAll("tag").join(","), "a,b");
    const add = await dutlab(work, env, [
      "devices",
      "add",
      "--hostname",
      "h",
      "--vendor",
      "v",
      "--base-url",
      "https://h",
      "--username",
      "u",
      "--password-file",
      "-",
      "--tag",
      "edge",
    ], "secret\n");
    assert.equal(add.code, 0, add.stderr);
    assert.deepEqual(seen.at(-1)!.body, {
      hostname: "h",
      vendor: "v",
      baseUrl: "https://h",
      username: "u",
      password: "secret",
      tags: ["edge"],
    });
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});

/** The documented CI step: the `sh` block of docs/ci.md "The pipeline step" that starts with `set -euo pipefail`. */
async function readmeCiStep(): Promise<string> {
  const page = await Deno.readTextFile(`${ROOT}docs/ci.md`);
  const section = page.slice(page.indexOf("\n## The pipeline step\n"));
  const m = /\n```sh\n(set -euo pipefail\n[\s\S]*?)\n```\n/.exec(section);
  if (!m) throw new Error('docs/ci.md "The pipeline step" has no example CI step');
  return m[1]!;
}

dbTest(
  "the documented CI step (docs/ci.md) runs as written; one failing check stops it at pre-flight",
  async () => {
    // The clone mirrored with symlinks, so the files the step writes stay in a temporary directory.
    const work = await Deno.makeTempDir({ prefix: "dutlab-ci-" });
    const clone = `${work}/clone`;
    await Deno.mkdir(clone);
    for await (const e of Deno.readDir(ROOT)) {
      if ([".data", "dist", ".git"].includes(e.name)) continue;
      await Deno.symlink(`${ROOT}${e.name}`, `${clone}/${e.name}`);
    }
    const lab = await startLab(`${work}/lab-data`);
    const svc = new ServeProcess(null, { DUT_DATA_DIR: `${work}/serve-data`, DUT_API_POLLER_DISABLE: "1" });
    const step = await readmeCiStep();
    const job = async () => {
      const o = await new Deno.Command("bash", {
        args: ["-c", step],
        cwd: clone,
        clearEnv: true,
        env: childEnv({ DUT_URL: svc.base, DUT_TOKEN: TEST_ADMIN_TOKEN, DUT_DATA_DIR: `${work}/lab-data` }),
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      return { code: o.code, stdout: dec.decode(o.stdout), stderr: dec.decode(o.stderr) };
    };
    try {
      await svc.ready();
      // The sample k6 export covers minutes of the plan's 50: verdict inconclusive, so the step ends with 1
      // after downloading and verifying the report (README).
      const passed = await job();
      assert.equal(passed.code, 1, passed.stdout + passed.stderr);
      assert.match(passed.stdout, new RegExp(`\\[${N}/${N}\\] lab-\\S+\\s+ok`));
      assert.match(passed.stdout, new RegExp(`${N} devices: ${N} ok, 0 failed`));
      assert.match(passed.stderr, /pre-flight passed: junit written to out\/preflight\.xml/);
      assert.match(passed.stdout, /finished: verdict inconclusive, outcome passed/);
      assert.match(passed.stderr, /report written to out\/report\.json/);
      assert.match(passed.stdout, /\nOK reportSha256 [0-9a-f]{64}/);
      assert.ok((await xmllint("--noout", "--schema", XSD, `${clone}/out/preflight.xml`)).ok);
      assert.ok((await Deno.stat(`${clone}/out/report.json`)).size > 0);

      await lab.set(FW, "deploy=failed");
      await Deno.remove(`${clone}/out/preflight.xml`);
      const runsBefore = (await (await fetch(`${svc.base}/api/test-runs`, {
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      })).json()).runs.length;
      const failed = await job();
      assert.equal(failed.code, 1, failed.stdout + failed.stderr);
      assert.match(failed.stderr, /pre-flight not passed: junit written to out\/preflight\.xml/);
      const named = await xmllint(
        "--xpath",
        "string(//testcase[failure]/@name)",
        `${clone}/out/preflight.xml`,
      );
      assert.equal(named.out.trim(), "ngfw-deploy-clean");
      const runsAfter = (await (await fetch(`${svc.base}/api/test-runs`, {
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      })).json()).runs.length;
      assert.equal(runsAfter, runsBefore, "the job stopped before starting a run");
      assert.doesNotMatch(failed.stdout, /finished: verdict/);
    } finally {
      await svc.stop();
      await lab.stop();
      await Deno.remove(work, { recursive: true }).catch(() => {});
    }
  },
  { only: ["pglite"] },
);
