/**
 * The automatic write-back (issue 50 point 4, docs/netbox.md "Writing verdicts back"): with
 * DUT_NETBOX_WRITEBACK=on, a run's finish queues one `pending` row per device of the run in `netbox_journal`,
 * in the finish's own transaction (runs/notify.ts), so a crash never loses one. This worker (the outbox claim
 * loop of notify/loop.ts, like the webhook deliveries) claims the due rows with FOR UPDATE SKIP LOCKED and a
 * lease, posts each device's journal entry and records the outcome: `posted` (with NetBox's entry id, out of
 * the queue) or `failed` with NetBox's reason and the next attempt, after NetBox's `Retry-After` (a 429 or a
 * 503) or an exponential backoff with jitter. A failed row is never given up: it stays queued, visible in the
 * API (`GET …/netbox-journal`), the CLI and the metrics, until NetBox takes it. The run is never touched.
 *
 * @module
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { backoffMs, ClaimLoop } from "../notify/loop.ts";
import { logger } from "../util/log.ts";
import { guardedAddress, type NetBoxClient, NetBoxError } from "./client.ts";
import { postEntry, type RunForJournal } from "./journal.ts";

const log = logger("netbox");

export interface JournalWorkerOptions {
  /** How often the queue is read (ms). */
  pollMs: number;
  /** Entries posted at once at most per instance. */
  concurrency: number;
  /** First retry delay (ms); doubles per failed attempt, with jitter. */
  retryBaseMs: number;
  /** Longest delay between two attempts (ms). */
  retryMaxDelayMs: number;
  /** How long a claimed row is leased (ms): past it another instance may take it. */
  leaseMs: number;
}

/** What the worker reports to metrics. */
export interface JournalObserver {
  attempt(result: "posted" | "retry", seconds: number): void;
}

/** The run's data a journal entry carries (verdict, report URL and digests), or null when it is unknown. */
export type RunLoader = (executionId: string) => Promise<RunForJournal | null>;

interface Claimed {
  execution_id: string;
  hostname: string;
  device_id: string | null;
  attempts: number;
}

/** How many rows wait in the queue: not tried yet, and failed (to be retried). */
export async function journalQueue(db: Kysely<Database>): Promise<{ pending: number; failed: number }> {
  const rows = await db.selectFrom("netbox_journal").select(["status", (eb) => eb.fn.countAll().as("n")])
    .where("next_at", "is not", null).where("status", "<>", "posted").groupBy("status").execute();
  const n = (s: string) => Number(rows.find((r) => r.status === s)?.n ?? 0);
  return { pending: n("pending"), failed: n("failed") };
}

export class JournalWorker extends ClaimLoop<Claimed> {
  #runs = new Map<string, Promise<RunForJournal | null>>();

  constructor(
    private db: Kysely<Database>,
    private client: NetBoxClient,
    private loadRun: RunLoader,
    private opts: JournalWorkerOptions,
    private observer?: JournalObserver,
  ) {
    super("netbox", opts);
  }

  protected async claim(room: number): Promise<Claimed[]> {
    this.#runs.clear();
    return await this.db.transaction().execute(async (tx) => {
      const rows = await sql<Claimed>`
        select execution_id, hostname, device_id, attempts from netbox_journal
        where next_at is not null and next_at <= now() and status <> 'posted'
          and (lease_until is null or lease_until < now())
        order by next_at, execution_id, hostname limit ${room}
        for update skip locked`.execute(tx);
      for (const r of rows.rows) {
        await tx.updateTable("netbox_journal")
          .set({ lease_until: sql`now() + make_interval(secs => ${this.opts.leaseMs / 1000})` })
          .where("execution_id", "=", r.execution_id).where("hostname", "=", r.hostname).execute();
      }
      return rows.rows;
    });
  }

  #run(executionId: string): Promise<RunForJournal | null> {
    let p = this.#runs.get(executionId);
    if (!p) this.#runs.set(executionId, p = this.loadRun(executionId));
    return p;
  }

  protected async handle(c: Claimed): Promise<void> {
    const started = performance.now();
    const run = await this.#run(c.execution_id);
    let outcome;
    const refused = await guardedAddress(this.client.base.href);
    if (refused) {
      outcome = { netboxId: null, journalEntryId: null, error: new NetBoxError(refused, "url", null, false) };
    } else if (!run) {
      const e = new NetBoxError(`Run "${c.execution_id}" is not a finished run`, "run", null, false);
      outcome = { netboxId: null, journalEntryId: null, error: e };
    } else {
      const tags = c.device_id
        ? (await this.db.selectFrom("devices").select("tags").where("id", "=", c.device_id)
          .executeTakeFirst())
          ?.tags ?? []
        : [];
      outcome = await postEntry(this.client, run, c.hostname, tags);
    }
    const attempt = Number(c.attempts) + 1;
    const e = outcome.error;
    const delay = e === null ? 0 : Math.min(
      e.retryAfterMs ?? backoffMs(attempt, this.opts.retryBaseMs, this.opts.retryMaxDelayMs),
      86_400_000,
    );
    await this.db.updateTable("netbox_journal").set({
      status: e === null ? "posted" : "failed",
      attempts: attempt,
      netbox_device_id: outcome.netboxId,
      journal_entry_id: outcome.journalEntryId,
      last_error: e === null ? null : e.message.slice(0, 2000),
      next_at: e === null ? null : sql`now() + make_interval(secs => ${delay / 1000})`,
      lease_until: null,
      updated_at: sql`now()`,
    }).where("execution_id", "=", c.execution_id).where("hostname", "=", c.hostname).execute();
    this.observer?.attempt(e === null ? "posted" : "retry", (performance.now() - started) / 1000);
    if (e !== null) {
      log.info("NetBox journal entry of {host} (run {run}): attempt {n} failed, next in {s} s: {error}", {
        host: c.hostname,
        run: c.execution_id,
        n: attempt,
        s: Math.round(delay / 1000),
        error: e.message,
      });
    }
  }
}
