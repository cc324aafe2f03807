/**
 * Every README snippet runs as written (issue 16 point 4). The shell blocks of the sections "Quick start",
 * "Five-minute tour", "Devices", "Operator workflow" and "Test runs and reports" (selected by heading, so
 * other sections may come and go) run in that order, as one bash script with `set -euo pipefail`, against a
 * live `serve` and `lab` started with the README's own command lines. Lines that start a long-running
 * process (`task serve`, `task lab` without `set`/`show`) are what this test runs in the background;
 * `task test` is not run (it is this suite). Then the lab is restarted and its devices must still poll `ok`.
 *
 * The work directory mirrors the clone with symlinks, so the files the snippets write (`preflight.json`,
 * `report.json`, `./.data`) stay in a temporary directory.
 */
import assert from "node:assert/strict";
import { childEnv } from "@dutlab/core/testing";

const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const SECTIONS = [
  "Quick start",
  "Five-minute tour",
  "Devices",
  "Operator workflow",
  "Filters, dry run and as of a past moment",
  "Test runs and reports",
  "Gating the start",
];
const LONG_RUNNING = /^npx -y deno@[\d.]+ task (serve|lab(?! (set|show)\b)|test)\b/;

/** The `sh` blocks of a section: from its heading to the next heading of any level. */
export function shellBlocks(readme: string, heading: string): string[] {
  const lines = readme.split("\n");
  const start = lines.findIndex((l) => /^#{1,6} /.test(l) && l.replace(/^#+ /, "").trim() === heading);
  if (start < 0) throw new Error(`README has no section "${heading}"`);
  const blocks: string[] = [];
  let block: string[] | null = null;
  for (const line of lines.slice(start + 1)) {
    if (block === null && /^#{1,6} /.test(line)) break;
    if (block === null && /^```sh\s*$/.test(line)) block = [];
    else if (block !== null && /^```\s*$/.test(line)) {
      blocks.push(block.join("\n"));
      block = null;
    } else if (block !== null) block.push(line);
  }
  return blocks;
}

const missing = ["bash", "curl", "jq", "node", "npx", "setsid"].filter((t) =>
  new Deno.Command("sh", { args: ["-c", `command -v ${t}`], stdout: "null" }).outputSync().code !== 0
);

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const p = (l.addr as Deno.NetAddr).port;
  l.close();
  return p;
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

Deno.test({
  name: "README snippets run as written against a live serve and lab, and the lab survives a restart" +
    (missing.length ? ` (ignored: needs ${missing.join(", ")})` : ""),
  ignore: missing.length > 0,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const readme = await Deno.readTextFile(`${ROOT}/README.md`);
    const script: string[] = [];
    const background: string[] = [];
    for (const heading of SECTIONS) {
      for (const block of shellBlocks(readme, heading)) {
        for (const line of block.split("\n")) {
          if (LONG_RUNNING.test(line)) background.push(line.replace(/\s+#.*$/, ""));
          else script.push(line);
        }
      }
    }
    const serveLine = background.find((l) => / task serve$/.test(l));
    const labLine = background.find((l) => / task lab --register$/.test(l));
    assert.ok(serveLine && labLine, `the README starts serve and lab --register: ${background.join(" | ")}`);

    const work = await Deno.makeTempDir({ prefix: "dutlab-readme-" });
    for await (const e of Deno.readDir(ROOT)) {
      if (![".data", ".git", "preflight.json", "report.json", "summary.json"].includes(e.name)) {
        await Deno.symlink(`${ROOT}/${e.name}`, `${work}/${e.name}`);
      }
    }
    const port = freePort();
    const url = `http://127.0.0.1:${port}`;
    const env = childEnv({
      DUT_URL: url,
      PORT: String(port),
      HOST: "127.0.0.1",
      DUT_DATA_DIR: `${work}/.data`,
      // A user's shell has no INIT_CWD, so `deno task` sets it to the shell's directory; an outer
      // `deno task test` would pass its own down instead (Deno.Command cannot unset a variable).
      INIT_CWD: work,
    });
    const serve = new Background(serveLine!, work, env);
    let lab: Background | null = null;
    try {
      await until(
        "serve",
        async () => (await fetch(`${url}/readyz`)).status === 200,
        180_000,
        () => serve.out,
      );
      const token = JSON.parse(await Deno.readTextFile(`${work}/.data/secrets.json`)).adminToken;
      const auth = { authorization: `Bearer ${token}` };
      const devices = async () =>
        (await (await fetch(`${url}/api/admin/dut/devices`, { headers: auth })).json()).devices;
      lab = new Background(labLine!, work, env);
      await until(
        "lab --register",
        () => /(registered|updated) lab-vendor-a-bmc/.test(lab!.out),
        120_000,
        () => lab!.out,
      );
      assert.equal((await devices()).length, 4, lab.out);

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
      assert.equal(
        run.code,
        0,
        `README snippets failed:\n${out}\n${err}\n--- serve:\n${serve.out}\n--- lab:\n${lab.out}`,
      );
      assert.match(out, /^200$/m, "the tour's pre-flight answers 200");
      assert.match(
        out,
        /"name":"TLSDecryptModeChanged","deviceHostname":"lab-vendor-a-ngfw","from":"on","to":"off"/,
      );
      assert.equal(
        out.match(/^OK reportSha256 [0-9a-f]{64}( signed by [0-9a-f]{64})?$/gm)?.length,
        2,
        "both reports verify",
      );

      // The lab restarts on the same ports and certificates: --register updates (no 409), devices stay ok.
      await lab.stop();
      lab = new Background(labLine!, work, env);
      await until(
        "lab restart",
        () => /updated lab-vendor-a-bmc/.test(lab!.out),
        120_000,
        () => lab!.out,
      );
      assert.doesNotMatch(lab.out, /HTTP 409|registered lab-/, lab.out);
      for (const d of await devices()) {
        const r = await fetch(`${url}/api/admin/dut/devices/${d.id}/snapshot`, {
          method: "POST",
          headers: auth,
        });
        const body = await r.json();
        assert.equal(
          body.lastPollStatus,
          "ok",
          `${d.hostname} after the lab restart: ${JSON.stringify(body)}`,
        );
      }
    } finally {
      await lab?.stop();
      await serve.stop();
      await Deno.remove(work, { recursive: true }).catch(() => {});
    }
  },
});
