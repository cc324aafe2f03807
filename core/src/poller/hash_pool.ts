/**
 * The poll cycle's hashing (`hashSnapshot`: RFC 8785 canonical JSON, SHA-256, the stable hash without the
 * volatile paths) on a small pool of Web Workers, off the event loop that runs the device sessions and the
 * database (`DUT_POLL_WORKERS`, docs/configuration.md; 0: in this thread). BENCHMARKS.md section 1x says
 * what it costs and saves.
 *
 * Workers start at the first poll that needs them and stop after {@link IDLE_MS} without work, or at
 * {@link HashPool.close}: an idle service holds no thread. A payload that cannot be sent to a worker
 * (structured clone refuses functions and symbols), or whose worker failed, is hashed in this thread, so the
 * results and errors are those of `hashSnapshot` either way.
 *
 * @module
 */
import { type HashedSnapshot, hashSnapshot } from "./hash.ts";

/** One payload to hash. */
export interface HashJob {
  label: string;
  payload: unknown;
  /** The label's volatile paths (null: no stable hash). */
  volatile: readonly string[] | null;
}

/** A message to a hash worker: one poll's payloads. */
export interface HashRequest {
  id: number;
  jobs: HashJob[];
}

/** A hash worker's answer: per payload, in order, its hashes or the message of the error it gave. */
export interface HashReply {
  id: number;
  results: Array<
    | { text: string; sha256: string; stableSha256: string | null; size: number; bytes: Uint8Array }
    | { error: string }
  >;
}

/** A pool's workers stop after this long without work. */
export const IDLE_MS = 5_000;

interface Pending {
  jobs: HashJob[];
  resolve(r: Array<HashedSnapshot | Error>): void;
}

interface Slot {
  worker: Worker;
  pending: Map<number, Pending>;
}

/** Hashes in this thread, as the poll cycle always did: per payload, what `hashSnapshot` returns or throws. */
function inProcess(jobs: HashJob[]): Promise<Array<HashedSnapshot | Error>> {
  return Promise.all(
    jobs.map((j) =>
      hashSnapshot(j.label, j.payload, j.volatile).catch((e) => e instanceof Error ? e : new Error(String(e)))
    ),
  );
}

/** A pool of `size` hash workers (0: everything is hashed in this thread). */
export class HashPool {
  #slots: Slot[] = [];
  #seq = 0;
  #idle: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  /** `size` workers at most, each stopped after `idleMs` without work. */
  constructor(readonly size: number, private idleMs = IDLE_MS) {}

  /** How many workers run now. */
  get running(): number {
    return this.#slots.length;
  }

  /** Hash one poll's payloads; per payload, in order, its {@link HashedSnapshot} or the error it gave. */
  hashAll(jobs: HashJob[]): Promise<Array<HashedSnapshot | Error>> {
    if (this.size === 0 || this.#closed || !jobs.length) return inProcess(jobs);
    const slot = this.#pick();
    const id = ++this.#seq;
    try {
      slot.worker.postMessage({ id, jobs } satisfies HashRequest);
    } catch {
      // DataCloneError: the payload is not plain data; this thread gives hashSnapshot's own answer.
      this.#settled();
      return inProcess(jobs);
    }
    clearTimeout(this.#idle);
    return new Promise((resolve) => slot.pending.set(id, { jobs, resolve }));
  }

  /** Stop the workers (shutdown); later polls hash in this thread. */
  close(): void {
    this.#closed = true;
    this.#stop();
  }

  /** The worker with the least work, starting one while the pool is not full. */
  #pick(): Slot {
    const free = this.#slots.find((s) => s.pending.size === 0);
    if (free) return free;
    if (this.#slots.length < this.size) return this.#start();
    return this.#slots.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
  }

  #start(): Slot {
    const worker = new Worker(new URL("./hash_worker.ts", import.meta.url), { type: "module" });
    const slot: Slot = { worker, pending: new Map() };
    worker.onmessage = ({ data }: MessageEvent<HashReply>) => {
      const p = slot.pending.get(data.id);
      if (!p) return;
      slot.pending.delete(data.id);
      p.resolve(p.jobs.map((j, i) => {
        const r = data.results[i];
        if (!r) return new Error("The hash worker returned no result for this payload");
        if ("error" in r) return new Error(r.error);
        return { label: j.label, payload: j.payload, ...r };
      }));
      this.#settled();
    };
    worker.onerror = (e) => {
      // A worker that failed (it never should): its work is done here, and the pool starts another.
      e.preventDefault();
      this.#slots = this.#slots.filter((s) => s !== slot);
      worker.terminate();
      const lost = [...slot.pending.values()];
      slot.pending.clear();
      for (const p of lost) void inProcess(p.jobs).then(p.resolve);
      this.#settled();
    };
    this.#slots.push(slot);
    return slot;
  }

  /** After a batch: with nothing in flight, stop the workers once the pool has been idle for a while. */
  #settled(): void {
    if (this.#slots.some((s) => s.pending.size > 0)) return;
    clearTimeout(this.#idle);
    this.#idle = setTimeout(() => this.#stop(), this.idleMs);
  }

  #stop(): void {
    clearTimeout(this.#idle);
    this.#idle = undefined;
    for (const s of this.#slots) {
      s.worker.terminate();
      for (const p of s.pending.values()) void inProcess(p.jobs).then(p.resolve);
    }
    this.#slots = [];
  }
}
