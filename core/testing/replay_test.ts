import assert from "node:assert/strict";
import { startReplayServer } from "./replay.ts";

Deno.test("replay server answers captured routes by method, path and query, and a mockup tree", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/tree/Systems/1`, { recursive: true });
    await Deno.writeTextFile(`${dir}/tree/index.json`, JSON.stringify({ root: true }));
    await Deno.writeTextFile(`${dir}/tree/Systems/1/index.json`, JSON.stringify({ Id: "1" }));
    await Deno.writeTextFile(`${dir}/all.json`, JSON.stringify([{ vdom: "root" }, { vdom: "b" }]));
    await Deno.writeTextFile(
      `${dir}/replay.json`,
      JSON.stringify({
        tree: { prefix: "/redfish/v1", dir: "tree" },
        routes: [
          { path: "/api/policy", body: { any: true } },
          { path: "/api/policy?vdom=*", file: "all.json" },
          { method: "POST", path: "/login", status: 201, headers: { "x-auth-token": "t" }, body: {} },
        ],
      }),
    );
    await using replay = await startReplayServer(dir);
    const get = async (path: string, init?: RequestInit) => {
      const client = Deno.createHttpClient({ caCerts: [replay.sim.certificate.certPem] });
      try {
        const res = await fetch(`${replay.url}${path}`, { ...init, client });
        return { status: res.status, headers: res.headers, body: await res.json() };
      } finally {
        client.close();
      }
    };
    assert.deepEqual((await get("/api/policy?vdom=*&x=1")).body, [{ vdom: "root" }, { vdom: "b" }]);
    assert.deepEqual((await get("/api/policy?vdom=root")).body, { any: true });
    const login = await get("/login", { method: "POST", body: "{}" });
    assert.equal(login.status, 201);
    assert.equal(login.headers.get("x-auth-token"), "t");
    assert.deepEqual((await get("/redfish/v1/")).body, { root: true });
    assert.deepEqual((await get("/redfish/v1/Systems/1")).body, { Id: "1" });
    assert.equal((await get("/redfish/v1/Systems/2")).status, 404);
    assert.equal((await get("/redfish/v1/../replay.json")).status, 404);
    assert.deepEqual(replay.unmatched, ["GET /redfish/v1/Systems/2", "GET /redfish/replay.json"]);
    assert.equal(replay.sim.requests.length, 7);
    assert.equal(replay.sim.requests[2]!.method, "POST");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
