/**
 * Capture what each real adapter exchanges with its real simulator (adapters/<vendor>/sim.ts): the
 * adapter polls the simulator through a recording HTTPS proxy, so the benchmark knows every request,
 * every response and the collected snapshots of one genuine poll per vendor.
 *
 * @module
 */
import { SessionRegistry } from "@dutlab/core";
import { certificates, connectTo } from "@dutlab/core/testing";
import type { AdapterDefinition, CollectedSnapshot } from "../core/harness/core.ts";
import { modules } from "../modules.gen.ts";
import * as ngfw from "@dutlab/adapter-vendor-a-ngfw/sim";
import * as nxSwitch from "@dutlab/adapter-vendor-a-switch/sim";
import * as bmc from "@dutlab/adapter-vendor-a-bmc/sim";
import * as fgt from "@dutlab/adapter-vendor-b-ngfw/sim";

/** One request and its answer, as the adapter sent it and the simulator gave it. */
export interface Exchange {
  method: string;
  /** Path with query string. */
  path: string;
  reqHeaders: Record<string, string>;
  reqBody: string;
  status: number;
  resHeaders: Array<[string, string]>;
  resBody: string;
  /** Sent while an earlier request of the same batch was still in flight (the adapter fetched in parallel). */
  batch: number;
}

/** One genuine poll of one vendor's simulator. */
export interface VendorCapture {
  vendor: string;
  credentials: { username: string; password: string };
  /** `host:port` the capture proxy listened on (it appears in some bodies, e.g. paging links). */
  origin: string;
  /** Strings that identify the device (serial, hostname, UUID); the farm varies them per device. */
  identity: string[];
  exchanges: Exchange[];
  snapshots: CollectedSnapshot[];
}

export const VENDORS = ["vendor-a-ngfw", "vendor-a-switch", "vendor-a-bmc", "vendor-b-ngfw"] as const;

const SIMS: Record<
  string,
  { startSimulatedDevice(): Promise<ngfw.VendorSim | nxSwitch.VendorSim | bmc.VendorSim | fgt.VendorSim> }
> = {
  "vendor-a-ngfw": ngfw,
  "vendor-a-switch": nxSwitch,
  "vendor-a-bmc": bmc,
  "vendor-b-ngfw": fgt,
};

export function realAdapter(vendor: string): AdapterDefinition {
  const m = modules.adapters.find((a) => (a.module as AdapterDefinition).vendorKey === vendor);
  if (!m) throw new Error(`No adapter for "${vendor}" in modules.gen.ts`);
  return m.module as AdapterDefinition;
}

function identityOf(vendor: string, snapshots: CollectedSnapshot[]): string[] {
  // deno-lint-ignore no-explicit-any
  const sys = snapshots.find((s) => s.label === "system_info")?.payload as any;
  const ids: unknown[] = vendor === "vendor-a-ngfw"
    ? [sys?.applianceUuid, sys?.serialNumber]
    : vendor === "vendor-a-switch"
    ? [
      sys?.topSystem?.imdata?.[0]?.topSystem?.attributes?.serial,
      sys?.topSystem?.imdata?.[0]?.topSystem?.attributes?.name,
    ]
    : vendor === "vendor-a-bmc"
    ? [sys?.SerialNumber, sys?.UUID]
    : [sys?.serial, sys?.results?.hostname];
  return ids.filter((s): s is string => typeof s === "string" && s.length >= 6);
}

/** Poll each vendor's real simulator once with its real adapter, recording the exchange. */
export async function captureVendors(): Promise<VendorCapture[]> {
  const out: VendorCapture[] = [];
  for (const vendor of VENDORS) {
    const dev = await SIMS[vendor]!.startSimulatedDevice();
    const client = Deno.createHttpClient({ caCerts: [dev.sim.certificate.certPem] });
    const cert = await certificates.selfSigned({ commonName: "capture-proxy" });
    const exchanges: Exchange[] = [];
    const timing: Array<{ arrive: number; done: number }> = [];
    const proxy = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      cert: cert.certPem,
      key: cert.keyPem,
      onListen: () => {},
    }, async (req) => {
      const arrive = performance.now();
      const url = new URL(req.url);
      const reqBody = req.body ? await req.text() : "";
      const reqHeaders: Record<string, string> = {};
      for (const [k, v] of req.headers) {
        if (!["host", "content-length", "connection"].includes(k)) reqHeaders[k] = v;
      }
      const res = await fetch(`${dev.sim.url}${url.pathname}${url.search}`, {
        method: req.method,
        headers: reqHeaders,
        body: reqBody || undefined,
        client,
      });
      const resBody = await res.text();
      const resHeaders: Array<[string, string]> = [];
      for (const [k, v] of res.headers) {
        if (!["content-length", "date", "transfer-encoding", "connection"].includes(k)) {
          resHeaders.push([k, v]);
        }
      }
      timing.push({ arrive, done: performance.now() });
      exchanges.push({
        batch: 0,
        method: req.method,
        path: url.pathname + url.search,
        reqHeaders,
        reqBody,
        status: res.status,
        resHeaders,
        resBody,
      });
      const nullBody = res.status === 204 || res.status === 304 || resBody === "";
      return new Response(nullBody ? null : resBody, { status: res.status, headers: resHeaders });
    });
    const origin = `127.0.0.1:${proxy.addr.port}`;
    try {
      const adapter = realAdapter(vendor);
      const conn = await connectTo(adapter, { url: `https://${origin}` }, {
        credentials: dev.credentials,
        sessions: new SessionRegistry(),
      });
      let snapshots: CollectedSnapshot[];
      try {
        snapshots = await conn.session.collectAll();
      } finally {
        await conn.close();
      }
      // Requests that overlap in time form one batch (sent in parallel by the adapter); keep arrival order.
      const order = timing.map((t, k) => ({ ...t, k })).sort((a, b) => a.arrive - b.arrive);
      let batch = 0;
      let batchEnd = -Infinity;
      for (const t of order) {
        if (t.arrive >= batchEnd) {
          batch++;
          batchEnd = t.done;
        } else batchEnd = Math.max(batchEnd, t.done);
        exchanges[t.k]!.batch = batch;
      }
      const inOrder = order.map((t) => exchanges[t.k]!);
      out.push({
        vendor,
        credentials: dev.credentials,
        origin,
        identity: identityOf(vendor, snapshots),
        exchanges: inOrder,
        snapshots,
      });
    } finally {
      await proxy.shutdown();
      client.close();
      await dev.close();
    }
  }
  return out;
}

/** Same-length replacement of an identity string for device `i` (decimal digits keep hex fields hex). */
export function variedIdentity(s: string, i: number): string {
  const tail = String(i).padStart(6, "0");
  return s.slice(0, s.length - tail.length) + tail;
}

/** Apply `[from, to]` pairs to a string. */
export function substitute(s: string, pairs: Array<[string, string]>): string {
  for (const [a, b] of pairs) if (s.includes(a)) s = s.replaceAll(a, b);
  return s;
}
