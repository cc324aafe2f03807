/**
 * Issue 53, what a statement of PGlite in a worker pays for the trip and what a faster transport would win
 * back: sequential queries (`select 1`; 100 rows of three columns) against an in-memory PGlite
 *
 * - `main`: in this thread (no trip);
 * - `inner`: in a worker, timed inside the worker (the query alone, no trip);
 * - `post`: in a worker, one `postMessage` each way (what core/src/db/pglite_remote.ts does);
 * - `sync` / `async`: in a worker, request and answer as JSON in a SharedArrayBuffer signalled with `Atomics`,
 *   the worker waiting blocked (`Atomics.wait`) or with `Atomics.waitAsync`, this thread with `waitAsync`.
 *
 * One JSON line per query, mode and round (ms per query). Two runs of 2 rounds on 30 Nov 2026 (2 cores):
 * `select 1` main 0.05-0.10, inner 0.05-0.08, post 0.16, sync 0.12-0.14, async 0.14-0.15; 100 rows main
 * 0.45-0.57, inner 0.44-0.57, post 0.74-0.80, sync 0.64-0.74, async 0.67-0.76. The query costs the same in
 * either thread; an `Atomics` transport would save about a quarter of the trip (0.02-0.04 ms of 0.09-0.11 for
 * `select 1`, 0.04-0.10 of 0.29-0.34 for 100 rows), not the tenfold of a bare ping-pong (0.013 against 0.144
 * ms, s23): encoding the statement and its rows and waking this thread's event loop stay.
 *
 * `deno run -A --lock=deno.dev.lock bench/micro_pglite_transport.ts [--rounds 2]`
 *
 * @module
 */
import { parseArgs } from "node:util";
import { PGlite } from "@electric-sql/pglite";

const { values: args } = parseArgs({
  args: Deno.args,
  options: { rounds: { type: "string", default: "2" } },
});
const enc = new TextEncoder();
const dec = new TextDecoder();
const QUERIES = {
  one: "select 1 as x",
  rows100: "select g as id, md5(g::text) as h, now() as t from generate_series(1, 100) g",
};
type Mode = "main" | "inner" | "post" | "sync" | "async";

async function timed(q: () => Promise<unknown>, n: number): Promise<number> {
  for (let i = 0; i < 300; i++) await q();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await q();
  return (performance.now() - t0) / n;
}

async function inMain(sql: string, n: number): Promise<number> {
  const pg = new PGlite();
  try {
    return await timed(() => pg.query(sql, [], { rowMode: "object" }), n);
  } finally {
    await pg.close();
  }
}

async function inWorker(mode: Exclude<Mode, "main">, sql: string, n: number): Promise<number> {
  const w = new Worker(new URL("./_transport_worker.ts", import.meta.url).href, {
    type: "module",
    name: mode,
  });
  const next = () => new Promise<Record<string, unknown>>((res) => (w.onmessage = (e) => res(e.data)));
  try {
    await next(); // up
    if (mode === "inner") {
      const done = next();
      w.postMessage({ inner: n, sql });
      return (await done).ms as number;
    }
    if (mode === "post") {
      let id = 0;
      const pending = new Map<number, (v: unknown) => void>();
      w.onmessage = (e) => pending.get(e.data.id)!(e.data.value);
      return await timed(() =>
        new Promise((res) => {
          pending.set(++id, res);
          w.postMessage({ id, sql });
        }), n);
    }
    const sab = new SharedArrayBuffer(16 + (1 << 20));
    const ctl = new Int32Array(sab, 0, 4);
    const buf = new Uint8Array(sab, 16);
    const ready = next();
    w.postMessage({ sab });
    await ready;
    let seq = 0;
    return await timed(async () => {
      const b = enc.encode(JSON.stringify({ sql }));
      buf.set(b);
      ctl[2] = b.length;
      const s = ++seq;
      Atomics.store(ctl, 0, s);
      Atomics.notify(ctl, 0);
      while (Atomics.load(ctl, 1) !== s) {
        const r = Atomics.waitAsync(ctl, 1, Atomics.load(ctl, 1));
        if (r.async) await r.value;
      }
      return JSON.parse(dec.decode(buf.slice(0, ctl[2])));
    }, n);
  } finally {
    w.terminate();
  }
}

for (let round = 0; round < Number(args.rounds); round++) {
  for (const [query, sql] of Object.entries(QUERIES)) {
    for (const mode of ["main", "inner", "post", "sync", "async"] as const) {
      const n = query === "one" ? 3000 : 1000;
      const ms = mode === "main" ? await inMain(sql, n) : await inWorker(mode, sql, n);
      console.log(JSON.stringify({ round, query, mode, msPerQuery: +ms.toFixed(4) }));
    }
  }
}
