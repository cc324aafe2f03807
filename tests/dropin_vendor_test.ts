/**
 * Drop-in: an adapter of a vendor (`acme-pdu`) and role (`pdu`) the core has never heard of is accepted at
 * registration, polled, checked by the catalog's vendor-neutral checks (`ntp-source-configured`,
 * `snapshot-fresh`) and part of a plan, with no edit to core or to a check: only its own module, a plan
 * naming it, and the module list. The BMC-only checks, enabled beside it, do not apply to it.
 */
import assert from "node:assert/strict";
import { defineAdapter, definePlugin, DeviceError } from "@dutlab/core";
import { dbTest, jsonReq, startSimulator, testServices } from "@dutlab/core/testing";
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
