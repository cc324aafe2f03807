import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import type { Db } from "../db/open.ts";
import type { Metrics } from "./metrics.ts";
import { DeviceBusyError, LostLockError, PollCancelledError, type PollService } from "./cycle.ts";
import { PollLeader } from "./leader.ts";
import type { Lease, PollLeases } from "./leases.ts";
import { logger } from "../util/log.ts";
import { NotFoundError } from "../errors.ts";
import type { Foreground } from "../util/foreground.ts";

const log = logger("poller");

export { POLL_LOCK_CLASS, pollLockKey } from "./leader.ts";

/**
 * How long after a device's due time the scan that waits for it starts: the due rule is strict
 * (`lastPollAt + interval` earlier than now), so the scan starts just after, not at, the due time.
 */
export const WAKE_MARGIN_MS = 50;

/**
 * Between scans, the least time from one claim round to the next: a device that becomes claimable (due, or
 * its lease lost by a dead or paused instance has expired) is claimed then instead of at the next scan.
 */
export const CATCH_UP_MIN_MS = 1_000;

/**
 * Polls in flight per place of `concurrency`, those whose results wait for the store included: a batch
 * being written and the next one polled meanwhile (the store writes up to MAX_BATCH = 64 polls per
 * transaction; the default concurrency is 64).
 */
export const IN_FLIGHT_PER_PLACE = 2;

export interface WorkerOptions {
  scanSeconds: number;
  concurrency: number;
  /**
   * While `foreground.busy` (the HTTP API answers requests), at most `busyConcurrency` devices are polled at
   * once, in place of `concurrency` (docs/polling.md "The API comes first"). Without them, never.
   */
  foreground?: Foreground;
  busyConcurrency?: number;
}

/** How often a pump held back by a busy API looks again whether it may start more polls. */
export const BUSY_RECHECK_MS = 25;

/** With the API first, a scan starts at most RAMP_POLLS polls per RAMP_MS. */
export const RAMP_POLLS = 8;
export const RAMP_MS = 25;

/** Devices a pump held back by a busy API claims per round trip (it starts them one place at a time). */
export const BUSY_CLAIM = 8;

/**
 * The polling worker schedules only: a scan every `scanSeconds` claims due devices' leases in bounded
 * batches (leases.ts) as it has room to poll them, and polls them with bounded concurrency. Any number of
 * instances poll at once, each device under one lease at a time; each poll's write carries its lease's
 * epoch and is refused when the lease moved on (docs/polling.md "Several poll instances"). The
 * `PollLeader`'s advisory lock (leader.ts) no longer gates polling: it still names one holder per
 * deployment, and an instance of a version before leases polls only while it holds it.
 */
export class PollWorker {
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The claim round between scans (see {@link CATCH_UP_MIN_MS}). */
  #catchUp: ReturnType<typeof setTimeout> | undefined;
  /** When that claim round runs (performance.now() clock). */
  #catchUpAt = Infinity;
  /** When the next scan tick is due (performance.now() clock). */
  #nextTickAt = 0;
  /** When the latest claim round (scan or catch-up) started (performance.now() clock). */
  #roundAt = 0;
  #leader: PollLeader;
  /** Due devices selected by the latest scan and not started yet, oldest poll first. */
  #queue: Lease[] = [];
  /** No more due devices to claim in the current scan. */
  #exhausted = false;
  /** A scan's loop is claiming and starting polls. */
  #pumping = false;
  #leases: PollLeases;
  /** Devices being polled now (until the device's part of the cycle is over). */
  #active = 0;
  /** Polls whose results wait for the store's write. */
  #storing = 0;
  /** Pumps waiting for a place to free up. */
  #freed = new Set<() => void>();
  /** Polls started since {@link #rampAt} (the start ramp with the API first). */
  #ramped = 0;
  #rampAt = -Infinity;
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
    this.#leases = poller.leases;
  }

  /** Whether this instance holds the singular poll lock (always, on embedded PGlite: one process by construction). */
  get holdsLock(): boolean {
    return this.#leader.isLeader;
  }

  /** Start scanning: the first scan now, then one every `scanSeconds`. */
  async start(): Promise<void> {
    await this.#leader.start();
    this.#leases.start();
    log.info("Polling worker {id} started: scan every {scan} s, concurrency {concurrency}", {
      id: this.#leases.id,
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
      this.#nextTickAt = performance.now() + this.opts.scanSeconds * 1000;
      this.#scanTick();
    })();
  }

  /**
   * After a scan or claim round has started its polls: when a device becomes claimable before the next scan
   * (it falls due, or the lease of an instance that died or hangs expires), a claim round runs then, at most
   * every {@link CATCH_UP_MIN_MS}. So a device is polled at its due time (not at the next scan) and a lost
   * lease is taken over when it expires, whatever the scan period.
   */
  #scheduleCatchUp(): void {
    if (this.#stopping || this.#nextTickAt === 0) return;
    (async () => {
      const wait = await this.#untilDue().catch(() => Infinity);
      if (this.#stopping) return;
      const at = Math.max(
        performance.now() + Math.max(0, wait) + WAKE_MARGIN_MS,
        this.#roundAt + CATCH_UP_MIN_MS,
      );
      if (!(at < this.#nextTickAt - CATCH_UP_MIN_MS)) return; // the next scan comes first
      if (at >= this.#catchUpAt) return; // an earlier round is already set
      clearTimeout(this.#catchUp);
      this.#catchUpAt = at;
      this.#catchUp = setTimeout(() => {
        this.#catchUp = undefined;
        this.#catchUpAt = Infinity;
        if (this.#stopping || this.#pumping || this.#selecting) return;
        this.scan(false).catch((e) => log.error("Claim round failed: {error}", { error: String(e) }));
      }, at - performance.now());
    })();
  }

  /**
   * Milliseconds, on the database clock, until the earliest enabled device can be claimed: it is due and its
   * lease is free or expired (0 or less when one can be claimed now).
   */
  async #untilDue(): Promise<number> {
    const r = await sql<{ ms: number | string | null; never: boolean }>`select
        extract(epoch from min(greatest(d.last_poll_at + d.poll_interval_seconds * interval '1 second',
          case when l.owner is not null then l.expires_at end)) - now()) * 1000 as ms,
        bool_or(d.last_poll_at is null and (l.owner is null or l.expires_at < now())) as never
      from devices d left join device_leases l on l.device_id = d.id where d.enabled`.execute(this.db.kysely);
    const row = r.rows[0];
    if (!row || row.never || row.ms === null) return 0;
    return Number(row.ms);
  }

  #scanTick() {
    if (this.#pumping) {
      // the previous scan is still claiming due devices: an overrun; it goes on claiming what is due now
      this.metrics.overruns.inc();
      this.overruns++;
      log.warn(
        "Poll overrun: the previous scan still has due devices to start, {active} polling",
        { active: this.#active },
      );
      this.#exhausted = false;
      return;
    }
    if (this.#selecting) return;
    this.scan().catch((e) => log.error("Scan failed: {error}", { error: String(e) }));
  }

  /**
   * One scan: confirm or take the singular lock (leader.ts), then claim due devices' leases batch by batch
   * as places free up, and poll them. Resolves when the polls this scan started are done. Scans may
   * overlap: a hung device never holds up the next scan, and a device is never polled twice at once.
   */
  async scan(full = true): Promise<void> {
    const t0 = performance.now();
    if (this.#selecting || this.#stopping) return;
    this.#roundAt = t0;
    this.#selecting = (async () => {
      await this.#leader.ensure();
      if (this.#stopping) return false;
      this.#exhausted = false;
      if (full) this.scans++;
      return true;
    })();
    try {
      if (!(await this.#selecting)) return;
    } finally {
      this.#selecting = null;
    }
    await this.#pump();
    if (full) this.metrics.scanDuration.observe((performance.now() - t0) / 1000);
  }

  /**
   * Poll the due devices: at most `concurrency` devices at once, counted until the device's part of its
   * cycle is over (session closed, payloads hashed). A poll whose results then wait for the store's group
   * commit no longer holds a device's place, so the next devices are polled while a batch is written; polls
   * in flight, those waiting included, stay at most {@link IN_FLIGHT_PER_PLACE} × `concurrency`, so a slow
   * database slows the polling down instead of piling up payloads. Leases are claimed only for places
   * free now, so that idle instances beside this one find due devices to claim.
   */
  async #pump(): Promise<void> {
    const polls: Promise<void>[] = [];
    // Devices this scan claimed: one whose poll recorded nothing (cancelled, busy, fenced) stays due, and is
    // left to the next scan rather than claimed again at once.
    const claimedNow = new Set<string>();
    this.#pumping = true;
    while (!this.#stopping) {
      const held = this.opts.busyConcurrency !== undefined && this.opts.foreground?.busy === true;
      const places = held ? this.opts.busyConcurrency! : this.opts.concurrency;
      // Polls in flight stay within the usual bound; held back, fewer places (results waiting for the store,
      // no CPU of the event loop's, do not hold one).
      const usual = Math.min(
        this.opts.concurrency - this.#active,
        IN_FLIGHT_PER_PLACE * this.opts.concurrency - this.#active - this.#storing,
      );
      const room = Math.min(places - this.#active, usual);
      if (room <= 0) {
        // Held back by the API: look again after a moment (the API may have gone quiet), or at a freed place.
        await this.#freedOr(held ? BUSY_RECHECK_MS : undefined);
        continue;
      }
      if (!this.#queue.length) {
        if (this.#exhausted) break;
        // Held back, it still claims a few devices per round trip (a claim reads every due device; one per poll
        // cost the API more than the polls it held back), within the places it would have when quiet.
        const want = held ? Math.min(usual, Math.max(room, BUSY_CLAIM)) : room;
        const claimed = await this.#leases.claimDue(want, [...claimedNow]).catch((e) => {
          log.warn("Claiming due devices failed: {error}", { error: String(e) });
          return [];
        });
        if (!claimed.length) this.#exhausted = true;
        this.#queue.push(...claimed);
        for (const l of claimed) claimedNow.add(l.deviceId);
        if (claimed.length) log.debug("Claimed {n} due device(s)", { n: claimed.length });
        continue;
      }
      // With the API first, a scan starts at most RAMP_POLLS polls per RAMP_MS: the first requests arriving
      // just after it starts do not find the event loop already full of 64 polls' handshakes.
      const ramp = this.#rampWait();
      if (ramp > 0) {
        await this.#freedOr(ramp);
        continue;
      }
      const lease = this.#queue.shift()!;
      const id = lease.deviceId;
      if (this.poller.isPolling(id)) { // a manual snapshot in this process got there first
        await this.#leases.release(lease);
        continue;
      }
      this.#active++;
      let storing = false;
      const deviceDone = () => {
        if (storing) return;
        storing = true;
        this.#active--;
        this.#storing++;
        this.#notifyFreed();
      };
      const guard = this.#leases.guard(lease);
      polls.push(
        this.poller.poll(id, { guard, signal: this.#abort.signal, deviceDone }).then(() => {}, (e) => {
          if (e instanceof LostLockError || e instanceof PollCancelledError) return;
          if (e instanceof DeviceBusyError) { // an instance of a version before leases is polling it
            log.debug("Skipped device {id}: being polled by another instance", { id });
            return;
          }
          if (!(e instanceof NotFoundError)) { // deleted since the claim
            log.error("Poll of device {id} failed: {error}", { id, error: String(e) });
          }
        }).finally(async () => {
          await this.#leases.release(lease);
          if (storing) this.#storing--;
          else this.#active--;
          this.#notifyFreed();
        }),
      );
    }
    this.#pumping = false;
    this.#scheduleCatchUp();
    // Claimed but not started (stopping): give them back at once.
    for (const lease of this.#queue.splice(0)) await this.#leases.release(lease);
    await Promise.all(polls);
    if (polls.length) this.#scheduleCatchUp(); // its own leases are given back: their devices' next due time
  }

  /** Resolves when a place frees up, or after `ms` when given. */
  #freedOr(ms?: number): Promise<void> {
    return new Promise<void>((r) => {
      const wake = () => {
        clearTimeout(timer);
        this.#freed.delete(wake);
        r();
      };
      const timer = ms === undefined ? undefined : setTimeout(wake, ms);
      this.#freed.add(wake);
    });
  }

  /** With the API first: 0 when a poll may start now (counted), else the milliseconds until the next step. */
  #rampWait(): number {
    if (this.opts.busyConcurrency === undefined) return 0;
    const now = performance.now();
    if (now - this.#rampAt >= RAMP_MS) {
      this.#rampAt = now;
      this.#ramped = 0;
    }
    if (this.#ramped >= RAMP_POLLS) return Math.max(1, RAMP_MS - (now - this.#rampAt));
    this.#ramped++;
    return 0;
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
    clearTimeout(this.#catchUp);
    this.#wake?.();
    this.#notifyFreed();
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
    await this.poller.close();
    await this.#leases.stop();
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
