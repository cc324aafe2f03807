/**
 * Connecting an adapter to a simulated device the way the poll cycle does.
 *
 * @module
 */
import type { AdapterDefinition, TlsVerifyMode } from "../src/adapter.ts";
import { type ConnectedDevice, type ConnectTarget, openDeviceSession } from "../src/devices/connect.ts";
import { SessionRegistry } from "../src/devices/sessions.ts";
import type { TransportLimits } from "../src/transport/transport.ts";

/** The test device the kit connects to, as the device room's session lifecycle takes it. */
export function testTarget(
  adapter: AdapterDefinition,
  target: { url: string },
  opts: {
    username: string;
    deviceId?: string;
    hostname?: string;
    tlsVerifyMode?: TlsVerifyMode;
    pinnedCertSha256?: string | null;
  },
): ConnectTarget {
  return {
    id: opts.deviceId ?? "00000000-0000-4000-8000-000000000001",
    hostname: opts.hostname ?? "sim-device",
    vendor: adapter.vendorKey,
    deviceRole: adapter.deviceRoles[0] ?? null,
    baseUrl: target.url,
    username: opts.username,
    tlsVerifyMode: opts.tlsVerifyMode ?? "insecure",
    pinnedCertSha256: opts.pinnedCertSha256 ?? null,
  };
}

/** Connect an adapter to a simulated device the way the poll cycle does (`openDeviceSession`). */
export function connectTo(
  adapter: AdapterDefinition,
  target: { url: string },
  opts: {
    credentials: { username: string; password: string };
    sessions?: SessionRegistry;
    deviceId?: string;
    tlsVerifyMode?: TlsVerifyMode;
    pinnedCertSha256?: string | null;
    credentialKey?: string;
    hostname?: string;
    limits?: TransportLimits;
    signal?: AbortSignal;
  },
): Promise<ConnectedDevice> {
  return openDeviceSession({
    adapter,
    device: testTarget(adapter, target, { ...opts, username: opts.credentials.username }),
    credentials: opts.credentials,
    credentialKey: opts.credentialKey ?? `${opts.credentials.username}:${opts.credentials.password.length}`,
    sessions: opts.sessions ?? new SessionRegistry(),
    limits: opts.limits,
    signal: opts.signal,
  });
}
