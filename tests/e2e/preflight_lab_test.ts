/**
 * Pre-flight against the real adapters' simulators and the real check catalog and plans (modules.gen.ts),
 * over whatever adapters are enabled: one simulated device per enabled adapter, registered over the API and
 * snapshotted; the checks that run are exactly those the capability test applies; each check is driven to
 * fail and back to pass through the devices' own lab settings (`labControls` in each `sim.ts`).
 */
import assert from "node:assert/strict";
import { type KyselyPlugin, sql } from "kysely";
import { dbTest } from "../../core/harness/db.ts";
import { jsonReq, testServices } from "../../core/harness/app.ts";
import type { Db } from "../../core/harness/core.ts";
import { latestAsOfSql, latestSql, payloadCache } from "../../core/harness/core.ts";
import { runPreflight } from "../../core/harness/core.ts";
import { RunService } from "../../core/harness/core.ts";
import type { CheckResult, PreflightResult } from "../../core/harness/core.ts";
import { defineCheck, serves } from "@dutlab/core";
import { FIREWALL } from "../../core/harness/core.ts";
import { modules } from "../../modules.gen.ts";
import { webSha256Hex } from "../../core/harness/poller_lab.ts";
import type { LoadedModules } from "@dutlab/core/runtime";
import {
  applying,
  enabledVendors,
  HEALTH,
  LAB_FAULTS,
  type LabSim,
  OFF,
  ON,
  startLabSims,
} from "../../core/harness/lab.ts";

type Res = { status: number; body: PreflightResult };

/** The invariants every pre-flight answer keeps, whatever the lab's state. */
function assertConsistent({ status, body }: Res): void {
  const by = (s: CheckResult["status"]) => body.checks.filter((c) => c.status === s).length;
  assert.equal(body.checksRun, body.checks.length);
  assert.equal(body.checksRun, body.checksPassed + body.checksFailed + body.checksSkipped);
  assert.equal(body.checksPassed, by("pass"));
  assert.equal(body.checksFailed, by("fail") + by("error"));
  assert.equal(body.checksSkipped, by("skipped"));
  assert.equal(body.pass, body.checksRun > 0 && body.checksPassed === body.checksRun);
  assert.equal(status, body.pass ? 200 : 422);
  for (const c of body.checks) {
    assert.equal(c.pass, c.status === "pass", c.checkId);
    assert.equal(c.evidence === null, c.status === "skipped", `${c.checkId} on ${c.deviceHostname}`);
  }
  const head = `${body.checksPassed}/${body.checksRun} checks passed`;
  if (body.pass) assert.equal(body.summary, `${head} — ready for ${body.planIdentifier}`);
  else {
    assert.ok(body.summary.startsWith(`${head} — not ready for ${body.planIdentifier}: `), body.summary);
    if (body.checksRun > 0) {
      assert.match(
        body.summary,
        new RegExp(`: ${body.checksFailed} failed.*, ${body.checksSkipped} skipped$`),
      );
    }
  }
}

/** One lab device: its simulator and settings, hostname and device id. */
interface Device extends LabSim {
  hostname: string;
  id: string;
}

/** One simulated device per enabled adapter, registered over the API, every other one "insecure". */
async function lab(db: Db, mods: LoadedModules = modules, opts: { snapshot?: boolean } = {}) {
  const { app, auth, svc } = await testServices(db, mods);
  const sims = await startLabSims(mods);
  const checks = svc.registry.checks.map((c) => c.check);
  const devices: Device[] = [];

  async function register(
    hostname: string,
    vendor: string,
    sim: LabSim["dev"],
    tlsVerifyMode = "self-signed",
  ): Promise<string> {
    const res = await app.request(
      "/api/admin/dut/devices",
      jsonReq("POST", { hostname, vendor, baseUrl: sim.sim.url, ...sim.credentials, tlsVerifyMode }, auth),
    );
    assert.equal(res.status, 201, await res.clone().text());
    return (await res.json()).deviceId;
  }
  async function snapshot(id: string) {
    const res = await app.request(`/api/admin/dut/devices/${id}/snapshot`, jsonReq("POST", undefined, auth));
    const body = await res.json();
    assert.equal(res.status, 200);
    assert.equal(body.ok, true, JSON.stringify(body));
  }
  async function preflight(planIdentifier: string): Promise<Res> {
    const res = await app.request("/api/test-runs/preflight", jsonReq("POST", { planIdentifier }, auth));
    const r = { status: res.status, body: await res.json() as PreflightResult };
    assertConsistent(r);
    return r;
  }
  /** The checks that apply under `plan` to `d`, as `<vendor> <checkId>` (all devices when omitted). */
  function expected(plan: string, only?: Device[]): string[] {
    return (only ?? devices).flatMap((d) =>
      applying(checks, svc.registry.plan(plan)!, d.adapter).map((id) => `${d.vendor} ${id}`)
    ).sort();
  }
  /** The lab devices a check applies to under `plan`. */
  function appliesTo(check: string, plan = ON): Device[] {
    return devices.filter((d) => applying(checks, svc.registry.plan(plan)!, d.adapter).includes(check));
  }
  try {
    for (const [i, s] of sims.entries()) {
      const hostname = `${s.vendor}-1`;
      const id = await register(hostname, s.vendor, s.dev, i % 2 === 1 ? "insecure" : "self-signed");
      devices.push({ ...s, hostname, id });
    }
    if (opts.snapshot !== false) { for (const d of devices) await snapshot(d.id); }
  } catch (e) {
    await Promise.allSettled(sims.map((s) => s.dev.close()));
    throw e;
  }
  return {
    app,
    auth,
    svc,
    devices,
    register,
    snapshot,
    preflight,
    expected,
    appliesTo,
    async set(d: Device, key: string, value: string) {
      const control = d.controls.settings[key];
      assert.ok(control, `${d.vendor} offers ${key}`);
      assert.ok(control.values.includes(value), `${d.vendor}: ${key}=${value}`);
      await control.apply(value);
    },
    async [Symbol.asyncDispose]() {
      await Promise.allSettled(sims.map((s) => s.dev.close()));
    },
  };
}

const failing = (b: PreflightResult) =>
  b.checks.filter((c) => !c.pass).map((c) => `${c.checkId}@${c.deviceHostname}:${c.status}`).sort();

dbTest(
  "a lab in good state is ready for the decrypt-on plan and not for the decrypt-off plan",
  async (db) => {
    await using l = await lab(db);
    const n = l.expected(ON).length;
    assert.ok(n >= l.devices.length, "every device has at least one check");
    const on = await l.preflight(ON);
    assert.equal(on.status, 200, JSON.stringify(failing(on.body)));
    assert.equal(on.body.planIdentifier, ON);
    assert.equal(on.body.checksRun, n);
    assert.equal(on.body.summary, `${n}/${n} checks passed — ready for ${ON}`);
    assert.deepEqual(on.body.checks.map((c) => `${c.vendor} ${c.checkId}`).sort(), l.expected(ON));
    // Every device takes part, whatever its vendor: the plan selects by role.
    assert.deepEqual(new Set(on.body.checks.map((c) => c.deviceId)), new Set(l.devices.map((d) => d.id)));
    // The firewalls: every device whose adapter reads a decrypt policy, and each can be switched.
    const firewalls = l.appliesTo("ngfw-decrypt-state-matches-plan");
    assert.ok(firewalls.length > 0, "the lab has firewalls");
    assert.deepEqual(firewalls, l.devices.filter((d) => serves(d.adapter, FIREWALL)));
    const decrypt = on.body.checks.filter((c) => c.checkId === "ngfw-decrypt-state-matches-plan");
    assert.equal(decrypt.length, firewalls.length);
    for (const c of decrypt) {
      assert.match(c.detail, /^the plan requires decrypt-on and [1-9]\d* decrypt rule\(s\) are configured$/);
    }

    const off = await l.preflight(OFF);
    const k = firewalls.length;
    assert.equal(off.status, 422);
    assert.equal(off.body.pass, false);
    assert.deepEqual(
      failing(off.body),
      firewalls.map((d) => `ngfw-decrypt-state-matches-plan@${d.hostname}:fail`).sort(),
    );
    assert.equal(
      off.body.summary,
      `${n - k}/${n} checks passed — not ready for ${OFF}: ${k} failed, 0 skipped`,
    );
    for (const c of off.body.checks.filter((c) => !c.pass)) {
      assert.match(c.detail, /^the plan requires decrypt-off but [1-9]\d* decrypt rule\(s\) are configured$/);
    }

    // The operator turns decryption off on every firewall, re-snapshots: now the decrypt-off plan is ready.
    for (const d of firewalls) {
      await l.set(d, "decrypt", "off");
      await l.snapshot(d.id);
    }
    assert.equal((await l.preflight(OFF)).status, 200);
    const on2 = await l.preflight(ON);
    assert.deepEqual(failing(on2.body), failing(off.body));
    assert.ok(
      on2.body.checks.filter((c) => !c.pass).every((c) =>
        c.detail === "the plan requires decrypt-on but no decrypt rules are configured"
      ),
    );
  },
);

dbTest(
  "each check fails when the simulated lab drifts, and passes after the fix and a re-snapshot",
  async (db) => {
    await using l = await lab(db);
    const shown = new Set<string>();
    for (const d of l.devices) {
      for (const [key, faults] of Object.entries(LAB_FAULTS)) {
        if (!d.controls.settings[key]) continue;
        for (const f of faults) {
          const n = l.expected(f.plan).length;
          const what = `${d.vendor} ${key}=${f.fault}`;
          await l.set(d, key, f.fault);
          await l.snapshot(d.id);
          const bad = await l.preflight(f.plan);
          assert.equal(bad.status, 422, what);
          assert.deepEqual(failing(bad.body), [`${f.check}@${d.hostname}:fail`], what);
          const c = bad.body.checks.find((c) => !c.pass)!;
          assert.match(c.detail, f.detail, what);
          assert.equal(c.deviceId, d.id);
          assert.equal(
            bad.body.summary,
            `${n - 1}/${n} checks passed — not ready for ${f.plan}: 1 failed, 0 skipped`,
          );
          shown.add(`${d.vendor} ${f.check}`);
          for (const v of f.fix) {
            await l.set(d, key, v);
            await l.snapshot(d.id);
            const good = await l.preflight(f.plan);
            assert.equal(good.status, 200, `${d.vendor} ${key}=${v}: ${failing(good.body)}`);
          }
        }
      }
    }
    // Every check of the table was driven to fail on every lab device it applies to.
    const demonstrable = new Set(Object.values(LAB_FAULTS).flat().map((f) => `${f.check}\t${f.plan}`));
    for (const entry of demonstrable) {
      const [check, plan] = entry.split("\t") as [string, string];
      for (const d of l.appliesTo(check, plan)) {
        assert.ok(shown.has(`${d.vendor} ${check}`), `${check} on ${d.vendor}`);
      }
    }
    // The HA state the fixes left behind (`active`) is reported with the adapter's mapping.
    for (const c of (await l.preflight(ON)).body.checks.filter((c) => c.checkId === "ngfw-ha-state-sane")) {
      assert.match(c.detail, /^HA state .+ \(maps to ACTIVE\)$/);
    }
  },
);

dbTest("a device with no snapshots gets skipped results and the lab is not ready", async (db) => {
  await using l = await lab(db, modules, { snapshot: false });
  const n = l.expected(ON).length;
  const nothing = await l.preflight(ON);
  assert.equal(nothing.status, 422);
  assert.equal(nothing.body.checksSkipped, n);
  assert.equal(nothing.body.summary, `0/${n} checks passed — not ready for ${ON}: 0 failed, ${n} skipped`);

  const last = l.devices.at(-1)!;
  for (const d of l.devices.slice(0, -1)) await l.snapshot(d.id);
  const s = l.expected(ON, [last]).length;
  const r = await l.preflight(ON);
  assert.equal(r.status, 422, "skipped checks and no failures: not ready");
  assert.equal(r.body.pass, false);
  assert.equal(r.body.checksFailed, 0);
  assert.equal(r.body.checksSkipped, s);
  assert.equal(r.body.summary, `${n - s}/${n} checks passed — not ready for ${ON}: 0 failed, ${s} skipped`);
  const skipped = r.body.checks.filter((c) => c.status === "skipped");
  assert.deepEqual(skipped.map((c) => `${c.vendor} ${c.checkId}`).sort(), l.expected(ON, [last]));
  for (const c of skipped) {
    assert.equal(c.deviceId, last.id);
    assert.equal(c.pass, false);
    assert.equal(c.evidence, null);
    assert.match(c.detail, /^no \w+ snapshot of this device yet/);
  }
  await l.snapshot(last.id);
  assert.equal((await l.preflight(ON)).status, 200);
});

dbTest("an old system_info snapshot fails snapshot-fresh", async (db) => {
  await using l = await lab(db);
  const n = l.expected(ON).length;
  const dev = l.appliesTo("snapshot-fresh")[0]!;
  // Snapshots are append-only (UPDATE refused), so the old reading is a row of its own: the device's
  // system_info as collected two hours ago, made the latest of its label the way the poll cycle does.
  const two = new Date(Date.now() - 2 * 3600_000);
  const [cur] = await db.kysely.selectFrom("snapshots as s")
    .leftJoin("adapter_releases as r", "r.id", "s.adapter_release_id")
    .select(["s.device_id", "s.payload_sha256"])
    .select(sql<string>`coalesce(s.adapter_module, r.module)`.as("adapter_module"))
    .select(sql<string>`coalesce(s.adapter_version, r.version)`.as("adapter_version"))
    .where("s.device_id", "=", dev.id).where("s.endpoint_label", "=", "system_info").execute();
  assert.ok(cur, "the device has a system_info snapshot");
  const { id } = await db.kysely.insertInto("snapshots").values({
    device_id: cur.device_id,
    endpoint_label: "system_info",
    payload_sha256: cur.payload_sha256,
    collected_at: two,
    test_run_execution_id: null,
    adapter_module: cur.adapter_module,
    adapter_version: cur.adapter_version,
  }).returning(sql<string>`id::text`.as("id")).executeTakeFirstOrThrow();
  await db.kysely.updateTable("snapshot_latest").set({ snapshot_id: id })
    .where("device_id", "=", dev.id).where("endpoint_label", "=", "system_info").execute();

  const r = await l.preflight(ON);
  assert.equal(r.status, 422);
  assert.deepEqual(failing(r.body), [`snapshot-fresh@${dev.hostname}:fail`]);
  const c = r.body.checks.find((c) => !c.pass)!;
  assert.deepEqual(c.evidence, {
    snapshotId: id,
    payloadSha256: cur.payload_sha256,
    collectedAt: two.toISOString(),
  });
  assert.match(c.detail, /^latest system_info snapshot is 120 min old \(collected .+; limit 60 min\)/);

  // A fresh poll makes it pass again.
  await l.snapshot(dev.id);
  assert.equal((await l.preflight(ON)).status, 200);

  // The same lab evaluated 61 minutes from now: every device's snapshots have gone stale.
  const later = await runPreflight(
    db.kysely,
    l.svc.registry,
    l.svc.registry.plan(ON)!,
    new Date(Date.now() + 61 * 60_000),
  );
  assert.deepEqual(
    failing(later),
    l.appliesTo("snapshot-fresh").map((d) => `snapshot-fresh@${d.hostname}:fail`).sort(),
  );
  assert.equal(
    l.appliesTo("snapshot-fresh").length,
    l.devices.length,
    "snapshot-fresh applies to all vendors",
  );
  assert.equal(later.checksRun, n);
});

dbTest("disabled devices are left out of pre-flight", async (db) => {
  await using l = await lab(db);
  const n = l.expected(ON).length;
  const dev = l.devices.findLast((d) => d.controls.settings.ntp)!;
  assert.ok(dev, "a lab device offers ntp");
  await l.set(dev, "ntp", "off");
  await l.snapshot(dev.id);
  assert.deepEqual(failing((await l.preflight(ON)).body), [`ntp-source-configured@${dev.hostname}:fail`]);
  const patch = await l.app.request(
    `/api/admin/dut/devices/${dev.id}`,
    jsonReq("PATCH", { enabled: false }, l.auth),
  );
  assert.equal(patch.status, 200);
  const r = await l.preflight(ON);
  assert.equal(r.status, 200);
  assert.equal(r.body.checksRun, n - l.expected(ON, [dev]).length);
  assert.ok(r.body.checks.every((c) => c.deviceId !== dev.id));
  // With every device disabled no check runs: not ready.
  for (const d of l.devices) {
    await l.app.request(`/api/admin/dut/devices/${d.id}`, jsonReq("PATCH", { enabled: false }, l.auth));
  }
  const none = await l.preflight(ON);
  assert.equal(none.status, 422);
  assert.equal(none.body.checksRun, 0);
  assert.equal(
    none.body.summary,
    `0/0 checks passed — not ready for ${ON}: no enabled device takes part in the plan`,
  );
});

dbTest("evidence cites exactly what the snapshot listing returns for that snapshot", async (db) => {
  await using l = await lab(db);
  // A second poll: evidence must cite the newest snapshot, not the first one.
  for (const d of l.devices) await l.snapshot(d.id);
  const r = await l.preflight(ON);
  assert.equal(r.body.checks.length, l.expected(ON).length);
  for (const c of r.body.checks) {
    const label = l.svc.registry.checks.find((x) => x.check.id === c.checkId)!.check.label;
    const res = await l.app.request(
      `/api/admin/dut/snapshots?deviceId=${c.deviceId}&endpointLabel=${label}`,
      { headers: l.auth },
    );
    const { snapshots } = await res.json();
    assert.equal(snapshots.length, 2, `${c.checkId} on ${c.deviceHostname}`);
    const [newest] = snapshots;
    assert.deepEqual(c.evidence, {
      snapshotId: newest.id,
      payloadSha256: newest.payloadSha256,
      collectedAt: newest.collectedAt,
    });
  }
});

dbTest(
  "a check that throws or meets an unreadable payload gives an error result, never a 500",
  async (db) => {
    const first = (modules.adapters[0]!.module as { vendorKey: string }).vendorKey;
    const boom = defineCheck({
      id: "lab-boom",
      coreVersion: "^1.0.0",
      description: "A check with a bug",
      label: "system_info",
      appliesTo: (d) => d.vendor === first,
      evaluate: () => {
        throw new TypeError("Cannot read properties of undefined (reading 'model')");
      },
    });
    const mods: LoadedModules = {
      ...modules,
      checks: [...modules.checks, { name: "@dutlab/check-lab-boom", version: "0.0.1", module: boom }],
    };
    await using l = await lab(db, mods);
    const n = l.expected(ON).length; // lab-boom included, on the first vendor's device
    const boomed = l.devices.find((d) => d.vendor === first)!;
    // A device's latest ntp_config replaced by a payload its adapter cannot read (a DB-level forgery): the
    // first device whose ntpServers reading refuses it.
    const junk = '{"NTP":"nope"}';
    const dev = l.devices.find((d) => {
      try {
        d.adapter.facts?.ntpServers?.(JSON.parse(junk));
        return false;
      } catch {
        return d.adapter.labels.includes("ntp_config");
      }
    });
    assert.ok(dev, "an adapter refuses the junk ntp_config payload");
    const hex = await webSha256Hex(junk);
    await db.kysely.insertInto("snapshot_payloads").values({
      sha256: hex,
      payload: junk,
      size_bytes: junk.length,
    })
      .execute();
    const { id } = await db.kysely.insertInto("snapshots").values({
      device_id: dev.id,
      endpoint_label: "ntp_config",
      payload_sha256: hex,
      collected_at: new Date(),
      test_run_execution_id: null,
      adapter_module: modules.adapters.find((m) =>
        (m.module as { vendorKey: string }).vendorKey === dev.vendor
      )!
        .name,
      adapter_version: "1.0.0",
    }).returning(sql<string>`id::text`.as("id")).executeTakeFirstOrThrow();
    await db.kysely.updateTable("snapshot_latest").set({ snapshot_id: id })
      .where("device_id", "=", dev.id).where("endpoint_label", "=", "ntp_config").execute();

    const r = await l.preflight(ON);
    assert.equal(r.status, 422);
    assert.deepEqual(failing(r.body), [
      `lab-boom@${boomed.hostname}:error`,
      `ntp-source-configured@${dev.hostname}:error`,
    ]);
    const [b, e] = r.body.checks.filter((c) => !c.pass).sort((x, y) => x.checkId.localeCompare(y.checkId));
    assert.ok(b && e, "two failing checks");
    assert.equal(
      b.detail,
      "check error: could not evaluate the system_info payload (Cannot read properties of undefined (reading 'model'))",
    );
    assert.match(e.detail, /^check error: could not evaluate the ntp_config payload \(.+\)$/);
    assert.equal(e.evidence?.snapshotId, id);
    assert.equal(
      r.body.summary,
      `${n - 2}/${n} checks passed — not ready for ${ON}: 2 failed (2 could not be evaluated), 0 skipped`,
    );
  },
);

/** Every row of every table, to compare before and after. */
async function dump(db: Db) {
  const out: Record<string, unknown[]> = {};
  for (
    const t of ["devices", "snapshot_payloads", "snapshots", "snapshot_latest", "test_runs", "run_alerts"]
  ) {
    out[t] =
      (await sql<Record<string, unknown>>`select * from ${sql.table(t)} order by 1, 2`.execute(db.kysely))
        .rows.map((r) => JSON.parse(JSON.stringify(r)));
  }
  return out;
}

dbTest("pre-flight writes nothing and contacts no device", async (db) => {
  await using l = await lab(db);
  // Device states pre-flight must not pick up: every device's first fault of each of its settings.
  for (const d of l.devices) {
    for (const [key, faults] of Object.entries(LAB_FAULTS)) {
      if (d.controls.settings[key]) await l.set(d, key, faults[0]!.fault);
    }
  }
  const requests = l.devices.map((d) => d.dev.sim.requests.length);
  const before = await dump(db);
  assert.ok(before.snapshots!.length >= l.devices.length);
  const results = [await l.preflight(ON), await l.preflight(OFF), await l.preflight(ON)];
  const unknown = await l.app.request(
    "/api/test-runs/preflight",
    jsonReq("POST", { planIdentifier: "x" }, l.auth),
  );
  assert.equal(unknown.status, 404);
  assert.deepEqual(await dump(db), before, "no row added, changed or removed in any table");
  assert.deepEqual(
    l.devices.map((d) => d.dev.sim.requests.length),
    requests,
    "no request reached any simulator",
  );
  assert.equal(results[0]!.status, 200, "the changes on the devices are not seen without a snapshot");
});

dbTest(
  "pre-flight reads with at most three queries, whatever the number of devices and checks",
  async (db) => {
    payloadCache.clear();
    await using l = await lab(db);
    const n = l.expected(ON).length;
    const queries: string[] = [];
    const counter: KyselyPlugin = {
      transformQuery: (a) => (queries.push(a.node.kind), a.node),
      transformResult: (a) => Promise.resolve(a.result),
    };
    const plan = l.svc.registry.plan(ON)!;
    const counted = db.kysely.withPlugin(counter);
    const one = await runPreflight(counted, l.svc.registry, plan);
    assert.equal(one.checksRun, n);
    // The enabled devices, the latest snapshots of the pairs a check applies to, then their payloads.
    assert.deepEqual(queries, ["SelectQueryNode", "RawNode", "RawNode"]);
    // Again: every payload is in the payload cache now, so none is read.
    queries.length = 0;
    assert.deepEqual(await runPreflight(counted, l.svc.registry, plan, new Date(one.ranAt)), one);
    assert.deepEqual(queries, ["SelectQueryNode", "RawNode"]);

    // As many devices again (the same simulators under other names), all polled: still three queries.
    for (const d of l.devices) {
      const id = await l.register(`${d.vendor}-2`, d.vendor, d.dev);
      await l.snapshot(id);
    }
    queries.length = 0;
    const two = await runPreflight(counted, l.svc.registry, plan);
    assert.equal(two.checksRun, 2 * n);
    assert.equal(two.pass, true, JSON.stringify(failing(two)));
    assert.ok(queries.length <= 3, queries.join(", "));
    assert.deepEqual(queries.slice(0, 2), ["SelectQueryNode", "RawNode"]);
  },
);

dbTest("the server-health plan adds the opt-in checks it names: power on and health OK", async (db) => {
  await using l = await lab(db);
  const plan = l.svc.registry.plan(HEALTH)!;
  const optIn = plan.checks ?? [];
  assert.ok(optIn.length > 0, "the plan names opt-in checks");
  const m = l.expected(HEALTH).length;
  const ok = await l.preflight(HEALTH);
  assert.equal(ok.status, 200, JSON.stringify(failing(ok.body)));
  assert.equal(ok.body.summary, `${m}/${m} checks passed — ready for ${HEALTH}`);
  const extra = ok.body.checks.filter((c) => optIn.includes(c.checkId));
  const servers = l.appliesTo("bmc-power-on", HEALTH);
  assert.ok(servers.length > 0, "the lab has a server management controller");
  assert.deepEqual(
    extra.map((c) => `${c.checkId}@${c.deviceHostname}`).sort(),
    optIn.flatMap((id) => l.appliesTo(id, HEALTH).map((d) => `${id}@${d.hostname}`)).sort(),
  );
  for (const c of extra.filter((c) => c.checkId === "bmc-power-on")) {
    assert.equal(c.detail, "system power state On");
  }
  // The other plans do not run them (opt-in).
  assert.equal((await l.preflight(ON)).body.checksRun, l.expected(ON).length);
  assert.ok(!(await l.preflight(ON)).body.checks.some((c) => optIn.includes(c.checkId)));

  for (const d of servers) {
    await l.set(d, "power", "off");
    await l.set(d, "health", "warning");
    await l.snapshot(d.id);
  }
  const bad = await l.preflight(HEALTH);
  assert.equal(bad.status, 422);
  assert.deepEqual(
    failing(bad.body),
    servers.flatMap((d) => [`bmc-health-ok@${d.hostname}:fail`, `bmc-power-on@${d.hostname}:fail`]).sort(),
  );
  assert.equal((await l.preflight(ON)).status, 200, "the decrypt-on plan does not look at server health");
});

dbTest(
  "a run's start reads the lab once for its pre-flight and its lab state, parsing each payload at most once",
  async (db) => {
    payloadCache.clear();
    await using l = await lab(db);
    const texts = new Set(
      (await sql<{ payload: string }>`select payload from snapshot_payloads`.execute(db.kysely)).rows
        .map((r) => r.payload),
    );
    const queries: string[] = [];
    const counter: KyselyPlugin = {
      transformQuery: (a) => (queries.push(a.node.kind), a.node),
      transformResult: (a) => Promise.resolve(a.result),
    };
    const runs = new RunService(db.kysely.withPlugin(counter), l.svc.registry, "LAB-INTERNAL");
    const parsed = new Map<string, number>();
    const parse = JSON.parse;
    JSON.parse = ((text: string, reviver?: (k: string, v: unknown) => unknown) => {
      if (texts.has(text)) parsed.set(text, (parsed.get(text) ?? 0) + 1);
      return parse(text, reviver);
    }) as typeof JSON.parse;
    let run;
    try {
      run = await runs.start({ planIdentifier: ON });
    } finally {
      JSON.parse = parse;
    }
    // One read: the enabled devices, the latest snapshots (the checks' labels and the lab state's), the
    // payloads; no second read of devices or snapshots for the lab state.
    assert.deepEqual(queries.slice(0, queries.indexOf("InsertQueryNode") + 1), [
      "SelectQueryNode", // no active run
      "SelectQueryNode", // the enabled devices
      "RawNode", // the latest snapshot of each pair a check or the lab state reads
      "RawNode", // their payloads
      "InsertQueryNode", // the run
    ]);
    assert.ok(parsed.size > 0, "the payloads were parsed");
    for (const [text, n] of parsed) assert.equal(n, 1, `parsed ${n} times: ${text.slice(0, 80)}`);
    // The lab state read from it: both firewalls' decrypt state and every device's inventory.
    const row = await db.kysely.selectFrom("test_runs").select("start_state_json")
      .where("execution_id", "=", run.executionId).executeTakeFirstOrThrow();
    const state = typeof row.start_state_json === "string"
      ? JSON.parse(row.start_state_json)
      : row.start_state_json;
    assert.deepEqual(
      Object.values(state.decrypt as Record<string, { state: string }>).map((d) => d.state),
      l.devices.filter((d) => serves(d.adapter, FIREWALL)).map(() => "on"),
    );
    assert.equal(state.devices.length, l.devices.length);
    assert.equal(run.preflightAtStart.pass, true, JSON.stringify(run.preflightAtStart));
  },
);

// The lab read's snapshot statements answer `collected_at` as epoch milliseconds computed by PostgreSQL
// (core/src/lab/read.ts `collectedMs`): the instant truncated to the millisecond, exactly, for times just below,
// at and just above millisecond boundaries, on both statements (now and as of a moment) and both layouts.

// Microseconds after 2026-11-26T12:34:56Z, and the milliseconds the read must answer (truncated, not rounded).
const TIMES: Array<[string, number]> = [
  ["2026-11-26 12:34:56.789999+00", Date.UTC(2026, 10, 26, 12, 34, 56, 789)],
  ["2026-11-26 12:34:56.999999+00", Date.UTC(2026, 10, 26, 12, 34, 56, 999)],
  ["2026-11-26 12:34:57+00", Date.UTC(2026, 10, 26, 12, 34, 57, 0)],
  ["2026-11-26 12:34:57.000001+00", Date.UTC(2026, 10, 26, 12, 34, 57, 0)],
  ["2026-11-26 12:34:57.0005+00", Date.UTC(2026, 10, 26, 12, 34, 57, 0)],
  ["2026-11-26 12:34:57.123+00", Date.UTC(2026, 10, 26, 12, 34, 57, 123)],
  ["1999-12-31 23:59:59.999999+00", Date.UTC(1999, 11, 31, 23, 59, 59, 999)],
  ["2099-06-30 00:00:00.000999+00", Date.UTC(2099, 5, 30, 0, 0, 0, 0)],
];

dbTest(
  "the lab read answers collected_at as the epoch milliseconds of the instant, truncated",
  async (db) => {
    const { svc } = await testServices(db, modules);
    const ids: string[] = [];
    for (let i = 0; i < TIMES.length; i++) {
      ids.push(
        await svc.devices.create({
          hostname: `ms-${i}`,
          vendor: enabledVendors(modules)[0]!, // any enabled vendor: the read is vendor-blind
          baseUrl: "https://192.0.2.1",
          username: "u",
          password: "p",
          tlsVerifyMode: "strict",
          pollIntervalSeconds: 300,
          enabled: true,
        }),
      );
    }
    const sha = "0".repeat(64);
    await sql`insert into snapshot_payloads (sha256, payload, size_bytes) values (${sha}, '{}', 2)`.execute(
      db.kysely,
    );
    for (const [i, [at]] of TIMES.entries()) {
      await sql`insert into snapshots (device_id, endpoint_label, payload_sha256, collected_at, adapter_module,
      adapter_version) values (${ids[i]}, 'ntp_config', ${sha}, ${at}::timestamptz, 'bench', '0')`.execute(
        db.kysely,
      );
    }
    // (The poller's store keeps snapshot_latest; this test writes it as the store would.)
    await sql`insert into snapshot_latest (device_id, endpoint_label, snapshot_id)
    select device_id, endpoint_label, max(id) from snapshots group by device_id, endpoint_label`.execute(
      db.kysely,
    );
    const want = Object.fromEntries(ids.map((id, i) => [id, TIMES[i]![1]]));
    const asOf = new Date(Date.UTC(2100, 0, 1));
    for (const legacyLeft of [true, false]) {
      for (
        const q of [
          latestSql(["ntp_config"], [ids.join(",")], legacyLeft),
          latestAsOfSql(["ntp_config"], [ids.join(",")], asOf, legacyLeft),
        ]
      ) {
        const { rows } = await q.execute(db.kysely);
        assert.equal(rows.length, TIMES.length);
        assert.deepEqual(Object.fromEntries(rows.map((r) => [r.device_id, Number(r.collected_ms)])), want);
      }
    }
  },
);
