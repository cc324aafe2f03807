/**
 * The floor of the poll benchmark: the same HTTPS requests the adapters send (from the capture), sent by
 * a bare node:https client with the service's connection settings (one keep-alive agent per device and
 * cycle, at most 4 sockets, destroyed at the end; sockets from `tls.connect` with the transport's options)
 * and the worker's concurrency, without the service: no database, no adapter logic, no hashing, no pinning.
 * `--agent default` uses node:https's own connection factory instead (much slower in Deno 2.9: its TLS
 * session cache costs ~4 ms of CPU per connection).
 *
 * `deno run -A bench/_floor.ts --devices <farm-devices.jsonl> --captures <captures.json> --concurrency 64`
 *
 * @module
 */
import { parseArgs } from "node:util";
import https from "node:https";
import tls from "node:tls";
import process from "node:process";
import { Buffer } from "node:buffer";
import { substitute, type VendorCapture } from "./_capture.ts";
import { pct } from "./_util.ts";

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    devices: { type: "string" },
    captures: { type: "string" },
    concurrency: { type: "string", default: "64" },
    keepalive: { type: "string", default: "on" },
    agent: { type: "string", default: "bare" },
  },
});
interface FarmDevice {
  vendor: string;
  url: string;
  subst: Array<[string, string]>;
}
const devices: FarmDevice[] = (await Deno.readTextFile(args.devices!)).trim().split("\n").map((l) =>
  JSON.parse(l)
);
const captures: VendorCapture[] = JSON.parse(await Deno.readTextFile(args.captures!));
const byVendor = new Map(captures.map((c) => [c.vendor, c]));
const concurrency = Number(args.concurrency);
const keepAlive = args.keepalive !== "off";
const bareAgent = args.agent !== "default";

/** The transport's socket options (core/src/transport/transport.ts) without its certificate checks. */
class BareAgent extends https.Agent {
  // deno-lint-ignore no-explicit-any
  override createConnection(options: any): any {
    const socket = tls.connect({
      host: options.host,
      port: options.port,
      rejectUnauthorized: false,
      ALPNProtocols: ["http/1.1"],
    });
    socket.setNoDelay(true);
    return socket;
  }
}

function request(
  agent: https.Agent,
  host: string,
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const h = { ...headers };
    if (body) h["content-length"] = String(Buffer.byteLength(body));
    const r = https.request(
      { host, port, path, method, agent, headers: h, rejectUnauthorized: false },
      (res) => {
        let size = 0;
        res.on("data", (c: Uint8Array) => (size += c.length));
        res.on("end", () => resolve(size));
        res.on("error", reject);
      },
    );
    r.on("error", reject);
    if (body) r.write(body);
    r.end();
  });
}

async function pollDevice(d: FarmDevice): Promise<number> {
  const u = new URL(d.url);
  const cap = byVendor.get(d.vendor)!;
  const opts = { keepAlive, maxSockets: 4, rejectUnauthorized: false };
  const agent = bareAgent ? new BareAgent(opts) : new https.Agent(opts);
  let bytes = 0;
  try {
    // Batches in order; the requests of one batch in parallel, as the adapter sent them.
    const batches = new Map<number, VendorCapture["exchanges"]>();
    for (const x of cap.exchanges) batches.set(x.batch, [...(batches.get(x.batch) ?? []), x]);
    for (const batch of batches.values()) {
      const sizes = await Promise.all(
        batch.map((x) =>
          request(
            agent,
            u.hostname,
            Number(u.port),
            x.method,
            substitute(x.path, d.subst),
            x.reqHeaders,
            x.reqBody,
          )
        ),
      );
      for (const s of sizes) bytes += s;
    }
  } finally {
    agent.destroy();
  }
  return bytes;
}

const durations: number[] = [];
let failures = 0;
let bytes = 0;
const queue = [...devices];
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
  while (queue.length) {
    const d = queue.shift()!;
    const t = performance.now();
    try {
      const b = await pollDevice(d);
      bytes += b;
      durations.push(performance.now() - t);
    } catch {
      failures++;
    }
  }
}));
const wallMs = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
const cpuMs = (cpu.user + cpu.system) / 1000;
console.log(JSON.stringify({
  n: devices.length,
  concurrency,
  keepAlive,
  agent: bareAgent ? "bare" : "default",
  polled: durations.length,
  failures,
  bytes,
  wallMs,
  pollsPerSecond: durations.length / (wallMs / 1000),
  p50Ms: pct(durations, 50),
  p95Ms: pct(durations, 95),
  cpuMs,
  cpuMsPerPoll: cpuMs / Math.max(1, durations.length),
}));
