/**
 * Connecting an adapter to a simulated device the way the poll cycle does.
 *
 * @module
 */
import type { AdapterDefinition, AdapterSession, TlsVerifyMode } from "../src/adapter.ts";
import { type ConnectTarget, openDeviceSession } from "../src/devices/connect.ts";
import type { DeviceHttp } from "../src/transport/types.ts";
import { SessionRegistry } from "../mod.ts";

/** An adapter session opened on a (simulated) device by {@link connectTo}. */
export interface ConnectedSim extends AsyncDisposable {
  /** The adapter's session, logged in. */
  session: AdapterSession;
  /** The transport the session speaks through, for requests of the test's own. */
  transport: DeviceHttp & {
    /** SHA-256 of the leaf certificate the device presented on the last connection. */
    readonly presentedCertSha256: string | null;
    /** The pin in force (set by trust on first use during this cycle, or the given one). */
    readonly pinnedCertSha256: string | null;
    /** Drop the transport's connections. */
    close(): void;
  };
  /** Park the session (or log out) and close the transport, as the poll cycle does. */
  close(): Promise<void>;
}

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
    signal?: AbortSignal;
  },
): Promise<ConnectedSim> {
  return openDeviceSession({
    adapter,
    device: testTarget(adapter, target, { ...opts, username: opts.credentials.username }),
    credentials: opts.credentials,
    credentialKey: opts.credentialKey ?? `${opts.credentials.username}:${opts.credentials.password.length}`,
    sessions: opts.sessions ?? new SessionRegistry(),
    signal: opts.signal,
  });
}
