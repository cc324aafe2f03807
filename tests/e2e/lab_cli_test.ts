/**
 * Issue 35: `dutlab lab validate|diff|apply|export` run as child processes against a real `serve` process
 * (both backends). Canary passwords go through validate, diff, apply and export; the test then greps every
 * output it saw, the plan file, the service's log, the answers it read and the database files for them.
 */
import assert from "node:assert/strict";
import { childEnv } from "../../core/harness/process.ts";
import { dbTest } from "../../core/harness/db.ts";
import { ServeProcess, startLab } from "../../core/harness/serve.ts";
import { TEST_ADMIN_TOKEN } from "../../core/harness/app.ts";
import { adaptersWhere } from "../../core/harness/lab.ts";
import { modules } from "../../modules.gen.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const dec = new TextDecoder();
/** Passwords that must appear nowhere: one given by env:, one by file:. */
const CANARY_ENV = "canary-env-2b8f61d4-NEVER-SHOWN";
const CANARY_FILE = "canary-file-93c07ae5-NEVER-SHOWN";
const CANARY_PASTED = "canary-pasted-5d1e0c2a-NEVER-SHOWN";

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Two enabled vendors of role ngfw: the lab's default, and the second device's own. */
const [NGFW_1, NGFW_2] = adaptersWhere(modules, (a) => a.deviceRoles.includes("ngfw")).map((a) => a.vendor);

const lab = (hosts: string[], extra = "") =>
  `apiVersion: dutlab/v1
kind: Lab
metadata:
  name: lab1
defaults:
  vendor: ${NGFW_1}
  credential: admin
  tags: [site:lab1]
credentials:
  admin:
    username: admin
    password: env:LAB1_ADMIN_PASSWORD
  api:
    username: apitoken
    password: file:secrets/api-token
devices:
${
    hosts.map((h, i) =>
      `  - hostname: ${h}\n    baseUrl: https://${h}.lab1.example:8443\n${
        i === 1 ? `    vendor: ${NGFW_2}\n    credential: api\n` : ""
      }`
    ).join("")
  }${extra}`;

dbTest(
  "dutlab lab: validate, diff, apply, export keep a lab in step, and no canary password leaks",
  async (db, t) => {
    const work = await Deno.makeTempDir({ prefix: "dutlab-lab-" });
    const pg = db as { url?: string };
    const svc = ServeProcess.overTestDb(db, work, { DUT_API_POLLER_DISABLE: "1" });
    const seen: string[] = [];
    const baseEnv = { DUT_URL: svc.base, DUT_TOKEN: TEST_ADMIN_TOKEN, LAB1_ADMIN_PASSWORD: CANARY_ENV };
    const run = async (args: string[], extra: Record<string, string> = {}): Promise<Ran> => {
      const o = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--config", `${ROOT}deno.json`, `${ROOT}cli/main.ts`, ...args],
        cwd: work,
        clearEnv: true,
        env: childEnv({ ...baseEnv, ...extra }, { remove: ["DUT_URL", "DUT_TOKEN"] }),
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      const r = { code: o.code, stdout: dec.decode(o.stdout), stderr: dec.decode(o.stderr) };
      seen.push(r.stdout, r.stderr);
      return r;
    };
    const api = async (path: string) => {
      const text =
        await (await fetch(svc.base + path, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } }))
          .text();
      seen.push(text);
      return JSON.parse(text);
    };
    const hosts = ["fw-1", "fw-2", "fw-3", "fw-4", "fw-5"];
    try {
      await Deno.mkdir(`${work}/secrets`);
      await Deno.writeTextFile(`${work}/secrets/api-token`, `${CANARY_FILE}\n`, { mode: 0o600 });
      await Deno.chmod(`${work}/secrets/api-token`, 0o600);
      await Deno.writeTextFile(`${work}/lab.yaml`, lab(hosts));
      await svc.ready();

      await t.step("validate: valid file, then every error of a wrong one with its JSON path", async () => {
        const v = await run(["lab", "validate", "-f", "lab.yaml"]);
        assert.equal(v.code, 0, v.stderr);
        assert.match(v.stdout, /lab\.yaml: valid \(lab lab1, 5 device\(s\)\)/);
        const pasted = lab(["fw-1"]).replace(
          "password: env:LAB1_ADMIN_PASSWORD",
          `password: ${CANARY_PASTED}`,
        )
          .replace("baseUrl: https://fw-1", "baseUrl: http://fw-1");
        await Deno.writeTextFile(`${work}/pasted.yaml`, pasted);
        const bad = await run(["lab", "validate", "-f", "pasted.yaml"]);
        assert.equal(bad.code, 2, bad.stderr);
        assert.match(bad.stderr, /\$\.credentials\.admin\.password: must be a reference/);
        assert.match(bad.stderr, /\$\.devices\[0\]\.baseUrl: must be an https:\/\/ URL/);
        const unset = await run(["lab", "validate", "-f", "lab.yaml"], { LAB1_ADMIN_PASSWORD: "" });
        assert.equal(unset.code, 2);
        assert.match(
          unset.stderr,
          /\$\.credentials\.admin\.password: the environment variable LAB1_ADMIN_PASSWORD/,
        );
        await Deno.chmod(`${work}/secrets/api-token`, 0o644);
        const open = await run(["lab", "validate", "-f", "lab.yaml"]);
        assert.equal(open.code, 2);
        assert.match(
          open.stderr,
          /\$\.credentials\.api\.password: "secrets\/api-token" is readable by its group/,
        );
        await Deno.chmod(`${work}/secrets/api-token`, 0o600);
        const rules = await run(["lab", "validate", "-f", "missing.yaml"]);
        assert.equal(rules.code, 2, "a missing file is a usage error");
        await Deno.writeTextFile(
          `${work}/rules.yaml`,
          lab(["fw-1"]).replace(`vendor: ${NGFW_1}`, "vendor: nope"),
        );
        const r2 = await run(["lab", "validate", "-f", "rules.yaml"]);
        assert.equal(r2.code, 1, r2.stderr);
        assert.match(r2.stderr, /\$\.defaults\.vendor: unknown vendor "nope"/);
      });

      await t.step("diff shows the plan; --exit-code exits 1 on changes; --json is a plan file", async () => {
        const d = await run(["lab", "diff", "-f", "lab.yaml"]);
        assert.equal(d.code, 0, d.stderr);
        assert.equal((d.stdout.match(/^\+ create fw-\d$/gm) ?? []).length, 5, d.stdout);
        assert.match(d.stdout, /^Plan: 5 to create, 0 to update, 0 to remove$/m);
        assert.equal((await run(["lab", "diff", "-f", "lab.yaml", "--exit-code"])).code, 1);
        const j = await run(["lab", "diff", "-f", "lab.yaml", "--json"]);
        await Deno.writeTextFile(`${work}/plan.json`, j.stdout);
        const plan = JSON.parse(j.stdout);
        assert.equal(plan.generation, 0);
        assert.match(plan.planHash, /^sha256:[0-9a-f]{64}$/);
      });

      await t.step("apply refuses to run unasked off a terminal, then applies with --yes", async () => {
        const unasked = await run(["lab", "apply", "-f", "lab.yaml"]);
        assert.equal(unasked.code, 2);
        assert.match(unasked.stderr, /without --yes/);
        assert.deepEqual((await api("/api/admin/dut/devices")).devices, []);
        const a = await run(["lab", "apply", "-f", "lab.yaml", "--yes"]);
        assert.equal(a.code, 0, a.stderr);
        assert.match(a.stdout, /Applied: 5 created, 0 updated, 0 removed\. Lab lab1 is at generation 1\./);
        const devices = (await api("/api/admin/dut/devices")).devices;
        assert.deepEqual(devices.map((x: { managedBy: string }) => x.managedBy), Array(5).fill("lab1"));
      });

      await t.step("diff after apply is clean; a second apply changes no updatedAt", async () => {
        const before = (await api("/api/admin/dut/devices")).devices;
        const d = await run(["lab", "diff", "-f", "lab.yaml", "--exit-code"]);
        assert.equal(d.code, 0, d.stdout);
        assert.match(d.stdout, /^Plan: 0 to create, 0 to update, 0 to remove$/m);
        const again = await run(["lab", "apply", "-f", "lab.yaml", "--yes"]);
        assert.equal(again.code, 0);
        assert.match(again.stdout, /No changes\. Lab lab1 is at generation 1\./);
        assert.deepEqual((await api("/api/admin/dut/devices")).devices, before);
      });

      await t.step("a changed password shows only as changed", async () => {
        const d = await run(["lab", "diff", "-f", "lab.yaml", "--exit-code"], {
          LAB1_ADMIN_PASSWORD: CANARY_PASTED,
        });
        assert.equal(d.code, 1);
        assert.match(d.stdout, /^~ update fw-1 \(credential: changed\)$/m);
      });

      await t.step("export then diff against the same service is clean", async () => {
        const e = await run(["lab", "export", "--name", "lab1", "-o", "export.yaml"]);
        assert.equal(e.code, 0, e.stderr);
        const text = await Deno.readTextFile(`${work}/export.yaml`);
        seen.push(text);
        assert.match(text, /password: env:DUTLAB_PASSWORD_FW_1/);
        const vars = Object.fromEntries(hosts.map((h, i) => [
          `DUTLAB_PASSWORD_${h.toUpperCase().replace("-", "_")}`,
          i === 1 ? CANARY_FILE : CANARY_ENV,
        ]));
        const d = await run(["lab", "diff", "-f", "export.yaml", "--exit-code"], vars);
        assert.equal(d.code, 0, d.stdout + d.stderr);
        assert.match(d.stdout, /^Plan: 0 to create, 0 to update, 0 to remove$/m);
      });

      await t.step(
        "testbeds: diff shows them, apply makes them, export carries them, diff is clean",
        async () => {
          const beds = lab(
            hosts,
            "testbeds:\n  edge:\n    description: the edge pair\n    hostnames: [fw-1, fw-2]\n" +
              "  whole:\n    tags: [site:lab1]\n",
          );
          await Deno.writeTextFile(`${work}/beds.yaml`, beds);
          const d = await run(["lab", "diff", "-f", "beds.yaml", "--exit-code"]);
          assert.equal(d.code, 1, d.stdout + d.stderr);
          assert.match(
            d.stdout,
            /^\+ create testbed edge \(description: the edge pair; hostnames: \["fw-1","fw-2"\]\)$/m,
          );
          assert.match(d.stdout, /^\+ create testbed whole \(tags: \["site:lab1"\]\)$/m);
          assert.match(
            d.stdout,
            /^Plan: 0 to create, 0 to update, 0 to remove; testbeds: 2 to create, 0 to update, 0 to remove$/m,
          );
          const a = await run(["lab", "apply", "-f", "beds.yaml", "--yes"]);
          assert.equal(a.code, 0, a.stderr);
          assert.match(
            a.stdout,
            /^Applied: 0 created, 0 updated, 0 removed; 2 testbed change\(s\)\. Lab lab1 is at/m,
          );
          const made = (await api("/api/admin/testbeds")).testbeds;
          assert.deepEqual(
            made.map((x: { name: string; devices: unknown[]; managedBy: string }) =>
              `${x.name} ${x.devices.length} ${x.managedBy}`
            ),
            ["edge 2 lab1", "whole 5 lab1"],
          );
          const moved = beds.replace("hostnames: [fw-1, fw-2]", "hostnames: [fw-1, fw-3]");
          await Deno.writeTextFile(`${work}/moved.yaml`, moved);
          const m = await run(["lab", "diff", "-f", "moved.yaml"]);
          assert.match(
            m.stdout,
            /^~ update testbed edge \(hostnames: \["fw-1","fw-2"\] → \["fw-1","fw-3"\]\)$/m,
          );
          assert.match(m.stdout, /^= unchanged testbed whole$/m);
          const gone = await run(["lab", "diff", "-f", "lab.yaml"]);
          assert.match(gone.stdout, /^- remove testbed edge$/m);
          // The round trip: export carries the lab's testbeds, and its diff is clean.
          const e = await run(["lab", "export", "--name", "lab1", "-o", "export-beds.yaml"]);
          assert.equal(e.code, 0, e.stderr);
          const text = await Deno.readTextFile(`${work}/export-beds.yaml`);
          seen.push(text);
          assert.match(
            text,
            /^testbeds:\n {2}edge:\n {4}description: the edge pair\n {4}hostnames:\n {6}- fw-1\n {6}- fw-2\n/m,
          );
          const vars = Object.fromEntries(hosts.map((h, i) => [
            `DUTLAB_PASSWORD_${h.toUpperCase().replace("-", "_")}`,
            i === 1 ? CANARY_FILE : CANARY_ENV,
          ]));
          const clean = await run(["lab", "diff", "-f", "export-beds.yaml", "--exit-code"], vars);
          assert.equal(clean.code, 0, clean.stdout + clean.stderr);
          assert.match(clean.stdout, /^Plan: 0 to create, 0 to update, 0 to remove$/m);
          assert.match(clean.stdout, /^= unchanged testbed edge$/m);
        },
      );

      await t.step(
        "--prune disables what the file no longer lists; a bigger prune needs --force",
        async () => {
          await Deno.writeTextFile(`${work}/four.yaml`, lab(hosts.slice(0, 4)));
          const d = await run(["lab", "diff", "-f", "four.yaml", "--prune"]);
          assert.match(d.stdout, /^- remove fw-5 \(disable\)$/m);
          const a = await run(["lab", "apply", "-f", "four.yaml", "--prune", "--yes"]);
          assert.equal(a.code, 0, a.stderr);
          const fw5 = (await api("/api/admin/dut/devices")).devices.find((x: { hostname: string }) =>
            x.hostname === "fw-5"
          );
          assert.equal(fw5.enabled, false);
          await Deno.writeTextFile(`${work}/one.yaml`, lab(hosts.slice(0, 1)));
          const refused = await run(["lab", "apply", "-f", "one.yaml", "--prune=delete", "--yes"]);
          assert.equal(refused.code, 1);
          assert.match(refused.stderr, /more than half/);
        },
      );

      await t.step("no canary password in any output, plan file, log, answer or database file", async () => {
        seen.push(await Deno.readTextFile(`${work}/plan.json`));
        seen.push(JSON.stringify(await api("/api/admin/audit")));
        seen.push(svc.log(), JSON.stringify(svc.lines));
        for (const canary of [CANARY_ENV, CANARY_FILE, CANARY_PASTED]) {
          for (const s of seen) assert.ok(!s.includes(canary), `${canary} in ${s.slice(0, 200)}`);
        }
        // The audit log has one entry per apply, with its plan hash.
        const audit = (await api("/api/admin/audit")).entries ?? (await api("/api/admin/audit")).events;
        assert.ok(JSON.stringify(audit).includes("/api/admin/dut/lab/apply"));
      });
    } finally {
      await svc.stop();
      if (!pg.url) {
        // The embedded database's files hold the credentials encrypted only.
        const grep = await new Deno.Command("grep", {
          args: ["-r", "-l", "-a", "-e", CANARY_ENV, "-e", CANARY_FILE, `${work}/serve-data`],
          stdout: "piped",
        }).output();
        assert.equal(dec.decode(grep.stdout), "", "a canary is in the embedded database's files");
      }
      await Deno.remove(work, { recursive: true });
    }
  },
);

dbTest(
  "the simulated lab as a lab file: applied, every simulator polls ok, then diff is clean",
  async (_db, t) => {
    const work = await Deno.makeTempDir({ prefix: "dutlab-simlab-" });
    const lab = await startLab(`${work}/lab-data`);
    const svc = new ServeProcess(null, { DUT_DATA_DIR: `${work}/serve-data`, DUT_API_POLLER_DISABLE: "1" });
    try {
      await svc.ready();
      const file = await lab.command("file");
      await Deno.writeTextFile(`${work}/sim.yaml`, file);
      const shown = JSON.parse(await lab.command("show")) as Array<{ password: string }>;
      for (const d of shown) assert.ok(!file.includes(d.password), "the lab file holds no password");
      const env: Record<string, string> = { DUT_URL: svc.base, DUT_TOKEN: TEST_ADMIN_TOKEN };
      for (const line of (await lab.command("file", "--env")).trim().split("\n")) {
        const m = line.match(/^export ([A-Z0-9_]+)='(.*)'$/);
        assert.ok(m, line);
        env[m[1]!] = m[2]!.replaceAll("'\\''", "'");
      }
      const run = async (...args: string[]) => {
        const o = await new Deno.Command(Deno.execPath(), {
          args: ["run", "-A", "--config", `${ROOT}deno.json`, `${ROOT}cli/main.ts`, ...args],
          cwd: work,
          clearEnv: true,
          env: childEnv(env, { remove: ["DUT_URL", "DUT_TOKEN"] }),
          stdin: "null",
          stdout: "piped",
          stderr: "piped",
        }).output();
        return { code: o.code, stdout: dec.decode(o.stdout), stderr: dec.decode(o.stderr) };
      };
      await t.step("apply, poll, diff", async () => {
        const a = await run("lab", "apply", "-f", "sim.yaml", "--yes");
        assert.equal(a.code, 0, a.stderr);
        const snap = await run("snapshot", "--all");
        assert.equal(snap.code, 0, snap.stdout + snap.stderr);
        const d = await run("lab", "diff", "-f", "sim.yaml", "--exit-code");
        assert.equal(d.code, 0, d.stdout);
        assert.match(d.stdout, /^Plan: 0 to create, 0 to update, 0 to remove$/m);
      });
    } finally {
      await lab.stop();
      await svc.stop();
      await Deno.remove(work, { recursive: true });
    }
  },
  { only: ["pglite"] },
);
