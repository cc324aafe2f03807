/**
 * The worker of `bench/micro_pglite_transport.ts`: an in-memory PGlite answering queries by `postMessage`
 * (`name` "post"), or through a SharedArrayBuffer signalled with `Atomics`, waiting blocked (`name` "sync") or
 * with `Atomics.waitAsync` (`name` "async"); with `{ inner: n }`, the queries timed inside the worker itself.
 *
 * @module
 */
import { PGlite } from "@electric-sql/pglite";

const scope = globalThis as unknown as {
  name: string;
  onmessage: (ev: MessageEvent) => void;
  postMessage: (m: unknown) => void;
};
const pg = new PGlite();
await pg.waitReady;
const enc = new TextEncoder();
const dec = new TextDecoder();

async function answer(text: string): Promise<string> {
  const { sql } = JSON.parse(text) as { sql: string };
  const r = await pg.query(sql, [], { rowMode: "object" });
  return JSON.stringify({ rows: r.rows, affectedRows: r.affectedRows });
}

/** Control words: 0 the request's number (main), 1 the answered request's number (worker), 2 the length. */
async function serveShared(sab: SharedArrayBuffer): Promise<void> {
  const ctl = new Int32Array(sab, 0, 4);
  const buf = new Uint8Array(sab, 16);
  let seen = 0;
  while (true) {
    if (scope.name === "sync") Atomics.wait(ctl, 0, seen);
    else {
      const w = Atomics.waitAsync(ctl, 0, seen);
      if (w.async) await w.value;
    }
    const seq = Atomics.load(ctl, 0);
    if (seq === -1) return;
    seen = seq;
    const out = enc.encode(await answer(dec.decode(buf.slice(0, ctl[2]))));
    buf.set(out);
    ctl[2] = out.length;
    Atomics.store(ctl, 1, seq);
    Atomics.notify(ctl, 1);
  }
}

scope.onmessage = async (ev) => {
  const m = ev.data as { sab?: SharedArrayBuffer; inner?: number; sql?: string; id?: number };
  if (m.sab) {
    scope.postMessage({ ready: true });
    return await serveShared(m.sab);
  }
  if (m.inner) {
    for (let i = 0; i < 300; i++) await pg.query(m.sql!, [], { rowMode: "object" });
    const t0 = performance.now();
    for (let i = 0; i < m.inner; i++) await pg.query(m.sql!, [], { rowMode: "object" });
    return scope.postMessage({ ms: (performance.now() - t0) / m.inner });
  }
  scope.postMessage({ id: m.id, value: JSON.parse(await answer(JSON.stringify(m))) });
};
scope.postMessage({ up: true });
