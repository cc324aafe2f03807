/**
 * The fan-out behind `GET /api/events` (issue 21 point 3 and its CPU target in point 6). One subscription to
 * the event bus serves every connected stream:
 *
 * - events that arrive within `flushMs` of each other are sent together: their SSE frames are joined once into
 *   one buffer, and every live client gets that same buffer in one write (an event costs a client a share of
 *   one write, not a JSON serialization, an encoding and a write of its own);
 * - each client's response body is a plain `ReadableStream` the hub enqueues into, so a client costs no
 *   promise chain, loop or timer of its own; one timer sends the keep-alive comment to every client;
 * - a client that joins with `Last-Event-ID` is "catching up" while it is sent the kept events from the
 *   database: the hub keeps the live events for it meanwhile, and the client turns live once the database has
 *   nothing newer, with no event lost or sent twice (each client remembers the last id it was sent);
 * - a client that does not read (more than `maxQueuedBytes` waiting) is disconnected; it reconnects with
 *   `Last-Event-ID` and is served from the database like any resuming client.
 *
 * @module
 */
import type { EventBus, StoredEvent } from "../events/bus.ts";

/** What the hub uses of the event bus. */
export type EventFeed = Pick<EventBus, "start" | "subscribe" | "read" | "oldestId" | "lastId" | "closed">;

const encoder = new TextEncoder();

/** An event's SSE frame: `event`, one `data` line (JSON has no raw line breaks) and `id`. */
export function sseFrame(e: StoredEvent): string {
  return `event: ${e.type}\ndata: ${JSON.stringify(e)}\nid: ${e.id}\n\n`;
}

/** A frame without an id (`stream.open`, `stream.reset`): not resumable, never counted as sent. */
export function sseControlFrame(type: string, data: unknown, retryMs?: number): string {
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n${
    retryMs === undefined ? "" : `retry: ${retryMs}\n`
  }\n`;
}

interface Batch {
  events: StoredEvent[];
  /** The joined frames of `events`, encoded once for every client. */
  bytes: Uint8Array;
  firstId: bigint;
  lastId: bigint;
}

interface Client {
  controller: ReadableStreamDefaultController<Uint8Array>;
  /** The highest event id this client was sent (or, live, is about to be sent by the pending batch). */
  sent: bigint;
  /** While catching up: the live events that arrived meanwhile, in id order. */
  backlog: StoredEvent[] | null;
  closed: boolean;
  onClose: () => void;
}

export interface SseHubOptions {
  /** Events arriving within this many ms of the first one are sent in one write (0: the same tick). */
  flushMs: number;
  /** A keep-alive comment goes to every client this often. */
  heartbeatMs: number;
  /** A client with more than this many bytes waiting to be read is disconnected. */
  maxQueuedBytes: number;
}

/** How a new stream begins: where the client resumes, and what to send before the live events. */
export interface OpenStream {
  /** The id the client resumes after (`Last-Event-ID`), or null to follow only new events. */
  after: bigint | null;
  /** Runs when the stream ends, whatever the reason (client gone, too slow, bus closed). */
  onClose: () => void;
}

export class SseHub {
  #clients = new Set<Client>();
  #pending: StoredEvent[] = [];
  #flushTimer: ReturnType<typeof setTimeout> | undefined;
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  #unsubscribe: (() => void) | undefined;
  #keepAlive = encoder.encode(": keep-alive\n\n");

  constructor(private bus: EventFeed, private opts: SseHubOptions) {}

  /** Connected clients (live and catching up). */
  get size(): number {
    return this.#clients.size;
  }

  /**
   * A new stream. The returned body starts with `stream.open`; with `after`, a `stream.reset` when events after
   * it were already dropped, then every kept event after it; then the live events.
   */
  async open({ after, onClose }: OpenStream): Promise<ReadableStream<Uint8Array>> {
    await this.bus.start();
    this.#ensureSubscribed();
    let client!: Client;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        client = {
          controller,
          sent: after ?? this.bus.lastId,
          backlog: after === null ? null : [],
          closed: false,
          onClose,
        };
      },
      cancel: () => this.#drop(client),
    }, new ByteLengthQueuingStrategy({ highWaterMark: this.opts.maxQueuedBytes }));
    this.#clients.add(client);
    this.#enqueue(
      client,
      encoder.encode(sseControlFrame("stream.open", { lastEventId: client.sent.toString() }, 2000)),
    );
    if (this.bus.closed) this.#drop(client); // shutting down: the client reconnects to another instance
    else if (after !== null) this.#catchUp(client, after).catch((e) => this.#drop(client, e));
    return body;
  }

  /** End every stream (the bus closed: clients reconnect elsewhere and resume); the last one unsubscribes. */
  closeAll(): void {
    for (const c of [...this.#clients]) this.#drop(c);
  }

  #ensureSubscribed(): void {
    if (this.#unsubscribe) return;
    this.#unsubscribe = this.bus.subscribe((e) => this.#onEvent(e), () => this.closeAll());
    this.#heartbeat = setInterval(() => {
      for (const c of this.#clients) this.#enqueue(c, this.#keepAlive);
    }, this.opts.heartbeatMs);
    Deno.unrefTimer(this.#heartbeat);
  }

  #stop(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    clearInterval(this.#heartbeat);
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    this.#pending = [];
  }

  #onEvent(e: StoredEvent): void {
    if (this.#clients.size === 0) return;
    this.#pending.push(e);
    this.#flushTimer ??= setTimeout(() => this.#flush(), this.opts.flushMs);
  }

  #flush(): void {
    this.#flushTimer = undefined;
    const events = this.#pending;
    this.#pending = [];
    if (events.length === 0) return;
    const batch: Batch = {
      events,
      bytes: encoder.encode(events.map(sseFrame).join("")),
      firstId: BigInt(events[0]!.id),
      lastId: BigInt(events[events.length - 1]!.id),
    };
    for (const c of this.#clients) {
      if (c.backlog) {
        c.backlog.push(...events);
        continue;
      }
      this.#sendBatch(c, batch);
    }
  }

  /**
   * Send a batch to a live client: its shared bytes, or, right after catching up, only the events the client
   * was not sent yet.
   */
  #sendBatch(c: Client, b: Batch): void {
    if (b.firstId <= c.sent) return this.#sendEvents(c, b.events);
    this.#enqueue(c, b.bytes);
    c.sent = b.lastId;
  }

  /** Replay the kept events after `after`, then the backlog, then turn live. */
  async #catchUp(c: Client, after: bigint): Promise<void> {
    const oldest = await this.bus.oldestId();
    if (oldest !== null ? after < oldest - 1n : after < this.bus.lastId) {
      // Events after `after` were dropped from the window: the client must reload its state.
      this.#enqueue(
        c,
        encoder.encode(sseControlFrame("stream.reset", {
          type: "stream.reset",
          reason: "events after Last-Event-ID are no longer kept",
        })),
      );
    }
    for (;;) {
      if (c.closed) return;
      const rows = await this.bus.read(c.sent, 500);
      this.#sendEvents(c, rows);
      if (rows.length < 500) break;
    }
    if (c.closed) return;
    // Synchronously from here: what arrived during the reads is in the backlog; the next flush finds c live.
    const backlog = c.backlog ?? [];
    c.backlog = null;
    this.#sendEvents(c, backlog);
  }

  #sendEvents(c: Client, events: StoredEvent[]): void {
    const fresh = events.filter((e) => BigInt(e.id) > c.sent);
    if (fresh.length === 0) return;
    this.#enqueue(c, encoder.encode(fresh.map(sseFrame).join("")));
    c.sent = BigInt(fresh[fresh.length - 1]!.id);
  }

  #enqueue(c: Client, bytes: Uint8Array): void {
    if (c.closed) return;
    // desiredSize = highWaterMark - queued bytes: below zero, more than maxQueuedBytes are waiting.
    if ((c.controller.desiredSize ?? 0) < 0) {
      this.#drop(c);
      return;
    }
    try {
      c.controller.enqueue(bytes);
    } catch {
      this.#drop(c);
    }
  }

  #drop(c: Client, error?: unknown): void {
    if (c.closed) return;
    c.closed = true;
    this.#clients.delete(c);
    try {
      if (error === undefined) c.controller.close();
      else c.controller.error(error);
    } catch {
      // already closed or cancelled by the client
    }
    c.onClose();
    if (this.#clients.size === 0) this.#stop();
  }
}
