/**
 * What a device transport is opened with: its limits, its device end and its hooks.
 *
 * @module
 */
import type { TlsVerifyMode } from "./types.ts";
import type { AddressLookup, DeviceNetworks } from "./networks.ts";
import type { ConnectionPool } from "./pool.ts";

/** Limits applied to every device connection. */
export interface TransportLimits {
  /** Time allowed to connect (TCP and TLS handshake), in ms. */
  connectTimeoutMs: number;
  /** Time allowed for one request's answer when the request sets no `timeoutMs`, in ms. */
  requestTimeoutMs: number;
  /** Largest response body accepted, in bytes. */
  maxResponseBytes: number;
  /** Deepest JSON nesting accepted in a response. */
  maxJsonDepth: number;
  /** Extra trusted CA certificates (PEM) for `strict` mode, added to the system store. */
  extraCa?: string[];
  /**
   * Where connections may go (`DUT_DEVICE_NETWORKS`, transport/networks.ts); default {@link UNLISTED}: every
   * address but the unspecified, link-local and cloud metadata ones. Checked on the resolved address.
   */
  networks?: DeviceNetworks;
  /** How a device's host name is resolved (default: the system resolver); tests inject a stub. */
  lookup?: AddressLookup;
}

/** The device end of a transport. */
export interface TransportTarget {
  baseUrl: string;
  tlsVerifyMode: TlsVerifyMode;
  pinnedCertSha256: string | null;
}

export interface TransportHooks {
  /** Called once when a `self-signed` device presents its first certificate (trust on first use). */
  onPin?(sha256: string): Promise<void> | void;
  signal?: AbortSignal;
  /** Keep-alive connections kept between transports of the same device (between polls). */
  pool?: ConnectionPool;
}
