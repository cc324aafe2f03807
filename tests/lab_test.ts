/**
 * `deno task lab` demonstrates every outcome (issue 16 point 5): a running lab process is changed with
 * `deno task lab set` and each setting shows in the next snapshot and pre-flight of a service that
 * registered the lab's devices (`deno task lab show` gives their URLs and credentials).
 */
import assert from "node:assert/strict";
import { childEnv, dbTest, jsonReq, testServices } from "@dutlab/core/testing";
import { modules } from "../modules.gen.ts";

const ROOT = new URL("..", import.meta.url).pathname;

interface Shown {
  vendor: string;
  hostname: string;
  url: string;
  username: string;
  password: string;
  sha256: string;
  down: boolean;
  settings: Record<string, string>;
}

async function labCommand(env: Record<string, string>, ...args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "tools/lab.ts", ...args],
    cwd: ROOT,
    clearEnv: true,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

dbTest("lab set drives each demonstrated outcome; the lab keeps its ports and certificates", async (db) => {
  const dir = await Deno.makeTempDir({ prefix: "dutlab-lab-" });
  const env = childEnv({ DUT_DATA_DIR: dir });
  const start = () =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "tools/lab.ts"],
      cwd: ROOT,
      clearEnv: true,
      env,
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
  let lab = start();
  const ready = async (child: Deno.ChildProcess) => {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes("simulator(s) running")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`lab exited: ${text}`);
      text += value;
    }
    reader.releaseLock();
    child.stdout.cancel().catch(() => {});
  };
  const stop = async (child: Deno.ChildProcess) => {
    child.kill("SIGTERM");
    await child.status;
  };
  try {
    await ready(lab);
    const show = async (): Promise<Shown[]> => {
      const r = await labCommand(env, "show");
      assert.equal(r.code, 0, r.stderr);
      return JSON.parse(r.stdout);
    };
    const set = async (vendor: string, ...pairs: string[]) => {
      const r = await labCommand(env, "set", vendor, ...pairs);
      assert.equal(r.code, 0, `lab set ${vendor} ${pairs.join(" ")}: ${r.stderr}`);
    };
    const shown = await show();
    assert.deepEqual(shown.map((d) => d.vendor).sort(), [
      "vendor-a-bmc",
      "vendor-a-ngfw",
      "vendor-a-switch",
      "vendor-b-ngfw",
    ]);

    const { app, auth } = await testServices(db, modules);
    const ids: Record<string, string> = {};
    for (const d of shown) {
      const r = await app.request(
        "/api/admin/dut/devices",
        jsonReq("POST", {
          hostname: d.hostname,
          vendor: d.vendor,
          baseUrl: d.url,
          username: d.username,
          password: d.password,
          tlsVerifyMode: "self-signed",
        }, auth),
      );
      const text = await r.text();
      assert.equal(r.status, 201, text);
      ids[d.vendor] = JSON.parse(text).deviceId;
    }
    const snapshot = async (vendor: string) => {
      const r = await app.request(`/api/admin/dut/devices/${ids[vendor]}/snapshot`, {
        method: "POST",
        headers: auth,
      });
      return (await r.json()).lastPollStatus as string;
    };
    const snapshotAll = async () => {
      for (const v of Object.keys(ids)) assert.equal(await snapshot(v), "ok", v);
    };
    /** Pre-flight status and the failing `checkId@vendor` lines. */
    const preflight = async (plan: string) => {
      const r = await app.request(
        "/api/test-runs/preflight",
        jsonReq("POST", { planIdentifier: plan }, auth),
      );
      const body = await r.json();
      const failing = body.checks.filter((c: { pass: boolean }) => !c.pass)
        .map((c: { checkId: string; deviceHostname: string }) => `${c.checkId}@${c.deviceHostname}`);
      return { status: r.status, failing };
    };

    // As started: ready for the decrypt-on plan (both firewalls decrypt).
    await snapshotAll();
    assert.deepEqual(await preflight("ngfw-throughput-decrypt-on"), { status: 200, failing: [] });
    // Both firewalls off: the decrypt-off plan passes.
    await set("vendor-a-ngfw", "decrypt=off");
    await set("vendor-b-ngfw", "decrypt=off");
    await snapshotAll();
    assert.deepEqual(await preflight("ngfw-throughput-decrypt-off"), { status: 200, failing: [] });
    await set("vendor-a-ngfw", "decrypt=on");
    await set("vendor-b-ngfw", "decrypt=on");
    await snapshotAll();

    // Each fault, then its fix.
    const faults: Array<[string, string, string, string]> = [
      ["vendor-a-ngfw", "deploy=failed", "deploy=ok", "ngfw-deploy-clean@lab-vendor-a-ngfw"],
      ["vendor-a-ngfw", "deploy=pending", "deploy=ok", "ngfw-deploy-clean@lab-vendor-a-ngfw"],
      ["vendor-a-ngfw", "ha=failed", "ha=standby", "ngfw-ha-state-sane@lab-vendor-a-ngfw"],
      ["vendor-a-switch", "ntp=off", "ntp=on", "ntp-source-configured@lab-vendor-a-switch"],
      ["vendor-b-ngfw", "ntp=off", "ntp=on", "ntp-source-configured@lab-vendor-b-ngfw"],
    ];
    for (const [vendor, fault, fix, failing] of faults) {
      await set(vendor, fault);
      assert.equal(await snapshot(vendor), "ok");
      assert.deepEqual(
        await preflight("ngfw-throughput-decrypt-on"),
        { status: 422, failing: [failing] },
        fault,
      );
      await set(vendor, fix);
      assert.equal(await snapshot(vendor), "ok");
      assert.equal((await preflight("ngfw-throughput-decrypt-on")).status, 200, fix);
    }
    await set("vendor-a-bmc", "down=true");
    assert.equal(await snapshot("vendor-a-bmc"), "unreachable");
    await set("vendor-a-bmc", "down=false");
    assert.equal(await snapshot("vendor-a-bmc"), "ok");

    const bad = await labCommand(env, "set", "vendor-a-bmc", "decrypt=on");
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /vendor-a-bmc: no TLS decryption on this device/);

    // A restarted lab answers on the same ports with the same certificates: pinned devices stay ok.
    const before = await show();
    await stop(lab);
    lab = start();
    await ready(lab);
    const after = await show();
    assert.deepEqual(after.map((d) => [d.url, d.sha256]), before.map((d) => [d.url, d.sha256]));
    await snapshotAll();

    // A certificate change: the pinned device refuses it.
    await set("vendor-a-switch", "cert=rotate");
    assert.equal(await snapshot("vendor-a-switch"), "tls_error");
  } finally {
    await stop(lab).catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}, { only: ["pglite"] });
