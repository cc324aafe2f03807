/**
 * Live events (issue 21, docs/http-api.md "Live events"). Every event is a row of `events` (id, time, type, JSON data)
 * kept for DUT_EVENTS_RETENTION_HOURS, so an SSE client reconnecting with `Last-Event-ID` is sent what it
 * missed, across restarts. On PostgreSQL, writers commit events in id order (a transaction advisory lock)
 * and NOTIFY; every instance LISTENs, so each one's clients see every instance's events.
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import type { Db } from "../db/open.ts";
import { Batcher } from "../util/batcher.ts";
import { logger } from "../util/log.ts";
import type { EventMap, EventType, StoredEvent } from "./types.ts";

export { EVENT_TYPES } from "./types.ts";
export type { EventMap, EventType, StoredEvent } from "./types.ts";

const log = logger("events");
/** Advisory lock key that orders event commits (ids become visible in increasing order). */
const ORDER_LOCK = 0x64757465; // "dute"

type Listener = (e: StoredEvent) => void;

export class EventBus {
  #listeners = new Set<Listener>();
  /** The highest id this instance has read or written; the tail reads after it. */
  #last = 0n;
  #started: Promise<void> | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  #tailing = false;
  #again = false;
  #lastPrune = 0;
  #closed = false;
  #closers = new Set<() => void>();

  constructor(private db: Db, private retentionHours: number) {}

  get #k(): Kysely<Database> {
    return this.db.kysely;
  }

  /** Record an event; it reaches every connected client of every instance. Never throws. */
  async publish<T extends EventType>(type: T, data: EventMap[T]): Promise<void> {
    try {
      await this.#writes.run({ type, data: JSON.stringify(data) });
      this.#wake();
    } catch (e) {
      log.warn("Could not record event {type}: {error}", { type, error: String(e) });
    }
  }

  /** The NOTIFY channel: one per schema, so that instances sharing a schema (and only those) hear each other. */
  #channelName: Promise<string> | undefined;
  #channel(): Promise<string> {
    this.#channelName ??= sql<{ s: string }>`select current_schema() as s`.execute(this.#k)
      .then((r) => `dutlab_events_${r.rows[0]!.s}`.slice(0, 63)); // one row by construction
    return this.#channelName;
  }

  #writes = new Batcher<{ type: string; data: string }, void>(async (events) => {
    const channel = this.db.kind === "postgres" ? await this.#channel() : "";
    await this.#k.transaction().execute(async (tx) => {
      if (this.db.kind === "postgres") await sql`select pg_advisory_xact_lock(${ORDER_LOCK})`.execute(tx);
      await tx.insertInto("events").values(events).execute();
      if (this.db.kind === "postgres") await sql`select pg_notify(${channel}, '')`.execute(tx);
    });
    if (Date.now() - this.#lastPrune > 60_000) {
      this.#lastPrune = Date.now();
      await sql`delete from events where at < now() - make_interval(hours => ${this.retentionHours})`
        .execute(this.#k);
    }
    return events.map(() => undefined);
  }, 500);

  /** Start following the table (and, on PostgreSQL, other instances' notifications). */
  start(): Promise<void> {
    this.#started ??= (async () => {
      const r = await sql<{ id: string | null }>`select max(id)::text as id from events`.execute(this.#k);
      this.#last = BigInt(r.rows[0]?.id ?? 0);
      if (this.db.listen) {
        this.#unlisten = await this.db.listen(await this.#channel(), () => this.#wake(), () => this.#wake());
      }
    })();
    return this.#started;
  }

  /** Stop: every open stream ends (its clients reconnect elsewhere with Last-Event-ID). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#listeners.clear();
    for (const c of this.#closers) c();
    this.#closers.clear();
    await this.#unlisten?.().catch(() => {});
  }

  /** Read what was committed after the last id seen and hand it to every listener, in id order. */
  #wake(): void {
    if (!this.#started) return;
    if (this.#tailing) {
      this.#again = true;
      return;
    }
    this.#tailing = true;
    (async () => {
      try {
        do {
          this.#again = false;
          if (this.#closed) return;
          for (;;) {
            const rows = await this.read(this.#last, 500);
            for (const e of rows) {
              const id = BigInt(e.id);
              // read() gives increasing ids; a row at or below the cursor would be a repeat, never sent twice.
              if (id <= this.#last) continue;
              this.#last = id;
              for (const l of this.#listeners) l(e);
            }
            if (rows.length < 500) break;
          }
        } while (this.#again);
      } catch (e) {
        log.warn("Could not read new events: {error}", { error: String(e) });
      } finally {
        this.#tailing = false;
      }
    })();
  }

  /**
   * Events after `after`, oldest first: ordered by the bigint column `events.id` (qualified, so that ORDER BY
   * does not pick the text output column of the same name: "10" sorts before "9" as text, issue 33 point 1).
   */
  async read(after: bigint, limit: number): Promise<StoredEvent[]> {
    const rows = await this.#k.selectFrom("events").select([
      sql<string>`events.id::text`.as("id"),
      "at",
      "type",
      "data",
    ])
      .where(sql`events.id`, ">", sql`${after.toString()}::bigint`).orderBy(sql`events.id`).limit(limit)
      .execute();
    // Rows were written by publish(), whose data is checked against the map for its type.
    return rows.map((r) =>
      ({
        id: r.id,
        at: new Date(r.at).toISOString(),
        type: r.type,
        data: JSON.parse(r.data),
      }) as StoredEvent
    );
  }

  /** The oldest id still kept, or null when the window is empty. */
  async oldestId(): Promise<bigint | null> {
    const r = await sql<{ id: string | null }>`select min(id)::text as id from events`.execute(this.#k);
    const id = r.rows[0]?.id ?? null; // max/min always give one row, null over an empty table
    return id === null ? null : BigInt(id);
  }

  /** The highest id delivered to listeners so far. */
  get lastId(): bigint {
    return this.#last;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Follow new events; `onClose` runs when the bus closes. Returns the unsubscribe function. */
  subscribe(l: Listener, onClose?: () => void): () => void {
    this.#listeners.add(l);
    if (onClose) this.#closers.add(onClose);
    return () => {
      this.#listeners.delete(l);
      if (onClose) this.#closers.delete(onClose);
    };
  }
}
