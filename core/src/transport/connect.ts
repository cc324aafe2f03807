/**
 * The connection factory of the device transport: where a connection may go (every resolved address checked
 * against `DUT_DEVICE_NETWORKS`, transport/networks.ts), the TLS connection to one of the admitted addresses,
 * and the certificate check before the HTTP layer gets the socket (docs/devices.md "TLS modes").
 *
 * @module
 */
import tls from "node:tls";
import { DeviceError } from "../errors.ts";
import type { TlsVerifyMode } from "./types.ts";
import { sha256Hex } from "../util/hash.ts";
import { classifyNetworkError } from "./errors.ts";
import { addressRefusal, parseIp, type ResolvedAddress, systemLookup, UNLISTED } from "./networks.ts";
import type { TransportHooks, TransportLimits, TransportTarget } from "./options.ts";

export function isIp(host: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.includes(":");
}

/** Where a transport connects: parsed once from the device's base URL. */
export interface Endpoint {
  base: URL;
  host: string;
  port: number;
  basePath: string;
  /** `host:port` as shown in messages. */
  where: string;
}

/** The certificate state of one transport: the pin in force and the last presented leaf's hash. */
export interface CertState {
  pin: string | null;
  presented: string | null;
}

/** Check the leaf certificate a device presented: record its hash; pin it or compare with the pin. */
async function verifyPeer(
  socket: tls.TLSSocket,
  ep: Endpoint,
  mode: TlsVerifyMode,
  cert: CertState,
  hooks: TransportHooks,
): Promise<void> {
  const raw = socket.getPeerCertificate(false)?.raw as Uint8Array | undefined;
  if (!raw) throw new DeviceError("tls_error", `${ep.where} presented no certificate`);
  const presented = await sha256Hex(new Uint8Array(raw));
  cert.presented = presented;
  if (mode !== "self-signed") return;
  if (cert.pin === null) {
    cert.pin = presented;
    await hooks.onPin?.(presented);
  } else if (presented !== cert.pin) {
    throw new DeviceError(
      "tls_error",
      `Certificate of ${ep.where} changed: presented sha256 ${presented}, pinned ${cert.pin}; ` +
        `clear the pinned hash to accept the new certificate`,
    );
  }
}

/**
 * Open a TLS connection to the device (trust store and hostname check in `strict` mode, plus
 * `extraCa`) and hand it to `cb` only once its certificate passed `verifyPeer`.
 */
export function connectVerified(
  ep: Endpoint,
  target: TransportTarget,
  limits: TransportLimits,
  cert: CertState,
  hooks: TransportHooks,
  cb?: (err: Error | null, socket?: tls.TLSSocket) => void,
): void {
  let done = false;
  const finish = (err: Error | null, s?: tls.TLSSocket) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    cb?.(err, s);
  };
  let socket: tls.TLSSocket | undefined;
  const timer = setTimeout(() => {
    socket?.destroy();
    finish(
      new DeviceError("timeout", `Timed out after ${limits.connectTimeoutMs} ms connecting to ${ep.where}`),
    );
  }, limits.connectTimeoutMs);
  allowedAddresses(ep, limits).then((addresses) => {
    if (done) return;
    socket = openSocket(ep, target, limits, addresses);
    watchSocket(socket, ep, target, cert, hooks, finish);
  }, (err) => finish(classifyNetworkError(err, ep.where)));
}

/**
 * The addresses a connection to the device may use: its literal address, or every address its name resolves
 * to, each checked against `limits.networks` (issue 46 point 5). Those refused are left out; when none is
 * left, the connection is refused as `unreachable` before any socket is opened. The socket then connects
 * only to these (openSocket hands them to the TLS layer as its look-up), so the name is not resolved twice.
 */
async function allowedAddresses(ep: Endpoint, limits: TransportLimits): Promise<ResolvedAddress[]> {
  const networks = limits.networks ?? UNLISTED;
  const literal = parseIp(ep.host);
  const found: ResolvedAddress[] = literal
    ? [{ address: ep.host, family: literal.length === 4 ? 4 : 6 }]
    : await (limits.lookup ?? systemLookup)(ep.host);
  const refusals: string[] = [];
  const allowed = found.filter((a) => {
    const why = addressRefusal(networks, a.address, literal ? null : ep.host);
    if (why) refusals.push(why);
    return why === null;
  });
  if (!allowed.length) {
    throw new DeviceError(
      "unreachable",
      refusals.length
        ? `Refused to connect to ${ep.where}: ${refusals.join("; ")}`
        : `Cannot reach ${ep.where}: the name resolved to no address`,
    );
  }
  return allowed;
}

/** The TLS socket to the device, connecting only to `addresses` (already checked). */
function openSocket(
  ep: Endpoint,
  target: TransportTarget,
  limits: TransportLimits,
  addresses: ResolvedAddress[],
): tls.TLSSocket {
  const strict = target.tlsVerifyMode === "strict";
  return tls.connect({
    host: ep.host,
    port: ep.port,
    servername: strict && !isIp(ep.host) ? ep.host : undefined,
    rejectUnauthorized: strict,
    ca: strict && limits.extraCa?.length ? [...tls.rootCertificates, ...limits.extraCa] : undefined,
    ALPNProtocols: ["http/1.1"],
    // The checked addresses, never a second resolution of the name (which could answer otherwise).
    lookup: (
      _host: string,
      opts: { all?: boolean },
      cb: (err: Error | null, address: string | ResolvedAddress[], family?: number) => void,
    ) => opts.all ? cb(null, addresses) : cb(null, addresses[0]!.address, addresses[0]!.family),
  } as tls.ConnectionOptions);
}

/** Hand the socket to `finish` once its certificate passed `verifyPeer`, or its error. */
function watchSocket(
  socket: tls.TLSSocket,
  ep: Endpoint,
  target: TransportTarget,
  cert: CertState,
  hooks: TransportHooks,
  finish: (err: Error | null, s?: tls.TLSSocket) => void,
): void {
  socket.setNoDelay(true);
  socket.once("error", (err) => finish(classifyNetworkError(err, ep.where)));
  socket.once("secureConnect", () => {
    verifyPeer(socket, ep, target.tlsVerifyMode, cert, hooks).then(() => finish(null, socket), (err) => {
      socket.destroy();
      finish(err instanceof DeviceError ? err : classifyNetworkError(err, ep.where));
    });
  });
}
