import type { AdapterDefinition, AdapterDevice, AdapterSession } from "./adapter.ts";
import { DeviceError } from "./errors.ts";
import { logger } from "./log.ts";
import type { SessionRegistry } from "./sessions.ts";
import {
  DEFAULT_LIMITS,
  type DeviceTransport,
  openTransport,
  type TransportLimits,
} from "./transport/transport.ts";

/** A device as the connection layer needs it. */
export interface ConnectTarget extends AdapterDevice {
  pinnedCertSha256: string | null;
}

export interface ConnectOptions {
  adapter: AdapterDefinition;
  device: ConnectTarget;
  credentials: { username: string; password: string };
  /** Fingerprint of the stored credential (not the secret), to scope parked sessions. */
  credentialKey: string;
  sessions: SessionRegistry;
  limits?: TransportLimits;
  signal?: AbortSignal;
  onPin?(sha256: string): Promise<void> | void;
}

/** An adapter session bound to its transport; `close()` ends the session and drops the connections. */
export interface ConnectedDevice extends AsyncDisposable {
  session: AdapterSession;
  transport: DeviceTransport;
  close(): Promise<void>;
}

/** Wrap unexpected adapter exceptions so a device fault is always classified. */
export function asDeviceError(err: unknown): DeviceError {
  if (err instanceof DeviceError) return err;
  const msg = err instanceof Error ? err.message : String(err);
  return new DeviceError("adapter_error", `Adapter failed: ${msg}`, { cause: err });
}

/**
 * Open an adapter session for one device over the core transport. Used by the poll cycle, the
 * connection test and adapter tests alike.
 */
export async function connectDevice(opts: ConnectOptions): Promise<ConnectedDevice> {
  const { adapter, device } = opts;
  const log = logger("adapter", adapter.vendorKey);
  const transport = openTransport(
    {
      baseUrl: device.baseUrl,
      tlsVerifyMode: device.tlsVerifyMode,
      pinnedCertSha256: device.pinnedCertSha256,
    },
    opts.limits ?? DEFAULT_LIMITS,
    { onPin: opts.onPin, signal: opts.signal },
  );
  const stale = opts.sessions.takeStale(device.id, opts.credentialKey);
  const base = {
    device: {
      id: device.id,
      hostname: device.hostname,
      vendor: device.vendor,
      deviceRole: device.deviceRole,
      baseUrl: device.baseUrl,
      username: device.username,
      tlsVerifyMode: device.tlsVerifyMode,
    },
    http: transport,
    sessions: opts.sessions.scope(device.id, opts.credentialKey),
    log,
    signal: opts.signal ?? new AbortController().signal,
  };
  if (stale !== undefined && adapter.release) {
    await adapter.release(base, stale).catch((e) =>
      log.warn("Could not log out a stale session: {error}", { error: String(e) })
    );
  }
  const session = adapter.create({ ...base, credentials: Object.freeze({ ...opts.credentials }) });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    try {
      await session.close();
    } catch (e) {
      log.warn("Logout from {hostname} failed: {error}", { hostname: device.hostname, error: String(e) });
    } finally {
      transport.close();
    }
  };
  return { session, transport, close, [Symbol.asyncDispose]: close };
}
