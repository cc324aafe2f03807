/**
 * `deno task lab` demonstrates every outcome (issue 16 point 5): a running lab process is changed with
 * `deno task lab set` and each setting shows in the next snapshot and pre-flight of a service that
 * registered the lab's devices (`deno task lab show` gives their URLs and credentials). Over whatever
 * adapters are enabled: the lab has one device per enabled adapter, and every check of the shared settings
 * table (`core/harness/lab.ts`) that applies to a device can be made to fail and pass through its settings.
 */
import assert from "node:assert/strict";
import { dbTest } from "../../core/harness/db.ts";
import { jsonReq, testServices } from "../../core/harness/app.ts";
import { startLab } from "../../core/harness/serve.ts";
import { modules } from "../../modules.gen.ts";
import { buildRegistry } from "../../core/harness/core.ts";
import { applying, enabledVendors, LAB_FAULTS, OFF, ON, settingFor } from "../../core/harness/lab.ts";

interface Shown {
  vendor: string;
  hostname: string;
  url: string;
  username: string;
  password: string;
  sha256: string;
  down: boolean;
  settings: Record<string, string>;
  controls: Record<string, string[]>;
}

dbTest("lab set drives each demonstrated outcome; the lab keeps its ports and certificates", async (db) => {
  const dir = await Deno.makeTempDir({ prefix: "dutlab-lab-" });
  let lab = await startLab(dir);
  try {
    const show = async (): Promise<Shown[]> => {
      const r = await lab.run("show");
      assert.equal(r.code, 0, r.stderr);
      return JSON.parse(r.stdout);
    };
    const set = async (vendor: string, ...pairs: string[]) => {
      const r = await lab.run("set", vendor, ...pairs);
      assert.equal(r.code, 0, `lab set ${vendor} ${pairs.join(" ")}: ${r.stderr}`);
    };
    const shown = await show();
    // One lab device per enabled adapter, under the hostname the tour uses.
    assert.deepEqual(shown.map((d) => d.vendor).sort(), enabledVendors(modules).sort());
    for (const d of shown) assert.equal(d.hostname, `lab-${d.vendor}`);
    const registry = buildRegistry(modules);
    const checks = registry.checks.map((c) => c.check);
    const adapterOf = (vendor: string) => registry.adapters.get(vendor)!.adapter;
    const plan = (id: string) => registry.plan(id)!;
    for (const d of shown) {
      // Every device takes the generic settings; every check the table demonstrates and that applies to the
      // device under the plan of its fault has its setting there, with the table's values.
      assert.deepEqual(d.controls.down, ["true", "false"], d.vendor);
      assert.deepEqual(d.controls.cert, ["rotate"], d.vendor);
      for (const id of new Set(Object.values(LAB_FAULTS).flat().map((f) => f.check))) {
        const key = settingFor(id)!;
        const faults = LAB_FAULTS[key]!.filter((f) => f.check === id);
        if (!faults.some((f) => applying(checks, plan(f.plan), adapterOf(d.vendor)).includes(id))) continue;
        assert.ok(d.controls[key], `${d.vendor}: ${id} applies, so the lab offers ${key}=…`);
        for (const f of faults) {
          for (const v of [f.fault, ...f.fix]) {
            assert.ok(d.controls[key]!.includes(v), `${d.vendor}: ${key}=${v}`);
          }
        }
      }
    }

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
    /** Pre-flight status and the failing `checkId@hostname` lines. */
    const preflight = async (plan: string) => {
      const r = await app.request(
        "/api/test-runs/preflight",
        jsonReq("POST", { planIdentifier: plan }, auth),
      );
      const body = await r.json();
      const failing = body.checks.filter((c: { pass: boolean }) => !c.pass)
        .map((c: { checkId: string; deviceHostname: string }) => `${c.checkId}@${c.deviceHostname}`).sort();
      return { status: r.status, failing };
    };

    // As started: ready for the decrypt-on plan (every firewall decrypts), and for every plan of the table.
    await snapshotAll();
    for (const p of new Set(Object.values(LAB_FAULTS).flat().map((f) => f.plan))) {
      assert.deepEqual(await preflight(p), { status: 200, failing: [] }, p);
    }
    // Every firewall off: the decrypt-off plan passes and the decrypt-on plan fails on each of them.
    const decrypting = shown.filter((d) => d.controls.decrypt);
    assert.ok(decrypting.length > 0, "the lab has firewalls");
    for (const d of decrypting) await set(d.vendor, "decrypt=off");
    await snapshotAll();
    assert.deepEqual(await preflight(OFF), { status: 200, failing: [] });
    assert.deepEqual(await preflight(ON), {
      status: 422,
      failing: decrypting.map((d) => `ngfw-decrypt-state-matches-plan@${d.hostname}`).sort(),
    });
    for (const d of decrypting) await set(d.vendor, "decrypt=on");
    await snapshotAll();

    // Each fault of each device's settings, then each of its fixes.
    for (const d of shown) {
      for (const [key, faults] of Object.entries(LAB_FAULTS)) {
        if (!d.controls[key] || key === "decrypt") continue;
        for (const { fault, fix, check, plan } of faults) {
          await set(d.vendor, `${key}=${fault}`);
          assert.equal(await snapshot(d.vendor), "ok");
          assert.deepEqual(
            await preflight(plan),
            { status: 422, failing: [`${check}@${d.hostname}`] },
            `${d.vendor} ${key}=${fault}`,
          );
          for (const v of fix) {
            await set(d.vendor, `${key}=${v}`);
            assert.equal(await snapshot(d.vendor), "ok");
            assert.deepEqual(await preflight(plan), { status: 200, failing: [] }, `${d.vendor} ${key}=${v}`);
          }
        }
      }
    }
    const last = shown.at(-1)!;
    await set(last.vendor, "down=true");
    assert.equal(await snapshot(last.vendor), "unreachable");
    await set(last.vendor, "down=false");
    assert.equal(await snapshot(last.vendor), "ok");

    // A setting the device lacks, and a value a setting does not take: clear errors, exit code 1.
    const lacking = shown.find((d) => shown.some((o) => Object.keys(o.controls).some((k) => !d.controls[k])));
    if (lacking) {
      const key = shown.flatMap((o) => Object.keys(o.controls)).find((k) => !lacking.controls[k])!;
      const own = Object.keys(lacking.controls).filter((k) => k !== "down" && k !== "cert");
      const bad = await lab.run("set", lacking.vendor, `${key}=on`);
      assert.equal(bad.code, 1);
      assert.equal(
        bad.stderr.trim(),
        `${lacking.vendor}: no setting "${key}"; ${
          own.length ? `one of ${own.join(", ")}` : "only down and cert"
        }`,
      );
    }
    const value = await lab.run("set", last.vendor, "down=maybe");
    assert.equal(value.code, 1);
    assert.equal(value.stderr.trim(), `${last.vendor}: down must be true or false`);

    // A restarted lab answers on the same ports with the same certificates: pinned devices stay ok.
    const before = await show();
    await lab.stop();
    lab = await startLab(dir);
    const after = await show();
    assert.deepEqual(after.map((d) => [d.url, d.sha256]), before.map((d) => [d.url, d.sha256]));
    await snapshotAll();

    // A certificate change: the pinned device refuses it.
    const first = shown[0]!;
    await set(first.vendor, "cert=rotate");
    assert.equal(await snapshot(first.vendor), "tls_error");
  } finally {
    await lab.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}, { only: ["pglite"] });

// `deno task lab set` prints the device it changed without its password (issue 46 point 6): a setting
// changed is no occasion to put a secret in a terminal's scrollback or a CI log; `lab show` has it.
Deno.test("lab set prints the changed device and its settings, never a simulator's password", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dutlab-lab-set-" });
  const lab = await startLab(dir);
  try {
    const shown = await lab.show();
    assert.ok(shown.length > 0);
    const passwords = shown.map((d) => d.password);
    for (const p of passwords) assert.ok(p.length >= 8, "the simulators have passwords to leak");
    const d = shown[0]!;
    const r = await lab.run("set", d.vendor, "down=true");
    assert.equal(r.code, 0, r.stderr);
    const printed = JSON.parse(r.stdout);
    assert.equal(printed.vendor, d.vendor);
    assert.equal(printed.down, true);
    assert.deepEqual(printed.settings, { down: "true" });
    assert.equal("password" in printed, false);
    for (const p of passwords) {
      assert.ok(!r.stdout.includes(p) && !r.stderr.includes(p), "no password in the output of lab set");
    }
    assert.equal((await lab.run("set", d.vendor, "down=false")).code, 0);
  } finally {
    await lab.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
