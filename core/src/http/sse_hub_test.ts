/**
 * The SSE fan-out (sse_hub.ts) against an in-memory event feed: coalesced writes, resumption without loss or
 * duplicates while live events arrive, the slow-client cut-off, keep-alives, and every way a stream ends.
 */
import assert from "node:assert/strict";
import type { StoredEvent } from "../events/bus.ts";
import { type EventFeed, SseHub } from "./sse_hub.ts";

/** An event table and bus in memory; `read` can be held to let live events arrive during a replay. */
class FakeFeed implements EventFeed {
  stored: StoredEvent[] = [];
  listeners = new Set<(e: StoredEvent) => void>();
  closers = new Set<() => void>();
  lastId = 0n;
  closed = false;
  /** Held before the read sees the table. */
  hold: Promise<void> | null = null;
  /** Held after the read saw the table, before its rows reach the caller (a query's answer in flight). */
  latency: Promise<void> | null = null;
  start() {
    return Promise.resolve();
  }
  subscribe(l: (e: StoredEvent) => void, onClose?: () => void) {
    this.listeners.add(l);
    if (onClose) this.closers.add(onClose);
    return () => {
      this.listeners.delete(l);
      if (onClose) this.closers.delete(onClose);
    };
  }
  async read(after: bigint, limit: number) {
    if (this.hold) await this.hold;
    const rows = this.stored.filter((e) => BigInt(e.id) > after).slice(0, limit);
    if (this.latency) await this.latency;
    return rows;
  }
  oldestId() {
    return Promise.resolve(this.stored[0] ? BigInt(this.stored[0].id) : null);
  }
  /** Commit an event (the table) without telling listeners yet. */
  commit(): StoredEvent {
    const id = this.stored.length + 1;
    const e: StoredEvent = {
      id: String(id),
      at: new Date(0).toISOString(),
      type: "device.changed",
      data: { deviceId: String(id), hostname: `dev-${id}`, change: "updated" },
    };
    this.stored.push(e);
    return e;
  }
  /** What the bus does after a commit: hand it to every listener. */
  deliver(e: StoredEvent) {
    this.lastId = BigInt(e.id);
    for (const l of this.listeners) l(e);
  }
  publish() {
    this.deliver(this.commit());
  }
  close() {
    this.closed = true;
    for (const c of this.closers) c();
  }
}

const decoder = new TextDecoder();
const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));
const options = { flushMs: 20, heartbeatMs: 60_000, maxQueuedBytes: 1 << 20 };

/** Reads a stream chunk by chunk; `ids()` parses the event ids received so far. */
class Reader {
  chunks: string[] = [];
  ended = false;
  #reader: ReadableStreamDefaultReader<Uint8Array>;
  #done: Promise<void>;
  constructor(body: ReadableStream<Uint8Array>) {
    const reader = body.getReader();
    this.#reader = reader;
    this.#done = (async () => {
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          this.chunks.push(decoder.decode(value));
        }
      } catch {
        // errored stream: ended too
      }
      this.ended = true;
    })();
  }
  text() {
    return this.chunks.join("");
  }
  ids() {
    return [...this.text().matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  }
  async cancel() {
    await this.#reader.cancel();
    await this.#done;
  }
  done() {
    return this.#done;
  }
}

Deno.test("events arriving within the flush window reach every client in one write", async () => {
  const feed = new FakeFeed();
  const hub = new SseHub(feed, options);
  const closed: number[] = [];
  const readers = await Promise.all(
    [1, 2, 3].map(async (n) => new Reader(await hub.open({ after: null, onClose: () => closed.push(n) }))),
  );
  await tick();
  for (const r of readers) {
    assert.match(r.text(), /^event: stream\.open\ndata: \{"lastEventId":"0"\}\nretry: 2000\n\n$/);
  }
  feed.publish();
  feed.publish();
  feed.publish();
  await tick(60);
  for (const r of readers) {
    assert.deepEqual(r.ids(), [1, 2, 3]);
    assert.equal(r.chunks.length, 2, "stream.open, then one chunk with the three events");
    assert.match(
      r.chunks[1]!,
      /^event: device\.changed\ndata: \{"id":"1",.*"data":\{"deviceId":"1","hostname":"dev-1","change":"updated"\}\}\nid: 1\n\n/,
    );
  }
  assert.equal(hub.size, 3);
  await readers[0]!.cancel();
  assert.deepEqual(closed, [1]);
  feed.publish();
  await tick(60);
  assert.deepEqual(readers[1]!.ids(), [1, 2, 3, 4]);
  feed.close();
  await Promise.all(readers.slice(1).map((r) => r.done()));
  assert.deepEqual(closed.sort(), [1, 2, 3]);
  assert.equal(hub.size, 0);
  assert.equal(feed.listeners.size, 0, "the hub unsubscribes when its last client leaves");
});

Deno.test("a client resuming from Last-Event-ID gets every event once, in order, while live ones arrive", async () => {
  const held = () => {
    let release!: () => void;
    const p = new Promise<void>((r) => release = r);
    return { p, release };
  };
  for (const flushMs of [0, 20]) {
    const settle = () => tick(flushMs + 30);
    const what = `flushMs ${flushMs}`;
    const feed = new FakeFeed();
    for (let i = 0; i < 5; i++) feed.publish();
    const hub = new SseHub(feed, { ...options, flushMs });
    const live = new Reader(await hub.open({ after: null, onClose: () => {} }));

    // 1. Before the replay reads the table, event 6 is delivered (and kept in the client's backlog) and 7
    //    committed: the read returns both, and the batch pending when the client turns live holds 7 and 8.
    const before = held();
    feed.hold = before.p;
    const first = new Reader(await hub.open({ after: 2n, onClose: () => {} }));
    await tick();
    feed.publish(); // 6
    await settle(); // flushed into the client's backlog, and the read will return it too
    const seven = feed.commit(); // 7: in the table, not yet delivered
    feed.hold = null;
    before.release();
    await tick();
    feed.deliver(seven);
    feed.publish(); // 8
    await settle();
    assert.deepEqual(first.ids(), [3, 4, 5, 6, 7, 8], what);

    // 2. After the replay read the table and before its answer arrives, events are delivered and flushed:
    //    they wait in the client's backlog (8 was read, 9 and 10 were not).
    const inFlight = held();
    feed.latency = inFlight.p;
    const second = new Reader(await hub.open({ after: 6n, onClose: () => {} }));
    await tick();
    feed.publish(); // 9
    await settle();
    feed.publish(); // 10
    await settle();
    feed.latency = null;
    inFlight.release();
    await settle();
    feed.publish(); // 11
    await settle();
    assert.deepEqual(second.ids(), [7, 8, 9, 10, 11], what);
    assert.deepEqual(live.ids(), [6, 7, 8, 9, 10, 11], what);
    await Promise.all([first.cancel(), second.cancel(), live.cancel()]);
  }
});

Deno.test("resuming after events no longer kept sends stream.reset first", async () => {
  const feed = new FakeFeed();
  for (let i = 0; i < 5; i++) feed.publish();
  feed.stored.splice(0, 3); // ids 1-3 dropped by the retention window
  const hub = new SseHub(feed, options);
  const r = new Reader(await hub.open({ after: 1n, onClose: () => {} }));
  await tick(10);
  assert.match(r.text(), /event: stream\.reset\n/);
  assert.ok(r.text().indexOf("stream.reset") < r.text().indexOf("id: 4"));
  assert.deepEqual(r.ids(), [4, 5]);
  await r.cancel();
});

Deno.test("a client that does not read is disconnected; the others go on", async () => {
  const feed = new FakeFeed();
  const hub = new SseHub(feed, { ...options, flushMs: 0, maxQueuedBytes: 2048 });
  let slowClosed = false;
  const slow = await hub.open({ after: null, onClose: () => slowClosed = true });
  const fast = new Reader(await hub.open({ after: null, onClose: () => {} }));
  for (let i = 0; i < 40; i++) {
    feed.publish();
    await tick();
  }
  assert.ok(slowClosed, "the slow client's stream was ended");
  assert.equal(hub.size, 1);
  assert.equal(fast.ids().length, 40);
  // What the slow client had queued is still readable, then the stream ends (it resumes by Last-Event-ID).
  const rest = new Reader(slow);
  await rest.done();
  assert.ok(rest.ids().length > 0 && rest.ids().length < 40);
  await fast.cancel();
});

Deno.test("keep-alive comments go to every client; a closed bus ends new streams at once", async () => {
  const feed = new FakeFeed();
  const hub = new SseHub(feed, { ...options, heartbeatMs: 10 });
  const r = new Reader(await hub.open({ after: null, onClose: () => {} }));
  await tick(50);
  assert.match(r.text(), /\n\n: keep-alive\n\n/);
  await r.cancel();
  feed.closed = true;
  let closed = false;
  const late = new Reader(await hub.open({ after: null, onClose: () => closed = true }));
  await late.done();
  assert.ok(closed);
  assert.match(late.text(), /^event: stream\.open\n/);
  assert.equal(hub.size, 0);
});
