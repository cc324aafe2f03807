// Device addresses that mean one thing (issue 46 point 4) and where the service may connect (point 5), through
// the device API, the lab file and migration 0024. Both back ends. No test here connects anywhere: addresses
// are checked at registration, before any connection.
import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest, testMigrator } from "../../harness/db.ts";
import { jsonReq, testServices } from "../../harness/app.ts";
import type { Db } from "../db/open.ts";
import { fixtureModules } from "../../testing/fixture_modules.ts";
import { hostnameClashes } from "./hostname_clashes.ts";

const device = (over: Record<string, unknown> = {}) => ({
  hostname: "fw-1",
  vendor: "fixture-fw",
  baseUrl: "https://127.0.0.1:9",
  username: "admin",
  password: "fixture-pass",
  ...over,
});

async function setup(db: Db, env: Record<string, string> = {}) {
  const t = await testServices(db, fixtureModules(), env);
  const send = async (method: string, path: string, body: unknown) => {
    const res = await t.app.request(path, jsonReq(method, body, t.auth));
    return { status: res.status, type: res.headers.get("content-type"), body: await res.json() };
  };
  return { ...t, send };
}

dbTest(
  "a base URL is stored normalised: lower-case scheme and host, no default port or trailing slash",
  async (db) => {
    const t = await setup(db);
    const r = await t.send(
      "POST",
      "/api/admin/dut/devices",
      device({ baseUrl: "HTTPS://FW-1.Lab.Example:443/" }),
    );
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const id = r.body.deviceId;
    assert.equal((await t.svc.devices.get(id)).base_url, "https://fw-1.lab.example");
    const p = await t.send("PATCH", `/api/admin/dut/devices/${id}`, { baseUrl: "https://[::1]:8443/" });
    assert.equal(p.status, 200);
    assert.equal(p.body.baseUrl, "https://[::1]:8443");
  },
);

dbTest(
  "a base URL with a path, query, fragment, port 0, a numeric IPv4 or a metadata address is a 400 naming baseUrl",
  async (db) => {
    const t = await setup(db);
    const refusals: Array<[string, RegExp]> = [
      ["https://fw-1.lab/api", /must have no path \("\/api"\)/],
      ["https://fw-1.lab/?a=1", /must have no query/],
      ["https://fw-1.lab/#x", /must have no fragment/],
      ["https://fw-1.lab:0", /port 0/],
      ["https://2130706433:8443", /"2130706433", an IPv4 address not in dotted decimal .*write 127\.0\.0\.1/],
      ["https://169.254.169.254", /169\.254\.169\.254 is the cloud metadata service's address/],
      ["https://[fe80::1]", /fe80::1 is a link-local address/],
    ];
    const good =
      (await t.send("POST", "/api/admin/dut/devices", device({ hostname: "fw-ok" }))).body.deviceId;
    for (const [baseUrl, message] of refusals) {
      for (
        const r of [
          await t.send("POST", "/api/admin/dut/devices", device({ baseUrl })),
          await t.send("PATCH", `/api/admin/dut/devices/${good}`, { baseUrl }),
        ]
      ) {
        assert.equal(r.status, 400, `${baseUrl}: ${JSON.stringify(r.body)}`);
        assert.equal(r.type, "application/problem+json");
        assert.equal(r.body.errors[0].field, "baseUrl");
        assert.match(r.body.errors[0].message, message, baseUrl);
      }
    }
    const rows = await db.kysely.selectFrom("devices").select(["hostname", "base_url"]).execute();
    assert.deepEqual(
      rows,
      [{ hostname: "fw-ok", base_url: "https://127.0.0.1:9" }],
      "nothing stored, nothing changed",
    );
  },
);

dbTest(
  "with DUT_DEVICE_NETWORKS set, a literal address outside it is a 400; a name is left to connect time",
  async (db) => {
    const t = await setup(db, { DUT_DEVICE_NETWORKS: "10.20.0.0/16,*.mgmt.lab" });
    const out = await t.send("POST", "/api/admin/dut/devices", device({ baseUrl: "https://127.0.0.1:9" }));
    assert.equal(out.status, 400);
    assert.equal(out.body.errors[0].field, "baseUrl");
    assert.match(out.body.errors[0].message, /127\.0\.0\.1 is a loopback address .*DUT_DEVICE_NETWORKS/);
    const inside = await t.send("POST", "/api/admin/dut/devices", device({ baseUrl: "https://10.20.1.2" }));
    assert.equal(inside.status, 201);
    const named = await t.send(
      "POST",
      "/api/admin/dut/devices",
      device({ hostname: "fw-2", baseUrl: "https://fw2.mgmt.lab" }),
    );
    assert.equal(named.status, 201);
  },
);

dbTest(
  "host names compare case-insensitively: a new clash is a 409 naming the device that holds the name",
  async (db) => {
    const t = await setup(db);
    const first =
      (await t.send("POST", "/api/admin/dut/devices", device({ hostname: "fw-upper" }))).body.deviceId;
    const clash = await t.send("POST", "/api/admin/dut/devices", device({ hostname: "FW-UPPER" }));
    assert.equal(clash.status, 409);
    assert.equal(clash.type, "application/problem+json");
    assert.match(clash.body.detail, /"FW-UPPER" is already registered as "fw-upper" \(host names compare/);
    assert.ok(clash.body.detail.includes(first), "names the existing device's id");
    assert.equal(clash.body.errors[0].field, "hostname");
    const other =
      (await t.send("POST", "/api/admin/dut/devices", device({ hostname: "fw-other" }))).body.deviceId;
    const rename = await t.send("PATCH", `/api/admin/dut/devices/${other}`, { hostname: "Fw-Upper" });
    assert.equal(rename.status, 409);
    // The device itself may change the case of its own name.
    const own = await t.send("PATCH", `/api/admin/dut/devices/${first}`, { hostname: "FW-UPPER" });
    assert.equal(own.status, 200);
    assert.equal(own.body.hostname, "FW-UPPER");
    assert.deepEqual(await hostnameClashes(db.kysely), []);
  },
);

dbTest(
  "a lab file's base URLs are normalised and refused as the API's, and its host names compare case-insensitively",
  async (db) => {
    const t = await setup(db);
    const lab = (devices: unknown[]) => ({
      apiVersion: "dutlab/v1",
      kind: "Lab",
      metadata: { name: "lab1" },
      defaults: { vendor: "fixture-fw", credential: "admin" },
      credentials: { admin: { username: "admin", password: "env:LAB1_PASSWORD" } },
      devices,
    });
    const plan = (l: unknown) =>
      t.send("POST", "/api/admin/dut/lab/plan", { lab: l, secrets: { admin: "pw-lab-1" } });
    const bad = await plan(lab([
      { hostname: "fw-a", baseUrl: "https://fw-a.lab/api" },
      { hostname: "fw-b", baseUrl: "https://169.254.169.254" },
      { hostname: "FW-A", baseUrl: "https://fw-a2.lab" },
    ]));
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.errors.map((e: { field: string }) => e.field), [
      "$.devices[0].baseUrl",
      "$.devices[1].baseUrl",
      "$.devices[2].hostname",
    ]);
    assert.match(bad.body.errors[0].message, /must have no path/);
    const good = lab([{ hostname: "fw-a", baseUrl: "HTTPS://FW-A.Lab:443/" }]);
    const p = await plan(good);
    assert.equal(p.status, 200);
    const applied = await t.send("POST", "/api/admin/dut/lab/apply", {
      lab: good,
      secrets: { admin: "pw-lab-1" },
      expectedGeneration: p.body.generation,
      planHash: p.body.planHash,
    });
    assert.equal(applied.status, 200, JSON.stringify(applied.body));
    const row = await db.kysely.selectFrom("devices").select(["base_url"]).executeTakeFirstOrThrow();
    assert.equal(row.base_url, "https://fw-a.lab");
    // The same device under another case of its name and URL is no new device.
    const again = await plan(lab([{ hostname: "FW-A", baseUrl: "https://fw-a.lab" }]));
    assert.equal(again.status, 200);
    assert.deepEqual(again.body.devices.map((d: { action: string }) => d.action), ["update"]);
    assert.deepEqual(again.body.devices[0].changes.map((c: { field: string }) => c.field), ["hostname"]);
  },
);

dbTest(
  "migration 0024 keeps the devices of an old case clash, reports them, and refuses new clashes",
  async (db) => {
    const k = db.kysely;
    const m = await testMigrator(k);
    const down = await m.migrateTo("2026_11_28_0023_prune_counts_array");
    if (down.error) throw down.error;
    const insert = (hostname: string, at: string) =>
      sql`insert into devices (id, hostname, vendor, base_url, username, password_enc, tls_verify_mode,
      poll_interval_seconds, enabled, created_at)
      values (gen_random_uuid(), ${hostname}, 'fixture-fw', 'https://127.0.0.1:9', 'admin', 'v1.x.y.z',
        'strict', 300, true, ${at}::timestamptz)`.execute(k);
    await insert("fw-upper", "2026-01-01T00:00:00Z");
    await insert("FW-UPPER", "2026-01-02T00:00:00Z");
    await insert("Fw-Upper", "2026-01-03T00:00:00Z");
    await insert("fw-alone", "2026-01-01T00:00:00Z");
    const up = await m.migrateToLatest();
    if (up.error) throw up.error;
    const clashes = await hostnameClashes(k);
    assert.deepEqual(clashes.map((c) => [c.name, c.devices.map((d) => d.hostname)]), [
      ["fw-upper", ["fw-upper", "FW-UPPER", "Fw-Upper"]],
    ]);
    const rows = await k.selectFrom("devices").select(["hostname", "hostname_case_slot"]).orderBy(
      "created_at",
    )
      .orderBy("hostname").execute();
    assert.deepEqual(rows.map((r) => [r.hostname, r.hostname_case_slot]), [
      ["fw-alone", 0],
      ["fw-upper", 0],
      ["FW-UPPER", 1],
      ["Fw-Upper", 2],
    ]);
    const t = await setup(db);
    const clash = await t.send("POST", "/api/admin/dut/devices", device({ hostname: "fW-uPPER" }));
    assert.equal(clash.status, 409);
    assert.match(clash.body.detail, /already registered as "fw-upper"/);
    // An operator resolves the clash: one renamed, one deleted.
    const id = (h: string) =>
      k.selectFrom("devices").select("id").where("hostname", "=", h).executeTakeFirstOrThrow();
    const renamed = await t.send("PATCH", `/api/admin/dut/devices/${(await id("FW-UPPER")).id}`, {
      hostname: "fw-upper-2",
    });
    assert.equal(renamed.status, 200);
    const back = await t.send("PATCH", `/api/admin/dut/devices/${(await id("fw-upper-2")).id}`, {
      hostname: "FW-upper",
    });
    assert.equal(back.status, 409, "a renamed device joins the plain check");
    const del = await t.app.request(`/api/admin/dut/devices/${(await id("Fw-Upper")).id}`, {
      method: "DELETE",
      headers: t.auth,
    });
    assert.equal(del.status, 200);
    assert.deepEqual(await hostnameClashes(k), []);
  },
);
