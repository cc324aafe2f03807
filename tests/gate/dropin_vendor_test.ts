/**
 * Drop-in: an adapter of a vendor (`acme-pdu`) and role (`pdu`) the core has never heard of is accepted at
 * registration, polled, checked by the catalog's vendor-neutral checks (`ntp-source-configured`,
 * `snapshot-fresh`) and part of a plan, with no edit to core or to a check: only its own module, a plan
 * naming it, and the module list. The BMC-only checks, enabled beside it, do not apply to it.
 *
 * And at the gate: a sixth adapter (`tests/testdata/vendor-z-test/`, a firewall) added to a temporary copy
 * of the workspace by docs/extending.md's "Adding an adapter" steps alone (its folder, `modules.json`, the
 * workspace list, `deno task gen`) passes the gate's drop-in tests there with no other edit: it joins the
 * catalog's plans, the lab and every check it serves.
 */
import assert from "node:assert/strict";
import { defineAdapter, definePlugin, DeviceError } from "@dutlab/core";
import { childEnv } from "../../core/harness/process.ts";
import { startSimulator } from "@dutlab/core/testing";
import { dbTest } from "../../core/harness/db.ts";
import { jsonReq, testServices } from "../../core/harness/app.ts";
import ntp from "@dutlab/check-ntp-source-configured";
import fresh from "@dutlab/check-snapshot-fresh";
import bmcHealth from "@dutlab/check-bmc-health-ok";
import bmcPower from "@dutlab/check-bmc-power-on";

/** A power distribution unit speaking a small JSON API with basic auth. */
const pdu = defineAdapter({
  vendorKey: "acme-pdu",
  displayName: "ACME power distribution unit",
  coreVersion: "^1.0.0",
  deviceRoles: ["pdu"],
  labels: ["system_info", "ntp_config", "outlets"],
  facts: {
    ntpServers: (p) => {
      const s = (p as { timeServers?: unknown }).timeServers;
      if (!Array.isArray(s)) throw new Error("ntp_config payload has no timeServers array");
      return s as string[];
    },
  },
  create(ctx) {
    const get = async (path: string) => {
      const r = await ctx.http.request({
        path,
        headers: {
          authorization: `Basic ${btoa(`${ctx.credentials.username}:${ctx.credentials.password}`)}`,
        },
      });
      if (r.status === 401) throw new DeviceError("auth_failed", "Login refused: HTTP 401");
      if (r.status >= 400) throw new DeviceError("http_error", `GET ${path} answered HTTP ${r.status}`);
      return r.json();
    };
    return {
      async testConnection() {
        return {
          cpuDetail: `CPU ${(await get("/cpu") as { cpu: number }).cpu}% from GET /cpu`,
          cpuPercent: null,
        };
      },
      async collectAll() {
        return [
          { label: "system_info", payload: await get("/system") },
          { label: "ntp_config", payload: await get("/time") },
          { label: "outlets", payload: await get("/outlets") },
        ];
      },
      close: () => Promise.resolve(),
    };
  },
});

const plans = definePlugin({
  name: "pdu-plans",
  coreVersion: "^1.0.0",
  planCatalog: {
    catalogVersion: 1,
    plans: [{
      identifier: "pdu-soak",
      displayName: "PDU soak",
      description: "power rails under load",
      tlsDecrypt: "off",
      sloTargetP99Ms: 100,
      deploymentMode: "inline",
      phases: [{ name: "steady", durationS: 60, load: { rps: 1 } }],
      vendors: ["acme-pdu"],
      deviceRoles: ["pdu"],
      parameters: {},
    }],
  },
});

const mod = (name: string, module: unknown) => ({ name, version: "0.0.1", module });

dbTest("an adapter of an unknown vendor and role is polled, checked and part of a plan", async (db) => {
  const { app, auth } = await testServices(db, {
    adapters: [mod("@acme/adapter-pdu", pdu)],
    checks: [
      mod("@dutlab/check-ntp-source-configured", ntp),
      mod("@dutlab/check-snapshot-fresh", fresh),
      mod("@dutlab/check-bmc-health-ok", bmcHealth),
      mod("@dutlab/check-bmc-power-on", bmcPower),
    ],
    plugins: [mod("@acme/plugin-pdu-plans", plans)],
    vendorsWithoutAdapter: [],
  });
  const servers = ["10.0.0.5"];
  await using sim = await startSimulator({
    name: "acme-pdu",
    handler: (req) => {
      if (req.headers.get("authorization") !== `Basic ${btoa("admin:pw")}`) {
        return new Response(null, { status: 401 });
      }
      const path = new URL(req.url).pathname;
      if (path === "/cpu") return Response.json({ cpu: 3 });
      if (path === "/system") return Response.json({ model: "PDU-8" });
      if (path === "/time") return Response.json({ timeServers: servers });
      if (path === "/outlets") return Response.json({ outlets: [{ id: 1, on: true }] });
      return new Response(null, { status: 404 });
    },
  });
  const device = {
    vendor: "acme-pdu",
    baseUrl: sim.url,
    username: "admin",
    password: "pw",
    tlsVerifyMode: "self-signed",
  };

  // The role comes from the adapter: "pdu" is accepted, a role no enabled adapter declares is not.
  const bad = await app.request(
    "/api/admin/dut/devices",
    jsonReq("POST", { ...device, hostname: "pdu-x", deviceRole: "ngfw" }, auth),
  );
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).errors[0].field, "deviceRole");
  const reg = await app.request(
    "/api/admin/dut/devices",
    jsonReq("POST", { ...device, hostname: "pdu-1" }, auth),
  );
  assert.equal(reg.status, 201);
  const { deviceId } = await reg.json();
  const view = await (await app.request(`/api/admin/dut/devices/${deviceId}`, { headers: auth })).json();
  assert.equal(view.deviceRole, "pdu");

  const poll =
    await (await app.request(`/api/admin/dut/devices/${deviceId}/snapshot`, jsonReq("POST", undefined, auth)))
      .json();
  assert.equal(poll.ok, true, JSON.stringify(poll));
  assert.equal(poll.lastPollError, "collected 3 snapshot(s)");

  const preflight = async () => {
    const r = await app.request(
      "/api/test-runs/preflight",
      jsonReq("POST", { planIdentifier: "pdu-soak" }, auth),
    );
    return { status: r.status, body: await r.json() };
  };
  const ok = await preflight();
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.deepEqual(
    ok.body.checks.map((
      c: { checkId: string; deviceHostname: string; status: string },
    ) => [c.checkId, c.deviceHostname, c.status]),
    [
      ["ntp-source-configured", "pdu-1", "pass"],
      ["snapshot-fresh", "pdu-1", "pass"],
    ],
  );
  assert.match(ok.body.checks[0].detail, /10\.0\.0\.5/);

  // The check reads the new vendor's payload through its fact: no time server, a fail.
  servers.length = 0;
  await app.request(`/api/admin/dut/devices/${deviceId}/snapshot`, jsonReq("POST", undefined, auth));
  const failed = await preflight();
  assert.equal(failed.status, 422);
  assert.equal(failed.body.checks[0].detail, "no time server is configured");
});

const ROOT = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");
const FIXTURE = new URL("../testdata/vendor-z-test/", import.meta.url).pathname;
/**
 * What the copy leaves out: version control, local data and benchmark output (all git-ignored), and this test
 * with its template member (read from here): in the copy they would name a member of that workspace, which
 * the boundary rule refuses for a file under tests/, and an author's own workspace has neither.
 */
const NOT_COPIED = new Set([
  ".git",
  ".data",
  "bench/results",
  "tests/gate/dropin_vendor_test.ts",
  "tests/testdata/vendor-z-test",
]);

/** Every file under `dir` (relative paths), minus {@link NOT_COPIED}. */
async function files(dir: string, rel = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(`${dir}/${rel}`)) {
    const path = rel ? `${rel}/${e.name}` : e.name;
    if (NOT_COPIED.has(path)) continue;
    if (e.isDirectory) out.push(...await files(dir, path));
    else if (e.isFile) out.push(path);
  }
  return out.sort();
}

async function run(cwd: string, args: string[]): Promise<{ code: number; out: string }> {
  const r = await new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    clearEnv: true,
    env: childEnv(),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: r.code, out: dec.decode(r.stdout) + dec.decode(r.stderr) };
}

Deno.test("a sixth adapter added to a copy of the workspace by docs/extending.md's steps alone passes the gate's drop-in tests", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "dutlab-dropin-" });
  try {
    const before = await files(ROOT);
    for (const f of before) {
      await Deno.mkdir(`${tmp}/${f}`.replace(/\/[^/]+$/, ""), { recursive: true });
      await Deno.copyFile(`${ROOT}/${f}`, `${tmp}/${f}`);
    }

    // docs/extending.md "Adding an adapter", step by step.
    // 1. Its folder with deno.json (name, version, exports), in the root deno.json workspace list.
    const dir = `${tmp}/adapters/vendor-z-test`;
    await Deno.mkdir(dir);
    await Deno.writeTextFile(
      `${dir}/deno.json`,
      JSON.stringify(
        {
          name: "@dutlab/adapter-vendor-z-test",
          version: "0.1.0",
          exports: { ".": "./mod.ts", "./sim": "./sim.ts" },
        },
        null,
        2,
      ) + "\n",
    );
    const root = JSON.parse(await Deno.readTextFile(`${tmp}/deno.json`));
    const lastAdapter = root.workspace.findLastIndex((w: string) => w.startsWith("./adapters/"));
    root.workspace.splice(lastAdapter + 1, 0, "./adapters/vendor-z-test");
    await Deno.writeTextFile(`${tmp}/deno.json`, JSON.stringify(root, null, 2) + "\n");
    // 2-3. mod.ts (defineAdapter, importing only @dutlab/core), sim.ts (startSimulatedDevice on
    // startSimulator, labControls) and a test running the adapter contract kit.
    for (const f of ["mod.ts", "sim.ts", "mod_test.ts"]) await Deno.copyFile(`${FIXTURE}${f}`, `${dir}/${f}`);
    // 4. The manifest line, then `deno task gen`.
    const manifest = JSON.parse(await Deno.readTextFile(`${tmp}/modules.json`));
    manifest.adapters.push("@dutlab/adapter-vendor-z-test");
    await Deno.writeTextFile(`${tmp}/modules.json`, JSON.stringify(manifest, null, 2) + "\n");
    const gen = await run(tmp, ["task", "gen"]);
    assert.equal(gen.code, 0, gen.out);

    // 5. Nothing else: the gate's static checks and drop-in tests pass in the copy.
    for (
      const args of [
        ["fmt", "--check"],
        ["lint"],
        ["task", "gen:check"],
        ["task", "boundaries"],
        ["check", "modules.gen.ts", "adapters/vendor-z-test/", "tools/lab.ts"],
        [
          "test",
          "-A",
          "--no-check=remote",
          "adapters/vendor-z-test/",
          "plugins/plan-catalog/",
          "tests/gate/capability_test.ts",
          "tests/gate/manifest_test.ts",
          "tests/e2e/lab_test.ts",
          "tests/e2e/preflight_lab_test.ts",
        ],
      ]
    ) {
      const r = await run(tmp, args);
      assert.equal(r.code, 0, `deno ${args.join(" ")} in the copy:\n${r.out}`);
      if (args[0] === "test") {
        // The new vendor took part: in the lab (its settings applied) and in the adapter contract kit.
        assert.match(r.out, /lab: vendor-z-test decrypt=off/);
        assert.match(r.out, /vendor-z-test adapter contract .* ok/);
        assert.doesNotMatch(r.out, /FAILED/);
      }
    }

    // The copy differs from the tree only by the new folder, the manifest, the workspace list and the
    // generated file.
    const changed: string[] = [];
    for (const f of await files(tmp)) {
      const now = await Deno.readFile(`${tmp}/${f}`);
      const was = before.includes(f) ? await Deno.readFile(`${ROOT}/${f}`) : null;
      if (!was || was.length !== now.length || was.some((b, i) => b !== now[i])) changed.push(f);
    }
    assert.deepEqual(changed, [
      "adapters/vendor-z-test/deno.json",
      "adapters/vendor-z-test/mod.ts",
      "adapters/vendor-z-test/mod_test.ts",
      "adapters/vendor-z-test/sim.ts",
      "deno.json",
      "modules.gen.ts",
      "modules.json",
    ]);
  } finally {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
});
