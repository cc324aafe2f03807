import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import type { Db } from "../db/open.ts";
import type { Metrics } from "./metrics.ts";
import { DeviceBusyError, LostLockError, PollCancelledError, type PollService } from "./cycle.ts";
import { PollLeader } from "./leader.ts";
import { logger } from "../util/log.ts";
import { NotFoundError } from "../errors.ts";

const log = logger("poller");

export { POLL_LOCK_CLASS, pollLockKey } from "./leader.ts";

/**
 * How long after a device's due time the scan that waits for it starts: the due rule is strict
 * (`lastPollAt + interval` earlier than now), so the scan starts just after, not at, the due time.
 */
export const WAKE_MARGIN_MS = 50;

/**
 * Polls in flight per place of `concurrency`, those whose results wait for the store included: a batch
 * being written and the next one polled meanwhile (the store writes up to MAX_BATCH = 64 polls per
 * transaction; the default concurrency is 64).
 */
export const IN_FLIGHT_PER_PLACE = 2;

export interface WorkerOptions {
  scanSeconds: number;
  concurrency: number;
}

/**
 * The polling worker schedules only: a scan every `scanSeconds` selects due devices and polls them with
 * bounded concurrency, when this instance leads. Leadership is the `PollLeader`'s (leader.ts): the worker
 * asks it once per scan, so a due device is polled by the next scan however many instances run, and a
 * killed leader is replaced within one scan. Before writing, each cycle re-checks leadership inside its
 * transaction (the leader's guard); on lost leadership the worker drops its queue and writes nothing
 * until leadership is taken again.
 */
export class PollWorker {
  #timer: ReturnType<typeof setTimeout> | undefined;
  #leader: PollLeader;
  /** Due devices selected by the latest scan and not started yet, oldest poll first. */
  #queue: string[] = [];
  /** Devices being polled now (until the device's part of the cycle is over). */
  #active = 0;
  /** Polls whose results wait for the store's write. */
  #storing = 0;
  /** Pumps waiting for a place to free up. */
  #freed = new Set<() => void>();
  #stopping = false;
  #selecting: Promise<boolean> | null = null;
  #abort = new AbortController();
  /** Ends a tick's wait for the next due device early (stop). */
  #wake: (() => void) | null = null;
  /** Scans run while holding the lock. */
  scans = 0;
  /** Scans that found due devices of the previous scan not started yet. */
  overruns = 0;

  /** A worker polling due devices of `db` with `poller`, recording into `metrics`. */
  constructor(
    private db: Db,
    private poller: PollService,
    private metrics: Metrics,
    private opts: WorkerOptions,
  ) {
    this.#leader = new PollLeader(db, metrics);
    this.#leader.subscribe((leader) => {
      if (!leader) this.#queue = [];
    });
  }

  /** Whether this instance holds the poll lock (always, on embedded PGlite: one process by construction). */
  get holdsLock(): boolean {
    return this.#leader.isLeader;
  }

  /** Start scanning: the first scan now, then one every `scanSeconds`. */
  async start(): Promise<void> {
    await this.#leader.start();
    log.info("Polling worker started: scan every {scan} s, concurrency {concurrency}", {
      scan: this.opts.scanSeconds,
      concurrency: this.opts.concurrency,
    });
    this.#tick();
  }

  /**
   * A scan tick, at least `scanSeconds` after the previous scan started. When no device is due yet but one
   * becomes due within a scan period, the scan waits until that moment (plus WAKE_MARGIN_MS) instead of
   * finding it "not yet due" and leaving it to the following scan: a device polled at the end of one scan
   * with an interval equal to the scan period would otherwise be polled every two periods. The next tick
   * is timed from the scan's actual start, so scans are never more frequent than `scanSeconds`.
   */
  #tick() {
    if (this.#stopping) return;
    this.#timer = undefined;
    (async () => {
      const wait = await this.#untilDue().catch(() => 0);
      if (wait > 0 && wait < this.opts.scanSeconds * 1000) {
        await new Promise<void>((r) => {
          this.#timer = setTimeout(r, wait + WAKE_MARGIN_MS);
          this.#wake = r;
        });
        this.#wake = null;
      }
      if (this.#stopping) return;
      this.#timer = setTimeout(() => this.#tick(), this.opts.scanSeconds * 1000);
      this.#scanTick();
    })();
  }

  /**
   * Milliseconds, on the database clock, until the earliest enabled device becomes due (0 or less when one
   * is due now or was never polled).
   */
  async #untilDue(): Promise<number> {
    const r = await sql<{ ms: number | string | null; never: boolean }>`select
        extract(epoch from min(last_poll_at + poll_interval_seconds * interval '1 second') - now()) * 1000
          as ms,
        bool_or(last_poll_at is null) as never
      from devices where enabled`.execute(this.db.kysely);
    const row = r.rows[0];
    if (!row || row.never || row.ms === null) return 0;
    return Number(row.ms);
  }

  #scanTick() {
    if (this.#queue.length) {
      // due devices of the previous scan have not even started: an overrun
      this.metrics.overruns.inc();
      this.overruns++;
      log.warn(
        "Poll overrun: {queued} due device(s) from the previous scan not started yet, {active} polling",
        { queued: this.#queue.length, active: this.#active },
      );
    }
    if (this.#selecting) return;
    this.scan().catch((e) => log.error("Scan failed: {error}", { error: String(e) }));
  }

  /**
   * One scan: take or confirm the lock, re-read due devices from the database (those not polling in
   * this process), and poll them. Resolves when the polls this scan started are done. Scans may
   * overlap: a hung device never holds up the next scan, and a device is never polled twice at once.
   */
  async scan(): Promise<void> {
    const t0 = performance.now();
    if (this.#selecting || this.#stopping) return;
    this.#selecting = (async () => {
      if (!(await this.#leader.ensure())) return false;
      const due = await dueDevices(this.db.kysely);
      if (this.#stopping || !this.holdsLock) return false;
      // Replace, not append: devices still waiting from an earlier scan are re-validated by this read.
      this.#queue = due.filter((id) => !this.poller.isPolling(id));
      this.scans++;
      return true;
    })();
    try {
      if (!(await this.#selecting)) return;
    } finally {
      this.#selecting = null;
    }
    if (this.#queue.length) log.debug("Scan: {n} due device(s)", { n: this.#queue.length });
    await this.#pump();
    this.metrics.scanDuration.observe((performance.now() - t0) / 1000);
  }

  /**
   * Poll the queue: at most `concurrency` devices at once, counted until the device's part of its cycle is
   * over (session closed, payloads hashed). A poll whose results then wait for the store's group commit no
   * longer holds a device's place, so the next devices are polled while a batch is written; polls in flight,
   * those waiting included, stay at most {@link IN_FLIGHT_PER_PLACE} × `concurrency`, so a slow database
   * slows the polling down instead of piling up payloads.
   */
  async #pump(): Promise<void> {
    const guard = this.#leader.guard();
    const polls: Promise<void>[] = [];
    const more = () => this.#queue.length > 0 && !this.#stopping && this.holdsLock;
    while (more()) {
      if (
        this.#active >= this.opts.concurrency ||
        this.#active + this.#storing >= IN_FLIGHT_PER_PLACE * this.opts.concurrency
      ) {
        await new Promise<void>((r) => this.#freed.add(r));
        continue;
      }
      const id = this.#queue.shift()!;
      if (this.poller.isPolling(id)) continue; // a manual snapshot got there first
      this.#active++;
      let storing = false;
      const deviceDone = () => {
        if (storing) return;
        storing = true;
        this.#active--;
        this.#storing++;
        this.#notifyFreed();
      };
      polls.push(
        this.poller.poll(id, { guard, signal: this.#abort.signal, deviceDone }).then(() => {}, (e) => {
          if (e instanceof LostLockError || e instanceof PollCancelledError) return;
          if (e instanceof DeviceBusyError) { // a manual snapshot elsewhere records this poll
            log.debug("Skipped device {id}: being polled by another instance", { id });
            return;
          }
          if (!(e instanceof NotFoundError)) { // deleted since the scan
            log.error("Poll of device {id} failed: {error}", { id, error: String(e) });
          }
        }).finally(() => {
          if (storing) this.#storing--;
          else this.#active--;
          this.#notifyFreed();
        }),
      );
    }
    await Promise.all(polls);
  }

  /** Wakes every pump waiting for a place (a device done, a write stored). */
  #notifyFreed(): void {
    const waiting = [...this.#freed];
    this.#freed.clear();
    for (const wake of waiting) wake();
  }

  /** Stop scanning, let running polls finish within `graceMs`, then release the lock. */
  async stop(graceMs: number): Promise<void> {
    this.#stopping = true;
    this.#leader.resign();
    clearTimeout(this.#timer);
    this.#wake?.();
    this.#queue = [];
    await this.#selecting?.catch(() => {});
    const drained = this.poller.drain();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = await Promise.race([
      drained.then(() => false),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      log.warn("Shutdown grace period over; cancelling {n} running poll(s)", {
        n: this.poller.inflightCount,
      });
      this.#abort.abort();
      await drained;
    }
    this.poller.close();
    await this.#leader.stop();
  }
}

/** Ids of enabled devices that are due: never polled, or last poll + interval earlier than now. */
export async function dueDevices(db: Kysely<Database>, limit = 100_000): Promise<string[]> {
  const rows = await db.selectFrom("devices").select("id")
    .where("enabled", "=", true)
    .where((eb) =>
      eb.or([
        eb("last_poll_at", "is", null),
        eb(sql`last_poll_at + poll_interval_seconds * interval '1 second'`, "<", sql`now()`),
      ])
    )
    .orderBy(sql`last_poll_at nulls first`).limit(limit).execute();
  return rows.map((r) => r.id);
}
