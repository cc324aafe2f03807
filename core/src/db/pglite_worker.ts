/**
 * The worker side of PGlite off the event loop (`DUT_PGLITE_WORKER=on`, see pglite_remote.ts): this Web Worker
 * hosts the PGlite instance (with the named statements of pglite_statements.ts) and answers the main thread's
 * messages: `open` (of a first start: after unpacking the template), `query` (inside a transaction when `tx`
 * is set), `begin`, `end` (commit or roll back), `listen`, `dump`, `reclaim` (a full garbage collection of
 * this worker's heap, which the main thread's idle reclaimer cannot reach: runtime/idle.ts) and `close`.
 * PGlite's own locks order the statements exactly as on the main thread. A notification on a channel listened
 * to is posted as it is heard, so before the answer to the statement that committed it.
 *
 * @module
 */
import { PGlite } from "@electric-sql/pglite";
import { withNamedStatements } from "./pglite_statements.ts";
import { NOTIFY_VERSIONS_PARAMS } from "./versions.ts";
import { fullGc } from "../util/gc.ts";

type Tx = Parameters<Parameters<PGlite["transaction"]>[0]>[0];

/** A message from the main thread. */
export type Request =
  | {
    id: number;
    op: "open";
    dataDir?: string;
    loadDataDir?: Blob;
    sharedBuffers: string;
    fromTemplate?: boolean;
  }
  | { id: number; op: "query"; text: string; params: unknown[]; tx?: number }
  | { id: number; op: "begin"; tx: number }
  | { id: number; op: "end"; tx: number; commit: boolean }
  | { id: number; op: "listen"; channel: string }
  | { id: number; op: "dump"; compression: "none" | "gzip" }
  | { id: number; op: "reclaim" }
  | { id: number; op: "close" };

/**
 * The answer to a request: its result, or the error's own properties (SQLSTATE code, detail, …); or a
 * notification heard on a channel listened to (no `id`).
 */
export type Reply = { id: number; ok: true; value: unknown } | {
  id: number;
  ok: false;
  error: Record<string, unknown>;
} | { id?: undefined; channel: string; payload: string };

/** An error as plain data: its message, name and every own property that can be cloned. */
function plain(e: unknown): Record<string, unknown> {
  if (!(e instanceof Error)) return { message: String(e) };
  const out: Record<string, unknown> = { message: e.message, name: e.name, stack: e.stack };
  for (const [k, v] of Object.entries(e)) {
    if (k === "queryOptions" || typeof v === "function") continue;
    try {
      structuredClone(v);
      out[k] = v;
    } catch { /* not cloneable: left out */ }
  }
  return out;
}

let raw: PGlite | undefined;
let pglite: PGlite | undefined;
const txs = new Map<number, { tx: Tx; end: (commit: boolean) => void }>();
/** BEGIN of each transaction until its `end`: its statements, sent without waiting for it, wait for it here. */
const begins = new Map<number, Promise<void>>();
const self_ = globalThis as unknown as {
  onmessage: (ev: MessageEvent<Request>) => void;
  postMessage: (m: Reply) => void;
  close: () => void;
};

async function handle(r: Request): Promise<unknown> {
  switch (r.op) {
    case "open": {
      // A first start opened early (runtime/early_open.ts): the shipped template unpacked here, off the main
      // thread, into `dataDir` (renamed into place when complete); without a template PGlite runs initdb.
      if (r.fromTemplate && r.dataDir) await (await import("./template.ts")).unpackTemplate(r.dataDir);
      const options = {
        ...(r.loadDataDir ? { loadDataDir: r.loadDataDir } : {}),
        startParams: [
          ...PGlite.defaultStartParams,
          "-c",
          `shared_buffers=${r.sharedBuffers}`,
          ...NOTIFY_VERSIONS_PARAMS,
        ],
      };
      raw = r.dataDir ? new PGlite(r.dataDir, options) : new PGlite(options);
      await raw.waitReady;
      pglite = withNamedStatements(raw);
      return null;
    }
    case "query": {
      if (r.tx !== undefined) await begins.get(r.tx); // rejects with BEGIN's error
      const on = r.tx === undefined ? pglite! : txs.get(r.tx)?.tx;
      if (!on) throw new Error("Transaction is closed");
      const res = await on.query(r.text, r.params, { rowMode: "object" });
      return { rows: res.rows, affectedRows: res.affectedRows, fields: res.fields };
    }
    case "begin": {
      const id = r.tx; // the main thread's: it sends the transaction's statements without waiting for this
      let begun!: () => void;
      const started = new Promise<void>((res) => (begun = res));
      const done = pglite!.transaction(async (tx) => {
        let end!: (commit: boolean) => void;
        const ended = new Promise<boolean>((res) => (end = res));
        txs.set(id, { tx, end });
        begun();
        if (!(await ended)) await tx.rollback();
      });
      // The outcome (a failed commit) is reported to the `end` request.
      const outcome = done.finally(() => txs.delete(id));
      outcome.catch(() => {}); // handled by `end`, or below when BEGIN fails
      outcomes.set(id, outcome);
      // A failed BEGIN rejects `done` before `begun`.
      const begin = Promise.race([started, done]);
      begin.catch(() => {}); // reported here and to the statements that wait for it
      begins.set(id, begin);
      try {
        await begin;
      } catch (e) {
        outcomes.delete(id);
        throw e;
      }
      return id;
    }
    case "end": {
      // An end sent before its BEGIN ran (the function failed first) must not leave the transaction open.
      await begins.get(r.tx)?.catch(() => {});
      begins.delete(r.tx);
      const t = txs.get(r.tx);
      const outcome = outcomes.get(r.tx);
      outcomes.delete(r.tx);
      t?.end(r.commit);
      await outcome;
      return null;
    }
    case "listen": {
      const channel = r.channel;
      await raw!.listen(channel, (payload) => self_.postMessage({ channel, payload }));
      return null;
    }
    case "dump":
      return await raw!.dumpDataDir(r.compression);
    case "reclaim": {
      const before = Deno.memoryUsage().heapUsed;
      (gc ??= fullGc() ?? (() => {}))();
      return { before, after: Deno.memoryUsage().heapUsed };
    }
    case "close":
      if (raw && !raw.closed) await raw.close();
      return null;
  }
}
const outcomes = new Map<number, Promise<unknown>>();
/** This worker's full collection, found at the first `reclaim` (a no-op where the runtime has none). */
let gc: (() => void) | undefined;

self_.onmessage = (ev) => {
  const r = ev.data;
  handle(r).then(
    (value) => self_.postMessage({ id: r.id, ok: true, value }),
    (e) => self_.postMessage({ id: r.id, ok: false, error: plain(e) }),
  );
};
