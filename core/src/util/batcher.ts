/**
 * Coalesces calls into batches: the first call is sent at once (after the current turn of the event
 * loop, so calls made together go together); calls made while a batch is in flight wait for it and go
 * as the next batch. Under load, one round trip serves many polls; alone, a call pays one round trip.
 * `send` answers each key of a batch in order; when it throws, every call of the batch gets the error.
 */
export class Batcher<K, T> {
  #pending: Array<{ key: K; resolve(v: T): void; reject(e: unknown): void }> = [];
  #busy = false;

  constructor(private send: (keys: K[]) => Promise<T[]>, private max = 1000) {}

  run(key: K): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ key, resolve, reject });
      if (this.#busy) return;
      this.#busy = true;
      queueMicrotask(() => this.#drain());
    });
  }

  async #drain(): Promise<void> {
    try {
      while (this.#pending.length) {
        const batch = this.#pending.splice(0, this.max);
        try {
          const out = await this.send(batch.map((b) => b.key));
          if (out.length !== batch.length) {
            throw new Error(`The batch sender returned ${out.length} results for ${batch.length} keys`);
          }
          batch.forEach((b, i) => b.resolve(out[i] as T)); // in range: as many results as keys
        } catch (e) {
          for (const b of batch) b.reject(e);
        }
      }
    } finally {
      this.#busy = false;
    }
  }
}
