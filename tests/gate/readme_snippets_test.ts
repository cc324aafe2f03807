/**
 * Every shell block of the README and of the documentation runs as written (issue 16 point 4, issue 33 points
 * 3 and 4, issue 47 point 3).
 *
 * Every ```sh block of README.md and of the pages of `PAGES` (every `docs/*.md`, in that order; a page missing
 * from the list fails the test), whatever its section (a block added later is picked up by itself), runs in
 * that order as one bash script with `set -euo pipefail`, against a live `serve` and `lab` started with the
 * README's own command lines, on a PATH that holds no `deno` (only Node.js and npm: `npx -y deno@…`). A block
 * that cannot run in a test is listed in `NOT_RUN` with its one-line reason (a listed block the README no
 * longer has fails the test). Lines that start a long-running process (`task serve`, `task lab` without
 * `set`/`show`) are what this test runs in the background; `task test` is not run (it is this suite).
 *
 * It runs on the embedded database and, with TEST_DATABASE_URL, on PostgreSQL (a fresh schema, the secrets in
 * the environment and a stale `.data/secrets.json` left from an embedded start: the snippets must use the
 * configured token). Then the lab is restarted and its devices must still poll `ok`, and the work directory
 * must hold no file the snippets wrote outside `./out/` and `./.data/` (both ignored by git).
 *
 * The work directory mirrors the clone with symlinks, so what the snippets write stays in a temporary directory.
 */
import assert from "node:assert/strict";
// @ts-types="@types/pg"
import pg from "pg";
import { childEnv } from "../../core/harness/process.ts";
import { freePort } from "../../core/harness/serve.ts";
import { NO_POSTGRES_REASON } from "../../core/harness/db.ts";
import {
  TEST_ADMIN_TOKEN,
  TEST_CRED_KEY,
  TEST_PDF_CERT,
  TEST_PDF_KEY,
  TEST_SIGNING_KEY,
} from "../../core/harness/app.ts";

const ROOT = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");
/**
 * README.md, then the documentation pages, in the order their blocks run (later pages use what earlier ones
 * made: `$ID` of the run finished in runs.md, `$IDS` of its comparison). Every `docs/*.md` is listed.
 */
export const PAGES = [
  "README.md",
  "docs/ci.md",
  "docs/devices.md",
  "docs/polling.md",
  "docs/preflight.md",
  "docs/reservations.md",
  "docs/runs.md",
  "docs/reports.md",
  "docs/http-api.md",
  "docs/security.md",
  "docs/data.md",
  "docs/deploy-postgres.md",
  "docs/lab-as-code.md",
  "docs/notifications.md",
  "docs/configuration.md",
  "docs/architecture.md",
  "docs/extending.md",
  "docs/development.md",
  "docs/netbox.md",
];
const LONG_RUNNING = /^npx -y deno@[\d.]+ task (serve|lab(?! (set|show)\b))\b/;
/** Lines never run, with the reason. */
const SKIPPED_LINES: Array<[RegExp, string]> = [
  [/^npx -y deno@[\d.]+ task test\b/, "the whole test suite: this test is part of it"],
];
/**
 * Blocks that cannot run in this test: the page and heading they are under, a line they contain, the backends
 * where they cannot run (all when unset), and why.
 */
export const NOT_RUN: Array<
  { file: string; heading: string; contains: string; on?: Array<"pglite" | "postgres">; reason: string }
> = [
  {
    file: "docs/ci.md",
    heading: "The pipeline step",
    contains: "task cli runs start ngfw-throughput-decrypt-on --require-preflight-pass",
    reason: "the example CI step ends with the verdict's exit code (1 for the sample export); " +
      "tests/e2e/cli_test.ts runs it as written against its own serve and lab, and once more over a failing check",
  },
  {
    file: "docs/security.md",
    heading: "Tokens, roles and the audit log",
    contains: "task token create grafana",
    on: ["pglite"],
    reason: "embedded PGlite is single-process and docs/security.md says to stop `serve` first (it runs on " +
      "PostgreSQL); core/src/access/access_test.ts runs `deno task token` on a stopped embedded database",
  },
];
/** Paths the snippets may write into (ignored by git: .gitignore). */
const SCRATCH = ["out", ".data"];

export interface ShellBlock {
  /** The page, relative to the repository (README.md, docs/….md). */
  file: string;
  heading: string;
  /** 1-based line of the opening fence. */
  line: number;
  text: string;
}

/** Every ```sh block of a page, with the heading it is under, in order. */
export function shellBlocks(readme: string, file = "README.md"): ShellBlock[] {
  const blocks: ShellBlock[] = [];
  let heading = "";
  let fence: { lang: string; line: number; lines: string[] } | null = null;
  readme.split("\n").forEach((line, i) => {
    if (fence === null) {
      const open = /^```(\S*)\s*$/.exec(line);
      if (open) fence = { lang: open[1]!, line: i + 1, lines: [] };
      else if (/^#{1,6} /.test(line)) heading = line.replace(/^#+ /, "").trim();
    } else if (/^```\s*$/.test(line)) {
      if (fence.lang === "sh") blocks.push({ file, heading, line: fence.line, text: fence.lines.join("\n") });
      fence = null;
    } else fence.lines.push(line);
  });
  return blocks;
}

/** A page's text outside fenced blocks, and its shell blocks: where a command a user types appears. */
function commandText(readme: string): string {
  const prose = readme.replace(/^```\S*\n[\s\S]*?^```$/gm, (block) => block.startsWith("```sh") ? block : "");
  return prose;
}

const TOOLS = ["bash", "curl", "jq", "node", "npx", "setsid", "openssl"];
const missing = TOOLS.filter((t) =>
  new Deno.Command("sh", { args: ["-c", `command -v ${t}`], stdout: "null" }).outputSync().code !== 0
);

/**
 * A PATH like the test's own without `deno`: each directory holding a `deno` is replaced by a directory of
 * symlinks to everything else in it (npx, node and the system tools stay reachable).
 */
async function pathWithoutDeno(scratch: string): Promise<string> {
  const dirs: string[] = [];
  let n = 0;
  for (const dir of (Deno.env.get("PATH") ?? "").split(":").filter(Boolean)) {
    const hasDeno = await Deno.lstat(`${dir}/deno`).then(() => true, () => false);
    if (!hasDeno) {
      dirs.push(dir);
      continue;
    }
    const shadow = `${scratch}/bin-${n++}`;
    await Deno.mkdir(shadow, { recursive: true });
    for await (const e of Deno.readDir(dir)) {
      if (e.name !== "deno") await Deno.symlink(`${dir}/${e.name}`, `${shadow}/${e.name}`);
    }
    dirs.push(shadow);
  }
  return dirs.join(":");
}

/** A README command line run in the background in its own process group (npx → deno task → deno). */
class Background {
  readonly child: Deno.ChildProcess;
  out = "";
  #reading: Promise<void>;
  constructor(line: string, cwd: string, env: Record<string, string>) {
    this.child = new Deno.Command("setsid", {
      args: ["bash", "-c", line],
      cwd,
      clearEnv: true,
      env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const dec = new TextDecoder();
    const read = async (s: ReadableStream<Uint8Array>) => {
      for await (const chunk of s) this.out += dec.decode(chunk, { stream: true });
    };
    this.#reading = Promise.all([read(this.child.stdout), read(this.child.stderr)]).then(() => {});
  }
  async stop() {
    try {
      Deno.kill(-this.child.pid, "SIGTERM");
    } catch { /* gone */ }
    const timer = setTimeout(() => {
      try {
        Deno.kill(-this.child.pid, "SIGKILL");
      } catch { /* gone */ }
    }, 15_000);
    await this.child.status;
    await this.#reading;
    clearTimeout(timer);
  }
}

async function until(
  what: string,
  cond: () => boolean | Promise<boolean>,
  ms: number,
  log: () => string,
) {
  const end = Date.now() + ms;
  while (!(await Promise.resolve().then(cond).catch(() => false))) {
    if (Date.now() > end) throw new Error(`Timed out waiting for ${what}:\n${log()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** README.md and every page of `PAGES`, read from the clone. */
async function readPages(): Promise<Array<{ file: string; text: string }>> {
  return await Promise.all(
    PAGES.map(async (file) => ({ file, text: await Deno.readTextFile(`${ROOT}/${file}`) })),
  );
}

/** The script of every runnable block, the background lines, and what was left out (with reasons). */
function plan(pages: Array<{ file: string; text: string }>, kind: "pglite" | "postgres") {
  const blocks = pages.flatMap((p) => shellBlocks(p.text, p.file));
  const script: string[] = [];
  const background: string[] = [];
  const notRun: string[] = [];
  for (const entry of NOT_RUN) {
    const n = blocks.filter((b) =>
      b.file === entry.file && b.heading === entry.heading && b.text.includes(entry.contains)
    ).length;
    assert.equal(
      n,
      1,
      `NOT_RUN lists a block of ${entry.file} under "${entry.heading}" with "${entry.contains}": it has ${n}`,
    );
  }
  for (const b of blocks) {
    const skip = NOT_RUN.find((e) =>
      e.file === b.file && e.heading === b.heading && b.text.includes(e.contains) &&
      (!e.on || e.on.includes(kind))
    );
    if (skip) {
      notRun.push(`${b.file}:${b.line} (${b.heading}): ${skip.reason}`);
      continue;
    }
    script.push(`echo ${JSON.stringify(`### ${b.file}:${b.line} (${b.heading})`)} >&2`);
    for (const line of b.text.split("\n")) {
      const command = line.replace(/\s+#.*$/, "");
      const skipped = SKIPPED_LINES.find(([re]) => re.test(command));
      if (skipped) notRun.push(`${b.file}:${b.line} (${b.heading}) \`${command}\`: ${skipped[1]}`);
      else if (LONG_RUNNING.test(command)) background.push(command);
      else script.push(line);
    }
  }
  return { blocks, script, background, notRun };
}

Deno.test("README and docs: every page is listed, no command needs a bare `deno`, and every shell block runs or is listed with its reason", async () => {
  const docs: string[] = [];
  for await (const e of Deno.readDir(`${ROOT}/docs`)) if (e.name.endsWith(".md")) docs.push(`docs/${e.name}`);
  assert.deepEqual(docs.filter((f) => !PAGES.includes(f)), [], "docs pages missing from PAGES");
  const pages = await readPages();
  const text = pages.map((p) => commandText(p.text)).join("\n").replace(/npx -y deno@\d+\.\d+\.\d+ /g, "");
  // `deno <subcommand>` anywhere a user types commands (shell blocks and inline code), except the path of the
  // wrapper itself; the ini and yaml blocks configure hosts and images that have deno (not run here).
  const bare = text.split("\n").filter((l) =>
    /(^|[\s`'"(|;&$])deno\s+(task|run|eval|install|compile|cache|add|serve)\b/.test(l)
  );
  assert.deepEqual(
    bare,
    [],
    "commands in README and docs must use `npx -y deno@<version>`, never a bare `deno`",
  );
  const { blocks, script, background, notRun } = plan(pages, "pglite");
  assert.ok(blocks.length >= 12, `${blocks.length} shell blocks`);
  assert.ok(script.length > 50 && background.length >= 2);
  console.log(`Not run (${notRun.length}):\n  ${notRun.join("\n  ")}`);
});

for (const kind of ["pglite", "postgres"] as const) {
  const noPg = kind === "postgres" && !Deno.env.get("TEST_DATABASE_URL");
  const ignored = missing.length
    ? ` (ignored: needs ${missing.join(", ")})`
    : noPg
    ? ` (${NO_POSTGRES_REASON})`
    : "";
  Deno.test({
    name: `README and docs shell blocks run as written on a PATH without deno [${kind}]${ignored}`,
    ignore: missing.length > 0 || noPg,
    fn: () => runReadme(kind),
  });
}

async function runReadme(kind: "pglite" | "postgres") {
  const pages = await readPages();
  const { script, background } = plan(pages, kind);
  // The device the tour turns decryption off on, as the README names it (`lab set <vendor> decrypt=off`).
  const decryptOff = pages[0]!.text.match(/ lab set (\S+) decrypt=off$/m)?.[1];
  assert.ok(decryptOff, "the README's tour turns decryption off on one lab device");
  const serveLine = background.find((l) => / task serve$/.test(l));
  const labLine = background.find((l) => / task lab$/.test(l));
  assert.ok(serveLine && labLine, `the README starts serve and lab: ${background.join(" | ")}`);

  const scratch = await Deno.makeTempDir({ prefix: "dutlab-readme-" });
  const work = `${scratch}/clone`;
  await Deno.mkdir(work);
  const mirrored = new Set<string>();
  for await (const e of Deno.readDir(ROOT)) {
    if (![".git", ...SCRATCH].includes(e.name)) {
      await Deno.symlink(`${ROOT}/${e.name}`, `${work}/${e.name}`);
      mirrored.add(e.name);
    }
  }
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  const set: Record<string, string> = {
    DUT_URL: url,
    PORT: String(port),
    HOST: "127.0.0.1",
    PATH: await pathWithoutDeno(scratch),
    // A user's shell has no INIT_CWD, so `deno task` sets it to the shell's directory; an outer
    // `deno task test` would pass its own down instead (Deno.Command cannot unset a variable).
    INIT_CWD: work,
  };
  let dropSchema = async () => {};
  if (kind === "postgres") {
    const schema = `readme_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
    const admin = new pg.Client({ connectionString: Deno.env.get("TEST_DATABASE_URL")! });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    dropSchema = async () => {
      await admin.query(`drop schema ${schema} cascade`).catch(() => {});
      await admin.end().catch(() => {});
    };
    const u = new URL(Deno.env.get("TEST_DATABASE_URL")!);
    u.searchParams.set("search_path", schema);
    Object.assign(set, {
      DATABASE_URL: u.href,
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      DUT_CRED_ENC_KEY: TEST_CRED_KEY,
      DUT_REPORT_SIGNING_KEY: TEST_SIGNING_KEY,
      DUT_PDF_SIGNING_CERT: TEST_PDF_CERT,
      DUT_PDF_SIGNING_KEY: TEST_PDF_KEY,
    });
    // What an earlier embedded start leaves: another token, which the snippets must not use.
    await Deno.mkdir(`${work}/.data`);
    await Deno.writeTextFile(
      `${work}/.data/secrets.json`,
      JSON.stringify({ adminToken: "stale-embedded-token-0123456789" }),
    );
  }
  const env = childEnv(set);
  const noDeno = await new Deno.Command("bash", { args: ["-c", "command -v deno"], clearEnv: true, env })
    .output();
  assert.notEqual(noDeno.code, 0, "the snippets' PATH holds no deno");

  const serve = new Background(serveLine!, work, env);
  let lab: Background | null = null;
  try {
    await until(
      "serve",
      async () => {
        const r = await fetch(`${url}/readyz`);
        await r.body?.cancel(); // an unread body is a leak (the test task's --sanitize-resources)
        return r.status === 200;
      },
      180_000,
      () => serve.out,
    );
    const token = kind === "postgres"
      ? TEST_ADMIN_TOKEN
      : JSON.parse(await Deno.readTextFile(`${work}/.data/secrets.json`)).adminToken;
    const auth = { authorization: `Bearer ${token}` };
    const devices = async () =>
      (await (await fetch(`${url}/api/admin/dut/devices`, { headers: auth })).json()).devices;
    lab = new Background(labLine!, work, env);
    const running = () => /(\d+) simulator\(s\) running/.exec(lab!.out);
    await until("lab", () => running() !== null, 120_000, () => lab!.out);
    const simulators = Number(running()![1]);
    assert.equal((await devices()).length, 0, "the tour registers the lab itself (lab apply)");

    const run = await new Deno.Command("bash", {
      args: ["-c", ["set -euo pipefail", ...script].join("\n")],
      cwd: work,
      clearEnv: true,
      env,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const out = new TextDecoder().decode(run.stdout);
    const err = new TextDecoder().decode(run.stderr);
    const context = `\n${out}\n${err}\n--- serve:\n${serve.out}\n--- lab:\n${lab.out}`;
    assert.equal(run.code, 0, `README snippets failed:${context}`);
    assert.match(
      out + err,
      new RegExp(`Plan: ${simulators} to create`),
      "the tour's lab apply created the lab",
    );
    assert.ok(
      (await devices()).filter((d: { managedBy: string | null }) => d.managedBy === "sim").length ===
        simulators,
      "every simulator is registered by the lab file (managedBy sim)",
    );
    // The tour (`dutlab`): every device snapshot ok, pre-flight passed, the alert of the run, the verdict the
    // tour lets through (exit 1 for `inconclusive`, nothing else), the report verified with its signature.
    assert.match(out, /^(\d+) devices: \1 ok, 0 failed$/m, "dutlab snapshot --all: every poll ok");
    assert.match(out, /^PASS /m, "the tour's pre-flight passed (dutlab preflight: PASS, exit 0)");
    assert.match(
      out,
      new RegExp(
        `"name":"TLSDecryptModeChanged","deviceHostname":"lab-${decryptOff}","from":"on","to":"off"`,
      ),
    );
    assert.match(
      out,
      /plan ngfw-throughput-decrypt-on\) finished: verdict invalid\b/,
      `the tour's verdict: invalid (decryption went off during the run), the one code the tour lets through:\n${out}`,
    );
    assert.match(
      out,
      /^OK reportSha256 [0-9a-f]{64} signed by /m,
      "dutlab report verify: every hash and the signature checked against the service's keys",
    );
    // "Every endpoint with curl": the connection test, the scratch device deleted, the token revoked, the
    // stream read from id 0, the report replayed, the print page through its share link without a token.
    for (
      const [re, what] of [
        [/^\{"ok":true,"detail":/m, "POST devices/{id}/test"],
        [/^\{"ok":true\}$/m, "DELETE devices/{id}"],
        [/^\{"name":"example-\d+","revokedAt":"[^"]+"\}$/m, "DELETE tokens/{id}"],
        [/^event: /m, "GET /api/events from Last-Event-ID 0"],
        [/^\{"reproduced":true,"exitCode":0\}$/m, "POST runs/{id}/replay"],
        [/^200 text\/html\b.*\n200 text\/html\b/m, "the share link's print page, then /runs/compare"],
        [/^200 text\/css\b.* \/api\/docs\/assets\/swagger-ui\.css$/m, "GET /api/docs/assets/{file}"],
      ] as const
    ) assert.match(out, re, `${what}:\n${out.slice(-4000)}`);
    // The operator workflow's pre-flight with curl.
    assert.match(out, /^200$/m, "the operator workflow's pre-flight answers 200");
    assert.match(out, /^true$/m, "the recomputed snapshot hash matches");
    assert.match(out + err, /Signature Verified Successfully/, "OpenSSL verifies the envelope's signature");
    if (kind === "postgres") {
      assert.match(out, /^dut_[A-Za-z0-9_-]{43}$/m, `\`task token create\` printed a token:\n${out}`);
    }

    // Issue 33 point 6: no runtime notice and no ignored-build-scripts box in what `serve` prints.
    assert.doesNotMatch(serve.out, /legacy behavior|Ignored build scripts/, `serve printed:\n${serve.out}`);

    // The snippets left nothing in the clone outside the ignored scratch paths.
    const left: string[] = [];
    for await (const e of Deno.readDir(work)) {
      if (!mirrored.has(e.name) && !SCRATCH.includes(e.name)) left.push(e.name);
    }
    assert.deepEqual(left, [], "files the README's blocks left in the clone");

    // The lab restarts on the same ports and certificates: the registered devices stay ok.
    await lab.stop();
    lab = new Background(labLine!, work, env);
    await until("lab restart", () => running() !== null, 120_000, () => lab!.out);
    for (const d of await devices()) {
      const r = await fetch(`${url}/api/admin/dut/devices/${d.id}/snapshot`, {
        method: "POST",
        headers: auth,
      });
      const body = await r.json();
      assert.equal(
        body.lastPollStatus,
        "ok",
        `${d.hostname} after the lab restart: ${JSON.stringify(body)}\nserve's warnings and errors:\n${
          serve.out.split("\n").filter((l) => /WRN|ERR|FTL|error/i.test(l)).slice(-40).join("\n")
        }`,
      );
    }
  } finally {
    await lab?.stop();
    await serve.stop();
    await dropSchema();
    await Deno.remove(scratch, { recursive: true }).catch(() => {});
  }
}
