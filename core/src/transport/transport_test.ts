import assert from "node:assert/strict";
import tls from "node:tls";
import { DEFAULT_LIMITS, openTransport } from "./transport.ts";
import { type AddressLookup, parseDeviceNetworks } from "./networks.ts";
import { type CertificateBundle, certificates, startSimulator } from "../../testing/mod.ts";
import { ConnectionPool } from "./pool.ts";
import { DeviceError } from "../errors.ts";

const ok = () => Response.json({ ok: true });
const isTls = (e: unknown) => e instanceof DeviceError && e.status === "tls_error";

Deno.test("strict mode refuses a self-signed device and sends nothing", async () => {
  await using sim = await startSimulator({ handler: ok });
  const t = openTransport({ baseUrl: sim.url, tlsVerifyMode: "strict", pinnedCertSha256: null });
  await assert.rejects(() => t.request({ path: "/x", headers: { authorization: "Bearer secret" } }), isTls);
  t.close();
  assert.equal(sim.requests.length, 0);
});

Deno.test("strict mode accepts a certificate from a trusted CA and checks the host name", async () => {
  const ca = await certificates.authority();
  const leaf = await certificates.issue(ca, ["localhost"]);
  await using sim = await startSimulator({ handler: ok, certificate: leaf });
  const good = openTransport(
    { baseUrl: `https://localhost:${sim.port}`, tlsVerifyMode: "strict", pinnedCertSha256: null },
    {
      connectTimeoutMs: 5000,
      requestTimeoutMs: 5000,
      maxResponseBytes: 1 << 20,
      maxJsonDepth: 64,
      extraCa: [ca.certPem],
    },
  );
  assert.equal((await good.request({ path: "/x" })).status, 200);
  good.close();
  const wrongName = await certificates.issue(ca, ["other.example"]);
  await sim.rotateCertificate(wrongName);
  sim.clearLog();
  const bad = openTransport(
    { baseUrl: `https://localhost:${sim.port}`, tlsVerifyMode: "strict", pinnedCertSha256: null },
    {
      connectTimeoutMs: 5000,
      requestTimeoutMs: 5000,
      maxResponseBytes: 1 << 20,
      maxJsonDepth: 64,
      extraCa: [ca.certPem],
    },
  );
  await assert.rejects(() => bad.request({ path: "/x" }), isTls);
  bad.close();
  assert.equal(sim.requests.length, 0);
});

Deno.test("self-signed mode pins on first use, then refuses a rotated certificate", async () => {
  await using sim = await startSimulator({ handler: ok });
  const pins: string[] = [];
  const t1 = openTransport(
    { baseUrl: sim.url, tlsVerifyMode: "self-signed", pinnedCertSha256: null },
    undefined,
    {
      onPin: (fp) => void pins.push(fp),
    },
  );
  assert.equal((await t1.request({ path: "/a" })).status, 200);
  t1.close();
  assert.deepEqual(pins, [sim.fingerprint]);
  const t2 = openTransport({ baseUrl: sim.url, tlsVerifyMode: "self-signed", pinnedCertSha256: pins[0]! });
  assert.equal((await t2.request({ path: "/b" })).status, 200);
  t2.close();
  const old = sim.fingerprint;
  const fresh = await sim.rotateCertificate();
  sim.clearLog();
  const t3 = openTransport({ baseUrl: sim.url, tlsVerifyMode: "self-signed", pinnedCertSha256: old });
  await assert.rejects(
    () => t3.request({ path: "/c", headers: { authorization: "Bearer s" } }),
    (e: unknown) => {
      assert.ok(isTls(e));
      assert.match((e as Error).message, new RegExp(`presented sha256 ${fresh}, pinned ${old}`));
      return true;
    },
  );
  t3.close();
  assert.equal(sim.requests.length, 0, "no request byte reached the device");
});

Deno.test("insecure mode connects without verification", async () => {
  await using sim = await startSimulator({ handler: ok });
  const t = openTransport({ baseUrl: sim.url, tlsVerifyMode: "insecure", pinnedCertSha256: null });
  assert.equal((await t.request({ path: "/x" })).status, 200);
  assert.equal(t.presentedCertSha256, sim.fingerprint);
  t.close();
});

Deno.test("transport classifies timeouts, refused connections, oversize and bad JSON", async () => {
  await using sim = await startSimulator({ handler: () => new Response("not json") });
  const limits = { connectTimeoutMs: 2000, requestTimeoutMs: 300, maxResponseBytes: 64, maxJsonDepth: 3 };
  const t = openTransport({ baseUrl: sim.url, tlsVerifyMode: "insecure", pinnedCertSha256: null }, limits);
  const r = await t.request({ path: "/x" });
  assert.throws(() => r.json(), (e: unknown) => e instanceof DeviceError && e.status === "protocol_error");
  sim.faults.hang = true;
  await assert.rejects(
    () => t.request({ path: "/h" }),
    (e: unknown) => e instanceof DeviceError && e.status === "timeout",
  );
  sim.faults.hang = false;
  t.close();
  await using big = await startSimulator({ handler: () => new Response("x".repeat(1000)) });
  const tb = openTransport({ baseUrl: big.url, tlsVerifyMode: "insecure", pinnedCertSha256: null }, limits);
  await assert.rejects(
    () => tb.request({ path: "/x" }),
    (e: unknown) => e instanceof DeviceError && e.status === "protocol_error",
  );
  tb.close();
  await using deep = await startSimulator({ handler: () => new Response('{"a":{"b":{"c":{"d":1}}}}') });
  const td = openTransport({ baseUrl: deep.url, tlsVerifyMode: "insecure", pinnedCertSha256: null }, limits);
  const dr = await td.request({ path: "/x" });
  assert.throws(() => dr.json(), (e: unknown) => e instanceof DeviceError && e.status === "protocol_error");
  td.close();
  const port = big.port;
  await big.close();
  const tr = openTransport({
    baseUrl: `https://127.0.0.1:${port}`,
    tlsVerifyMode: "insecure",
    pinnedCertSha256: null,
  }, limits);
  await assert.rejects(
    () => tr.request({ path: "/x" }),
    (e: unknown) => e instanceof DeviceError && e.status === "unreachable",
  );
  tr.close();
});

Deno.test("transport keeps cookies and refuses to follow another origin", async () => {
  await using sim = await startSimulator({
    handler: (req) =>
      new URL(req.url).pathname === "/login"
        ? new Response("{}", { headers: { "set-cookie": "APIC-cookie=tok123; path=/; HttpOnly" } })
        : Response.json({ cookie: req.headers.get("cookie") }),
  });
  const t = openTransport({ baseUrl: sim.url, tlsVerifyMode: "insecure", pinnedCertSha256: null });
  await t.request({ method: "POST", path: "/login", json: {} });
  assert.deepEqual((await t.request({ path: "/data" })).json(), { cookie: "APIC-cookie=tok123" });
  await assert.rejects(
    () => t.request({ path: "https://elsewhere.example/x" }),
    (e: unknown) => e instanceof DeviceError,
  );
  t.close();
});

/** A device that answers with the client port of the connection, so a reused connection shows. */
function portEcho(certificate: CertificateBundle, port = 0) {
  const seen: number[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port, cert: certificate.certPem, key: certificate.keyPem, onListen: () => {} },
    (_req, info) => {
      seen.push((info.remoteAddr as Deno.NetAddr).port);
      return Response.json({ port: (info.remoteAddr as Deno.NetAddr).port });
    },
  );
  return { server, seen, url: `https://127.0.0.1:${server.addr.port}`, port: server.addr.port };
}

Deno.test("kept connections serve the next transport of the same device and pin only; new ones are still checked", async () => {
  const pool = new ConnectionPool(10_000);
  const first = await certificates.selfSigned();
  let dev = portEcho(first);
  try {
    const target = { baseUrl: dev.url, tlsVerifyMode: "self-signed" as const, pinnedCertSha256: null };
    const t1 = openTransport(target, undefined, { pool });
    const p1 = (await t1.request({ path: "/a" })).json<{ port: number }>().port;
    t1.close();
    t1.close(); // a second close changes nothing
    assert.equal(pool.size, 1, "parked under the pin taken on first use");

    const t2 = openTransport({ ...target, pinnedCertSha256: first.sha256 }, undefined, { pool });
    assert.equal(pool.size, 0);
    assert.equal(t2.presentedCertSha256, first.sha256);
    assert.equal((await t2.request({ path: "/b" })).json<{ port: number }>().port, p1, "same connection");
    t2.close();

    // Another mode or pin (a cleared pin included) opens its own connection.
    for (const other of [{ tlsVerifyMode: "insecure" as const }, { pinnedCertSha256: null }]) {
      const t = openTransport({ ...target, pinnedCertSha256: first.sha256, ...other }, undefined, { pool });
      assert.notEqual((await t.request({ path: "/c" })).json<{ port: number }>().port, p1);
      t.close();
    }
    assert.equal(pool.size, 2, "the insecure agent and the pinned one");

    // The device restarts (same certificate): the kept connection it closed is not used, a new one is.
    await dev.server.shutdown();
    dev = portEcho(first, dev.port);
    const t4 = openTransport({ ...target, pinnedCertSha256: first.sha256 }, undefined, { pool });
    assert.notEqual((await t4.request({ path: "/e" })).json<{ port: number }>().port, p1);
    t4.close();

    // The device restarts with another certificate: the kept connection is gone, the new one is refused.
    await dev.server.shutdown();
    dev = portEcho(await certificates.selfSigned(), dev.port);
    const t3 = openTransport({ ...target, pinnedCertSha256: first.sha256 }, undefined, { pool });
    await assert.rejects(() => t3.request({ path: "/d" }), isTls);
    t3.close();
    assert.deepEqual(dev.seen, [], "no request reached the restarted device");
  } finally {
    pool.closeAll();
    await dev.server.shutdown();
  }
});

Deno.test("a transport closed with a request under way keeps none of its connections", async () => {
  const pool = new ConnectionPool(10_000);
  const cert = await certificates.selfSigned();
  let release = () => {};
  const hung = new Promise<void>((r) => release = r);
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert: cert.certPem, key: cert.keyPem, onListen: () => {} },
    async (req) => {
      if (new URL(req.url).pathname === "/hang") await hung;
      return Response.json({ ok: true });
    },
  );
  try {
    const target = { baseUrl: `https://127.0.0.1:${server.addr.port}`, tlsVerifyMode: "insecure" as const };
    const t = openTransport({ ...target, pinnedCertSha256: null }, undefined, { pool });
    // Two connections, then a request that hangs on one of them while the other is idle.
    await Promise.all([t.request({ path: "/a" }), t.request({ path: "/b" })]);
    const pending = t.request({ path: "/hang" }).then(() => null, (e: unknown) => e);
    await new Promise((r) => setTimeout(r, 100));
    t.close();
    assert.equal(pool.size, 0, "nothing parked");
    assert.ok((await pending) instanceof DeviceError, "the request under way was dropped with the agent");
  } finally {
    release();
    pool.closeAll();
    await server.shutdown();
  }
});

/** `tls.connect` counted while `fn` runs: how many sockets the transport opened. */
async function countingSockets<T>(fn: () => Promise<T>): Promise<{ result: T; sockets: number }> {
  const original = tls.connect;
  let sockets = 0;
  (tls as { connect: unknown }).connect = (...args: Parameters<typeof tls.connect>) => {
    sockets++;
    return original(...args);
  };
  try {
    return { result: await fn(), sockets };
  } finally {
    (tls as { connect: unknown }).connect = original;
  }
}

const networks = (text: string) => {
  const r = parseDeviceNetworks(text);
  if (!("networks" in r)) throw new Error(r.errors.join("; "));
  return r.networks;
};

// Issue 46 point 5. Traffic rule: this test connects nowhere; the stub answers the metadata address.
Deno.test("a name that resolves to the metadata address is refused at connect time, before any socket", async () => {
  const asked: string[] = [];
  const lookup: AddressLookup = (host) => {
    asked.push(host);
    return Promise.resolve([{ address: "169.254.169.254", family: 4 }]);
  };
  const t = openTransport(
    { baseUrl: "https://fw1.rebind.test", tlsVerifyMode: "insecure", pinnedCertSha256: null },
    { ...DEFAULT_LIMITS, lookup },
  );
  const { result, sockets } = await countingSockets(() =>
    t.request({ path: "/x", headers: { authorization: "Bearer secret" } }).then(() => null, (e: unknown) => e)
  );
  t.close();
  assert.deepEqual(asked, ["fw1.rebind.test"], "the resolver was asked");
  assert.equal(sockets, 0, "no socket opened");
  assert.ok(result instanceof DeviceError && result.status === "unreachable", String(result));
  assert.match(
    result.message,
    /^Refused to connect to fw1\.rebind\.test: 169\.254\.169\.254 is the cloud metadata service's address/,
  );
});

Deno.test("of a name's addresses only the admitted ones are used; a listed loopback reaches the lab", async () => {
  await using sim = await startSimulator({ handler: ok });
  const asked: string[] = [];
  const lookup: AddressLookup = (host) => {
    asked.push(host);
    return Promise.resolve([{ address: "169.254.169.254", family: 4 }, { address: "127.0.0.1", family: 4 }]);
  };
  const limits = { ...DEFAULT_LIMITS, lookup, networks: networks("127.0.0.0/8") };
  const t = openTransport(
    { baseUrl: `https://lab-device.test:${sim.port}`, tlsVerifyMode: "insecure", pinnedCertSha256: null },
    limits,
  );
  const { result: res, sockets } = await countingSockets(() => t.request({ path: "/x" }));
  t.close();
  assert.equal(res.status, 200);
  assert.equal(sockets, 1, "one socket, to the admitted address (the count sees the transport's sockets)");
  assert.deepEqual(asked, ["lab-device.test"]);
  assert.equal(sim.requests.length, 1);
});

Deno.test("a literal address outside DUT_DEVICE_NETWORKS is refused without resolving or connecting", async () => {
  await using sim = await startSimulator({ handler: ok });
  let asked = 0;
  const lookup: AddressLookup = () => {
    asked++;
    return Promise.resolve([]);
  };
  const t = openTransport(
    { baseUrl: sim.url, tlsVerifyMode: "insecure", pinnedCertSha256: null },
    { ...DEFAULT_LIMITS, lookup, networks: networks("10.20.0.0/16") },
  );
  const { result, sockets } = await countingSockets(() =>
    t.request({ path: "/x" }).then(() => null, (e) => e)
  );
  t.close();
  assert.equal(asked, 0);
  assert.equal(sockets, 0);
  assert.ok(result instanceof DeviceError && result.status === "unreachable");
  assert.match(result.message, /127\.0\.0\.1 is a loopback address .*DUT_DEVICE_NETWORKS/);
  assert.equal(sim.requests.length, 0);
});
