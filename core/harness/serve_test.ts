import assert from "node:assert/strict";
import { freePort, ServeProcess } from "./serve.ts";

Deno.test("freePort: a loopback port below the ephemeral range that can be listened on", () => {
  const port = freePort();
  assert.ok(port >= 20_000 && port < 32_768, String(port));
  Deno.listen({ hostname: "127.0.0.1", port }).close();
});

Deno.test("ServeProcess: a serve whose port another process holds starts again on another port", async () => {
  const taken = freePort();
  const holder = Deno.listen({ hostname: "127.0.0.1", port: taken });
  const dir = await Deno.makeTempDir({ prefix: "dutlab-serve-port-" });
  const svc = new ServeProcess(null, { DUT_DATA_DIR: dir, DUT_API_POLLER_DISABLE: "1", PORT: String(taken) });
  try {
    assert.equal(svc.port, taken);
    await svc.ready();
    assert.notEqual(svc.port, taken);
    assert.match(svc.log(), /Address already in use/);
    const r = await fetch(`${svc.base}/readyz`);
    assert.equal(r.status, 200);
    await r.body?.cancel();
  } finally {
    await svc.stop();
    holder.close();
    await Deno.remove(dir, { recursive: true });
  }
});
