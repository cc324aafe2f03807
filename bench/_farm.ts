/**
 * Device farm for the poll benchmark, run as its own process so devices and service never share an
 * event loop: `deno run -A bench/_farm.ts --n 1000 --captures <file>`.
 *
 * Each device is an HTTPS server on a 127.0.0.x loopback address with its own self-signed certificate.
 * It replays the exchange the real adapter had with the vendor's real simulator (see _capture.ts): same
 * paths, statuses, headers and bodies, with the device's identity (serial, hostname, UUID) and address
 * varied per device. Vendors are mixed round-robin.
 *
 * Prints one JSON line per device (`{"type":"device",...}`), then `{"type":"ready"}`. Reads commands
 * on stdin: `stats` prints and resets request/connection counters; end of input stops the farm.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { certificates } from "@dutlab/core/testing";
import { captureVendors, substitute, variedIdentity, type VendorCapture, VENDORS } from "./_capture.ts";

const { values: args } = parseArgs({
  args: Deno.args,
  options: { n: { type: "string" }, captures: { type: "string" } },
});
const n = Number(args.n ?? 100);
const t0 = performance.now();
const captures = await captureVendors();
if (args.captures) await Deno.writeTextFile(args.captures, JSON.stringify(captures));
const byVendor = new Map(captures.map((c) => [c.vendor, c]));

interface Recorded {
  status: number;
  headers: Array<[string, string]>;
  body: string;
}

let requests = 0;
let unmatched = 0;
const connections = new Set<string>();
const enc = new TextEncoder();

/** A replaying device: answers each `METHOD path` with the recorded responses in turn. */
function handlerFor(cap: VendorCapture, subst: Array<[string, string]>, reverse: Array<[string, string]>) {
  const table = new Map<string, Recorded[]>();
  for (const x of cap.exchanges) {
    const key = `${x.method} ${x.path}`;
    const list = table.get(key) ?? [];
    list.push({
      status: x.status,
      headers: x.resHeaders.map(([k, v]) => [k, substitute(v, subst)]),
      body: substitute(x.resBody, subst),
    });
    table.set(key, list);
  }
  const seen = new Map<string, number>();
  return async (req: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>): Promise<Response> => {
    requests++;
    connections.add(`${info.remoteAddr.hostname}:${info.remoteAddr.port}`);
    if (req.body) await req.arrayBuffer();
    const url = new URL(req.url);
    const key = `${req.method} ${substitute(url.pathname + url.search, reverse)}`;
    const list = table.get(key);
    if (!list) {
      unmatched++;
      return Response.json({ error: `not captured: ${key}` }, { status: 404 });
    }
    const k = seen.get(key) ?? 0;
    seen.set(key, k + 1);
    const r = list[k % list.length]!; // the table holds no empty list
    // One stream chunk, as the simulator kit sends it (avoids a Nagle / delayed-ACK stall on TLS).
    const bytes = enc.encode(r.body);
    const body = bytes.length
      ? new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(bytes);
          c.close();
        },
      })
      : null;
    return new Response(body, { status: r.status, headers: r.headers });
  };
}

const servers: Deno.HttpServer[] = [];
const lines: string[] = [];
for (let i = 0; i < n; i++) {
  const vendor = VENDORS[i % VENDORS.length]!;
  const cap = byVendor.get(vendor)!;
  const hostname = `127.0.0.${10 + (i % 16)}`;
  const cert = await certificates.selfSigned({ commonName: `bench-device-${i}`, hosts: [hostname] });
  const idPairs: Array<[string, string]> = cap.identity.map((s) => [s, variedIdentity(s, i)]);
  const reverse: Array<[string, string]> = idPairs.map(([a, b]) => [b, a]);
  // The address is known once listening; until then (never in practice) requests get a 503.
  let handle = (_req: Request, _info: Deno.ServeHandlerInfo<Deno.NetAddr>): Response | Promise<Response> =>
    new Response(null, { status: 503 });
  const server = Deno.serve({
    hostname,
    port: 0,
    cert: cert.certPem,
    key: cert.keyPem,
    onListen: () => {},
    onError: (e) => Response.json({ error: String(e) }, { status: 500 }),
  }, (req, info) => handle(req, info));
  const origin = `${hostname}:${server.addr.port}`;
  const subst: Array<[string, string]> = [...idPairs, [cap.origin, origin]];
  handle = handlerFor(cap, subst, reverse);
  servers.push(server);
  lines.push(JSON.stringify({
    type: "device",
    i,
    vendor,
    url: `https://${origin}`,
    fingerprint: cert.sha256,
    username: cap.credentials.username,
    password: cap.credentials.password,
    subst,
  }));
}
const enc2 = new TextEncoder();
const write = (s: string) => Deno.stdout.writeSync(enc2.encode(s + "\n"));
for (const l of lines) write(l);
write(JSON.stringify({ type: "ready", n, setupMs: Math.round(performance.now() - t0) }));

for await (const line of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
  for (const cmd of line.split("\n").map((s) => s.trim()).filter(Boolean)) {
    if (cmd === "stats") {
      write(JSON.stringify({ type: "stats", requests, connections: connections.size, unmatched }));
      requests = 0;
      unmatched = 0;
      connections.clear();
    }
  }
}
await Promise.all(servers.map((s) => s.shutdown()));
Deno.exit(0);
