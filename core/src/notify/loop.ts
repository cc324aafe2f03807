/**
 * The claim loop of an outbox worker: every `pollMs` (or at once when an item finished) it claims what is due,
 * up to `concurrency` in flight, and handles each claimed item on its own, so a slow receiver holds only its
 * own item. The webhook delivery worker (worker.ts) and NetBox's journal write-back (netbox/journal_worker.ts)
 * are its two users; each brings its claim (a short transaction: FOR UPDATE SKIP LOCKED and a lease) and what
 * it does with an item.
 */
import { logger } from "../util/log.ts";

/** The delay before attempt `n + 1` after `n` failed ones: full jitter over min(max, base·2^(n-1)). */
export function backoffMs(n: number, base: number, max: number, random = Math.random): number {
  const ceiling = Math.min(max, base * 2 ** Math.max(0, n - 1));
  return Math.round(ceiling / 2 + random() * ceiling / 2);
}

export abstract class ClaimLoop<T> {
  #inflight = new Set<Promise<void>>();
  #stopped = true;
  #loop: Promise<void> | undefined;
  #wakeUp: (() => void) | undefined;
  #woken = false;

  /** `name` names the worker in its log lines. */
  constructor(
    private readonly name: string,
    private readonly loop: { pollMs: number; concurrency: number },
  ) {}

  /** Claim at most `room` due items (leased to this instance). */
  protected abstract claim(room: number): Promise<T[]>;
  /** Handle one claimed item (send and record). */
  protected abstract handle(item: T): Promise<void>;

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    const log = logger(this.name);
    this.#loop = (async () => {
      while (!this.#stopped) {
        await this.tick().catch((e) => log.warn("Tick failed: {error}", { error: String(e) }));
        if (!this.#stopped) await this.#sleep(this.loop.pollMs);
      }
    })();
  }

  /** Stop claiming; wait for the items in flight (each bounded by its call's time limit). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake();
    await this.#loop;
    await Promise.all([...this.#inflight]);
  }

  /** Sleep until `ms` passed or an item finished (what it held back can go at once). */
  #sleep(ms: number): Promise<void> {
    if (this.#woken) {
      this.#woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.#wakeUp = done;
    });
  }

  #wake(): void {
    if (this.#wakeUp) {
      const w = this.#wakeUp;
      this.#wakeUp = undefined;
      w();
    } else this.#woken = true;
  }

  /** Claim what is due and start handling it; returns once claimed (not once handled). */
  async tick(): Promise<number> {
    const room = this.loop.concurrency - this.#inflight.size;
    if (room <= 0) return 0;
    const claimed = await this.claim(room);
    for (const c of claimed) {
      const p = this.handle(c).catch((e) =>
        logger(this.name).warn("An item failed to record: {error}", { error: String(e) })
      ).finally(() => {
        this.#inflight.delete(p);
        this.#wake();
      });
      this.#inflight.add(p);
    }
    return claimed.length;
  }

  /** Wait until nothing is in flight (tests). */
  async idle(): Promise<void> {
    await Promise.all([...this.#inflight]);
  }
}
