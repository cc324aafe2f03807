import type https from "node:https";

/** How long a device's idle keep-alive connections are kept between two polls, in ms. */
export const DEFAULT_IDLE_MS = 45_000;

/** A keep-alive agent parked between polls, with the certificate its connections presented. */
export interface ParkedAgent {
  agent: https.Agent;
  presented: string | null;
}

interface Entry extends ParkedAgent {
  timer: ReturnType<typeof setTimeout>;
}

/**
 * Keep-alive connections kept between polls, by endpoint, TLS mode, pin and limits (the key the
 * transport builds), for at most `idleMs` without use. A transport takes an agent for itself and
 * parks it again on `close()`, so one agent serves one transport at a time; its connections were
 * verified against the pin in the key when they were opened, and every new one still is.
 */
export class ConnectionPool {
  #idle = new Map<string, Entry>();

  constructor(readonly idleMs = DEFAULT_IDLE_MS) {}

  /** The parked agent of `key`, removed from the pool, if any. */
  take(key: string): ParkedAgent | undefined {
    const e = this.#idle.get(key);
    if (!e) return undefined;
    this.#idle.delete(key);
    clearTimeout(e.timer);
    return { agent: e.agent, presented: e.presented };
  }

  /**
   * Keep an agent's idle connections for the next transport of `key`. An agent without idle connections,
   * or with a request still under way (a transport closed before all its answers came), is destroyed.
   */
  park(key: string, parked: ParkedAgent): void {
    const { agent } = parked;
    const any = (m: NodeJS.Dict<unknown[]> | undefined) =>
      Object.values(m ?? {}).some((s) => (s?.length ?? 0) > 0);
    if (this.idleMs <= 0 || !any(agent.freeSockets) || any(agent.sockets) || any(agent.requests)) {
      return void agent.destroy();
    }
    this.take(key)?.agent.destroy();
    const timer = setTimeout(() => {
      if (this.#idle.get(key)?.agent === parked.agent) this.#idle.delete(key);
      parked.agent.destroy();
    }, this.idleMs);
    Deno.unrefTimer(timer as unknown as number);
    this.#idle.set(key, { ...parked, timer });
  }

  /** Number of parked agents (tests and diagnostics). */
  get size(): number {
    return this.#idle.size;
  }

  /** Drop every parked connection (shutdown). */
  closeAll(): void {
    for (const e of this.#idle.values()) {
      clearTimeout(e.timer);
      e.agent.destroy();
    }
    this.#idle.clear();
  }
}
