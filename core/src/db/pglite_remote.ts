/**
 * PGlite off the event loop (`DUT_PGLITE_WORKER=on`): the embedded database runs in a Web Worker
 * (pglite_worker.ts) and the main thread holds a stand-in with the members Kysely's `PGliteDialect` uses
 * (`query`, `transaction`, `waitReady`, `ready`, `closed`, `close`). Each statement is one message; a
 * transaction's statements go to the worker in order, inside the worker's PGlite transaction, which holds the
 * single session until the stand-in commits or rolls back. Errors come back with their own properties
 * (SQLSTATE `code`, `detail`, `constraint`, …), so the callers' error mapping is unchanged.
 *
 * PGlite's own `PGliteWorker` is not used: it elects a leader with `navigator.locks` and `BroadcastChannel`
 * across browser tabs, which this single-process service does not need.
 *
 * @module
 */
import type { PGlite } from "@electric-sql/pglite";
import type { Reply, Request } from "./pglite_worker.ts";

/**
 * PGlite's buffer pool unless configured (`DUT_PGLITE_SHARED_BUFFERS`); see BENCHMARKS.md sections 7 and 7x:
 * 16MB instead of 32MB keeps 16 MiB less resident for the process's life (the pool is zeroed, hence touched,
 * at open); ingest ran at the same rate, 8MB was a quarter slower.
 */
export const PGLITE_SHARED_BUFFERS = "16MB";

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
type Results = { rows: unknown[]; affectedRows?: number; fields: { name: string; dataTypeID: number }[] };

/** PGlite in a worker, as the main thread sees it. */
export interface RemotePglite {
  /** What `PGliteDialect` is given. */
  pglite: PGlite;
  /** LISTEN on `channel` in the worker; each notification reaches `onNotify` before the answer that follows it. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<void>;
  dumpDataDir(compression: "none" | "gzip"): Promise<Blob>;
  /**
   * A full garbage collection of the worker's heap, with the heap's bytes in use before and after (absent for
   * PGlite in this thread, which the idle reclaimer collects anyway).
   */
  reclaim?(): Promise<{ before: number; after: number }>;
  close(): Promise<void>;
}

/** Starts the worker and opens PGlite in it. */
export async function openRemotePglite(
  opts: { dataDir?: string; loadDataDir?: Blob; sharedBuffers: string; fromTemplate?: boolean },
): Promise<RemotePglite> {
  const worker = new Worker(new URL("./pglite_worker.ts", import.meta.url).href, { type: "module" });
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  let seq = 0;
  let txSeq = 0;
  let closed = false;
  let failure: Error | undefined;
  const listeners = new Map<string, (payload: string) => void>();
  worker.onmessage = (ev: MessageEvent<Reply>) => {
    const r = ev.data;
    if (r.id === undefined) return listeners.get(r.channel)?.(r.payload);
    const p = pending.get(r.id);
    if (!p) return;
    pending.delete(r.id);
    if (r.ok) p.resolve(r.value);
    else {
      const { message, stack: _stack, ...props } = r.error;
      p.reject(Object.assign(new Error(String(message)), props));
    }
  };
  worker.onerror = (ev: ErrorEvent) => {
    ev.preventDefault();
    failure = new Error(`The PGlite worker failed: ${ev.message}`);
    for (const p of pending.values()) p.reject(failure);
    pending.clear();
  };
  const call = (r: DistributiveOmit<Request, "id">): Promise<unknown> => {
    if (failure) return Promise.reject(failure);
    if (closed && r.op !== "close") return Promise.reject(new Error("PGlite is closed"));
    const id = ++seq;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      worker.postMessage({ ...r, id } as Request);
    });
  };
  const query = (tx: number | undefined) => (text: string, params: unknown[] = []) =>
    call({ op: "query", text, params, ...(tx === undefined ? {} : { tx }) }) as Promise<Results>;
  const close = async () => {
    if (closed) return;
    closed = true;
    try {
      await call({ op: "close" });
    } finally {
      worker.terminate();
    }
  };
  try {
    await call({ op: "open", ...opts });
  } catch (e) {
    worker.terminate();
    throw e;
  }
  const stand = {
    ready: true,
    waitReady: Promise.resolve(),
    get closed() {
      return closed;
    },
    query: query(undefined),
    async transaction<T>(fn: (tx: unknown) => Promise<T>): Promise<T> {
      // BEGIN is not waited for: the statements that follow wait for it in the worker, one round trip fewer.
      const id = ++txSeq;
      const begun = call({ op: "begin", tx: id });
      begun.catch(() => {}); // surfaced below, and to the statements
      let done = false;
      const tx = {
        query: query(id),
        get closed() {
          return done;
        },
      };
      let value: T;
      try {
        value = await fn(tx);
        await begun; // a failed BEGIN fails the transaction, even one that sent no statement
      } catch (e) {
        done = true;
        await call({ op: "end", tx: id, commit: false }).catch(() => {});
        throw e;
      }
      done = true;
      await call({ op: "end", tx: id, commit: true });
      return value;
    },
    close,
  };
  return {
    pglite: stand as unknown as PGlite,
    async listen(channel, onNotify) {
      listeners.set(channel, onNotify);
      await call({ op: "listen", channel });
    },
    dumpDataDir: (compression) => call({ op: "dump", compression }) as Promise<Blob>,
    reclaim: () => call({ op: "reclaim" }) as Promise<{ before: number; after: number }>,
    close,
  };
}
