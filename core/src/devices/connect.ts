import type { AdapterDefinition, AdapterDevice, AdapterSession } from "../adapter.ts";
import { DeviceError } from "../errors.ts";
import { logger } from "../util/log.ts";
import { SessionRegistry } from "./sessions.ts";
import {
  DEFAULT_LIMITS,
  type DeviceTransport,
  openTransport,
  type TransportLimits,
} from "../transport/transport.ts";
import type { ConnectionPool } from "../transport/pool.ts";

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
  /** Keep-alive connections kept between the sessions of a device (between polls). */
  pool?: ConnectionPool;
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

/** The device as an adapter sees it: everything but the pin, which only the transport uses. */
function adapterView(device: ConnectTarget): AdapterDevice {
  return {
    id: device.id,
    hostname: device.hostname,
    vendor: device.vendor,
    deviceRole: device.deviceRole,
    baseUrl: device.baseUrl,
    username: device.username,
    tlsVerifyMode: device.tlsVerifyMode,
  };
}

/** The core transport to a device, with its TLS mode and pin, for one session or one logout. */
function transportTo(
  device: ConnectTarget,
  limits: TransportLimits | undefined,
  opts: Parameters<typeof openTransport>[2],
): DeviceTransport {
  return openTransport(
    {
      baseUrl: device.baseUrl,
      tlsVerifyMode: device.tlsVerifyMode,
      pinnedCertSha256: device.pinnedCertSha256,
    },
    limits ?? DEFAULT_LIMITS,
    opts,
  );
}

/**
 * Open an adapter session for one device over the core transport: one half of the device session
 * lifecycle ({@link releaseDeviceSession} is the other). The poll cycle and the connection test open
 * through `DeviceStore.connect`, the adapter contract kit through `connectTo`; all end here. A session
 * the adapter parked under another credential (a rotated password) is logged out first.
 */
export async function openDeviceSession(opts: ConnectOptions): Promise<ConnectedDevice> {
  const { adapter, device } = opts;
  const log = logger("adapter", adapter.vendorKey);
  const transport = transportTo(device, opts.limits, {
    onPin: opts.onPin,
    signal: opts.signal,
    pool: opts.pool,
  });
  const stale = opts.sessions.takeStale(device.id, opts.credentialKey);
  const base = {
    device: adapterView(device),
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

/** What {@link releaseDeviceSession} needs: the device, its adapter and where its session is parked. */
export interface ReleaseOptions {
  /** The device's adapter; none (a vendor without an enabled adapter): the parked state is only dropped. */
  adapter: AdapterDefinition | undefined;
  device: ConnectTarget;
  sessions: SessionRegistry;
  limits?: TransportLimits;
  /** Bound of the logout, connection included (default 10 s). */
  timeoutMs?: number;
}

/**
 * Log out the session an adapter parked for a device between polls, and remove it from the registry: the
 * other half of the device session lifecycle ({@link openDeviceSession}). Used when a device is deleted or
 * its credential or URL changes (the device store), at shutdown (`DeviceStore.releaseAllParked`) and by the
 * adapter contract kit. Best effort: a device that cannot be reached must not block a delete or a
 * shutdown, so it never throws; the error, if any, is logged and returned.
 */
export async function releaseDeviceSession(opts: ReleaseOptions): Promise<{ error?: unknown }> {
  const { adapter, device } = opts;
  const parked = opts.sessions.take(device.id);
  if (parked === undefined || !adapter?.release) return {};
  const log = logger("sessions");
  const signal = AbortSignal.timeout(opts.timeoutMs ?? 10_000);
  let transport: DeviceTransport | undefined;
  try {
    // Inside the try: callers run this in the background, where a throw would be an unhandled rejection.
    transport = transportTo(device, opts.limits, { signal });
    await adapter.release({
      device: adapterView(device),
      http: transport,
      // A scope of its own: what a release might park is dropped with it, never reused by a poll.
      sessions: new SessionRegistry().scope(device.id, "release"),
      log,
      signal,
    }, parked);
    return {};
  } catch (error) {
    log.warn("Could not log out the parked session of {hostname}: {error}", {
      hostname: device.hostname,
      error: String(error),
    });
    return { error };
  } finally {
    transport?.close();
  }
}
