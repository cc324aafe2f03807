import assert from "node:assert/strict";
import { type AdapterContext, DeviceError, type DeviceRequest, type DeviceResponse } from "@dutlab/core";
import { RedfishClient } from "./_redfish.ts";

/** A scripted Redfish device on the DeviceHttp interface, to drive races the simulator cannot time. */
function fakeDevice() {
  const live = new Set<string>();
  const log: string[] = [];
  let n = 0;
  const answer = (
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
    req?: DeviceRequest,
  ) => {
    const text = body === null ? "" : JSON.stringify(body);
    return {
      status,
      headers: new Headers(headers),
      setCookies: [],
      text,
      json: <T>() => JSON.parse(text) as T,
      method: req?.method ?? "GET",
      path: req?.path ?? "",
    } as DeviceResponse;
  };
  const http = {
    cookies: new Map<string, string>(),
    async request(req: DeviceRequest): Promise<DeviceResponse> {
      await new Promise((r) => setTimeout(r, 1));
      const method = req.method ?? "GET";
      log.push(`${method} ${req.path}`);
      if (method === "GET" && req.path === "/redfish/v1/") {
        return answer(200, { Links: { Sessions: { "@odata.id": "/redfish/v1/SessionService/Sessions" } } });
      }
      if (method === "POST") {
        const token = `token-${++n}`;
        live.add(token);
        return answer(201, { Id: String(n) }, {
          "x-auth-token": token,
          location: `https://bmc.example:443/redfish/v1/SessionService/Sessions/${n}`,
        }, req);
      }
      const token = req.headers?.["x-auth-token"] ?? "";
      if (!live.has(token)) return answer(401, null, {}, req);
      if (method === "DELETE") {
        live.delete(token);
        return answer(204, null, {}, req);
      }
      return answer(200, { "@odata.id": req.path }, {}, req);
    },
  };
  const ctx = { http, credentials: { username: "admin", password: "pw" } } as unknown as AdapterContext;
  return { ctx, live, log };
}

Deno.test("concurrent calls that all meet an expired session create one new session", async () => {
  const { ctx, live, log } = fakeDevice();
  const rf = new RedfishClient(ctx);
  await rf.get("/redfish/v1/Systems");
  live.clear(); // the device drops the session
  const paths = Array.from({ length: 6 }, (_, i) => `/redfish/v1/UpdateService/FirmwareInventory/${i}`);
  const got = await Promise.all(paths.map((p) => rf.get(p)));
  assert.deepEqual(got.map((r) => r["@odata.id"]), paths);
  assert.equal(log.filter((l) => l.startsWith("POST")).length, 2);
  await rf.close();
  assert.equal(live.size, 0, "the renewed session is deleted");
  assert.ok(
    log.includes("DELETE /redfish/v1/SessionService/Sessions/2"),
    "absolute Location reduced to its path",
  );
});

Deno.test("after close a late call does not open a new session", async () => {
  const { ctx, live, log } = fakeDevice();
  const rf = new RedfishClient(ctx);
  await rf.get("/redfish/v1/Systems");
  await rf.close();
  await assert.rejects(() => rf.get("/redfish/v1/Chassis"), (e) => e instanceof DeviceError);
  assert.equal(log.filter((l) => l.startsWith("POST")).length, 1);
  assert.equal(live.size, 0);
});
