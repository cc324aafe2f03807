import type { SessionStore } from "../adapter.ts";

interface Parked {
  key: string;
  value: unknown;
  expiresAt: number;
}

/**
 * Process-local parking of adapter login state (tokens, cookies; never passwords) between polls.
 * Scoped by device id and a credential fingerprint, so rotating a password starts a new session.
 * Adapter tests that drive their own cycles take one from the kit (`connectTo(adapter, sim, { credentials, sessions })`).
 *
 * @example
 * ```ts
 * import { SessionRegistry } from "@dutlab/core";
 * const sessions = new SessionRegistry();
 * ```
 */
export class SessionRegistry {
  #byDevice = new Map<string, Parked>();

  /** A store scoped to one device and credential fingerprint. */
  scope(deviceId: string, credentialKey: string): SessionStore {
    const key = `${deviceId}:${credentialKey}`;
    return {
      get: <T>() => {
        const p = this.#byDevice.get(deviceId);
        if (!p || p.key !== key || p.expiresAt <= Date.now()) return undefined;
        return p.value as T;
      },
      set: <T>(value: T, ttlMs: number) => {
        this.#byDevice.set(deviceId, { key, value, expiresAt: Date.now() + ttlMs });
      },
      clear: () => {
        if (this.#byDevice.get(deviceId)?.key === key) this.#byDevice.delete(deviceId);
      },
    };
  }

  /** Parked state under another credential than `credentialKey` (to be logged out), removed from the registry. */
  takeStale(deviceId: string, credentialKey: string): unknown | undefined {
    const p = this.#byDevice.get(deviceId);
    if (!p || p.key === `${deviceId}:${credentialKey}`) return undefined;
    this.#byDevice.delete(deviceId);
    return p.expiresAt > Date.now() ? p.value : undefined;
  }

  /** Remove and return the parked state of a device (for logout on delete or shutdown). */
  take(deviceId: string): unknown | undefined {
    const p = this.#byDevice.get(deviceId);
    this.#byDevice.delete(deviceId);
    return p && p.expiresAt > Date.now() ? p.value : undefined;
  }

  /** The parked state of a device, without removing it (tests and diagnostics). */
  peek(deviceId: string): unknown | undefined {
    const p = this.#byDevice.get(deviceId);
    return p && p.expiresAt > Date.now() ? p.value : undefined;
  }

  /** Ids of the devices with a parked state (expired ones included until taken). */
  deviceIds(): string[] {
    return [...this.#byDevice.keys()];
  }
}
