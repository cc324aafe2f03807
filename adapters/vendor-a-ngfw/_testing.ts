// Test-only helpers. `@dutlab/core/testing` takes a core `SessionRegistry` in `pollOnce`/`connectTo` but
// does not export the class, so this file provides a stand-in with the same behaviour (scope by device
// and credential key, TTL, take/takeStale). Remove it once core exports `SessionRegistry` from testing.
import type { SessionStore } from "@dutlab/core";
import type { pollOnce } from "@dutlab/core/testing";

/** The registry type `pollOnce`/`connectTo` expect. */
export type Registry = Parameters<typeof pollOnce>[2];

interface Parked {
  key: string;
  value: unknown;
  expiresAt: number;
}

class TestSessionRegistry {
  #byDevice = new Map<string, Parked>();

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

  takeStale(deviceId: string, credentialKey: string): unknown | undefined {
    const p = this.#byDevice.get(deviceId);
    if (!p || p.key === `${deviceId}:${credentialKey}`) return undefined;
    this.#byDevice.delete(deviceId);
    return p.expiresAt > Date.now() ? p.value : undefined;
  }

  take(deviceId: string): unknown | undefined {
    const p = this.#byDevice.get(deviceId);
    this.#byDevice.delete(deviceId);
    return p && p.expiresAt > Date.now() ? p.value : undefined;
  }

  /** What is parked for a device, without removing it (tests only). */
  peek(deviceId: string): unknown | undefined {
    return this.#byDevice.get(deviceId)?.value;
  }

  deviceIds(): string[] {
    return [...this.#byDevice.keys()];
  }
}

/** A fresh session registry usable with `pollOnce`, `connectTo` and `releaseParked`. */
export function newRegistry(): Registry & { peek(deviceId: string): unknown } {
  return new TestSessionRegistry() as unknown as Registry & { peek(deviceId: string): unknown };
}

/** The device id `connectTo` uses by default. */
export const TEST_DEVICE_ID = "00000000-0000-4000-8000-000000000001";
