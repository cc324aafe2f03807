import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { asDeviceError } from "../devices/connect.ts";
import { DeviceError, type PollStatus, UnavailableError } from "../errors.ts";
import type { DeviceRow, DeviceStore } from "../devices/store.ts";
import type { TransportLimits } from "../transport/transport.ts";
import type { Metrics } from "./metrics.ts";
import { logger } from "../util/log.ts";
import type { Registry } from "../registry.ts";
import type { DeviceLocks } from "./device_locks.ts";
import { type Lease, PollLeases } from "./leases.ts";
import { volatileFor } from "../snapshots/volatile.ts";
import type { EventBus } from "../events/bus.ts";
import { type HashJob, HashPool } from "./hash_pool.ts";
import { logPoll, pollLog } from "./poll_log.ts";
import {
  type HashedSnapshot,
  LostLockError,
  type Outcome,
  PollStore,
  type PollStoreOptions,
  type PollWriteHook,
  type WriteGuard,
} from "./store.ts";

export { LostLockError, type PollWriteHook, type StoredBatch, type WriteGuard } from "./store.ts";

/** How {@link PollService.poll} is called. */
export interface PollOptions {
  /** Re-checked inside the write transaction (the worker's leadership); a manual snapshot has none. */
  guard?: WriteGuard;
  /** Cancels the cycle (worker shutdown): nothing is recorded. */
  signal?: AbortSignal;
  /**
   * Called once the device's part of the cycle is over (its session closed, the payloads hashed, or the
   * error known), before the results wait for the database write: the worker then starts the next device
   * (docs/polling.md "Polling", `DUT_POLL_CONCURRENCY`). Not called when the call joins a poll already running.
   */
  deviceDone?: () => void;
}

/** Outcome of one poll cycle (spec 4.4 response). */
export interface PollResult {
  ok: boolean;
  lastPollStatus: PollStatus;
  lastPollError: string;
  lastPollAt: string;
  snapshots: number;
}

/** The worker cancelled the cycle (shutdown grace period over): the cycle wrote nothing. */
export class PollCancelledError extends Error {
  override name = "PollCancelledError";
}

/** Another instance is polling the device right now (a scheduled poll skips it; that poll records it). */
export class DeviceBusyError extends Error {
  override name = "DeviceBusyError";
}

const log = logger("poller");

/** What a {@link PollService} is built from (named, so that callers cannot swap two of them). */
export interface PollServiceOptions {
  db: Kysely<Database>;
  devices: DeviceStore;
  registry: Registry;
  metrics: Metrics;
  /** Limits of every device request (timeouts, sizes, extra CA). */
  limits: TransportLimits;
  /** Budget of one whole poll cycle of a device, in milliseconds. */
  deviceTimeoutMs: number;
  /**
   * Per-device advisory locks (PostgreSQL): they keep an instance of a version before leases (which takes
   * them) from polling a device beside this one during a rolling upgrade; one process needs none.
   */
  locks?: DeviceLocks;
  /** The device leases (leases.ts); default: this instance's own, 32 per claim, a lease of at least 60 s. */
  leases?: PollLeases;
  /** Live events of polls (docs/http-api.md "Live events"); without it, polls publish none. */
  events?: EventBus;
  /** Write hooks of features, called in the poll store's transaction (see {@link PollWriteHook}). */
  writeHooks?: readonly PollWriteHook[];
  /** Hash workers (`DUT_POLL_WORKERS`, see `hash_pool.ts`); 0 or omitted: payloads are hashed in this thread. */
  hashWorkers?: number;
  /** How the poll store writes (production's per back end: `pollStoreOptions`, runtime/services.ts). */
  store?: Omit<PollStoreOptions, "hooks">;
}

/**
 * The poll cycle of spec 1.1 step 3, shared by the worker and the manual snapshot endpoint: decrypt the
 * credential, create the adapter, collect all, store each snapshot with its SHA-256, update the device,
 * log out and drop the credential. Snapshots and the device update are one transaction.
 * A device already being polled in this process is not polled twice: callers share the running cycle.
 */
export class PollService {
  #inflight = new Map<string, Promise<PollResult>>();
  /** The polls in {@link #inflight} that are manual snapshots (no write guard, no signal). */
  #manuals = new Set<Promise<PollResult>>();
  #store: PollStore;
  #hashes: HashPool;
  private db: Kysely<Database>;
  private devices: DeviceStore;
  private registry: Registry;
  private metrics: Metrics;
  private limits: TransportLimits;
  private deviceTimeoutMs: number;
  private locks?: DeviceLocks;
  /** This instance's device leases, shared with its worker. */
  readonly leases: PollLeases;

  constructor(options: PollServiceOptions) {
    ({
      db: this.db,
      devices: this.devices,
      registry: this.registry,
      metrics: this.metrics,
      limits: this.limits,
      deviceTimeoutMs: this.deviceTimeoutMs,
      locks: this.locks,
      events: this.events,
    } = options);
    this.leases = options.leases ?? new PollLeases(this.db, this.metrics, {
      leaseSeconds: Math.max(60, Math.ceil(this.deviceTimeoutMs / 1000) + 5),
      batch: 32,
    });
    this.#store = new PollStore(this.db, { ...options.store, hooks: options.writeHooks });
    this.#hashes = new HashPool(options.hashWorkers ?? 0);
  }

  /**
   * Write the results still queued in the poll store, stop the hash workers, if any, close the device-lock
   * session with its linger timer and write the pending summary of poll failures (shutdown); polls that still
   * run hash in this thread and open a lock session again.
   */
  async close(): Promise<void> {
    // Results still queued are written before the hash workers and the device locks go.
    await this.#store.close();
    this.#hashes.close();
    await this.locks?.close();
    // The failed polls counted since the last summary line are logged now, not lost with its timer.
    pollLog.flush();
  }

  /** Whether a poll of the device runs in this process now. */
  isPolling(deviceId: string): boolean {
    return this.#inflight.has(deviceId);
  }

  get inflightCount(): number {
    return this.#inflight.size;
  }

  /** Wait for every running poll (shutdown). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.#inflight.values()]);
  }

  /**
   * Poll a device now, or join the poll already running for it in this process (its result is
   * returned; the device is never polled twice at once). A caller without a write guard (the manual
   * snapshot) that joined a scheduled poll which then wrote nothing (lock lost, cancelled) polls anew; a
   * scheduled poll that finds a manual snapshot of the device running fails with DeviceBusyError (the manual
   * one is waiting for the lease that scheduled poll holds).
   * Across instances (PostgreSQL), a per-device lock does the same: a scheduled poll of a device that
   * another instance is polling fails with DeviceBusyError; a manual snapshot waits for that poll and
   * returns what it recorded.
   */
  poll(deviceId: string, opts: PollOptions = {}): Promise<PollResult> {
    const running = this.#inflight.get(deviceId);
    if (running) {
      if (opts.guard || opts.signal) {
        // A manual snapshot waits for the lease this scheduled poll holds: joining it would make each wait
        // for the other until the manual one gives up (503). The scheduled poll steps aside (its lease is
        // given back by its caller); the manual snapshot's write moves the device's slot on.
        if (this.#manuals.has(running)) {
          return Promise.reject(
            new DeviceBusyError(`Device ${deviceId} is being polled by a manual snapshot`),
          );
        }
        return running;
      }
      return running.catch((e) => {
        if (e instanceof LostLockError || e instanceof PollCancelledError) return this.poll(deviceId, opts);
        throw e;
      });
    }
    const manual = !(opts.guard || opts.signal);
    const run = manual ? this.#manual(deviceId, opts) : this.#exclusive(deviceId, opts);
    const p: Promise<PollResult> = run.finally(() => {
      this.#inflight.delete(deviceId);
      this.#manuals.delete(p);
    });
    this.#inflight.set(deviceId, p);
    if (manual) this.#manuals.add(p);
    return p;
  }

  /**
   * A manual snapshot (spec 4.4) takes the device's lease for its duration, waiting (bounded by a poll's time
   * limit) while another instance holds it; when that holder recorded a poll meanwhile, its result is
   * returned instead of polling twice.
   */
  async #manual(deviceId: string, opts: PollOptions): Promise<PollResult> {
    const time = (d: Date | string | null) => d === null ? null : new Date(d).getTime();
    const before = time((await this.devices.get(deviceId)).last_poll_at);
    const deadline = Date.now() + this.deviceTimeoutMs + 5_000;
    let lease: Lease | null = await this.leases.claimDevice(deviceId);
    const waited = !lease;
    while (!lease && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      lease = await this.leases.claimDevice(deviceId);
    }
    if (!lease) {
      throw new UnavailableError(
        "poller",
        "Device busy",
        `Device ${deviceId} stayed leased by another poll instance past a poll's time limit`,
        { retryAfterSeconds: 5 },
      );
    }
    try {
      if (waited) {
        const row = await this.devices.get(deviceId);
        if (time(row.last_poll_at) !== before) return await this.#recorded(row);
      }
      return await this.#exclusive(deviceId, { ...opts, guard: this.leases.guard(lease) }, true);
    } catch (e) {
      if (!(e instanceof LostLockError)) throw e;
      // Another instance took the lease over (this one paused past it, say): its poll of the slot stands.
      throw new UnavailableError(
        "poller",
        "Device busy",
        `The lease of device ${deviceId} was taken over by another poll instance during this poll; nothing was stored`,
        { retryAfterSeconds: 5 },
      );
    } finally {
      await this.leases.release(lease);
    }
  }

  async #exclusive(deviceId: string, opts: PollOptions, manual = false): Promise<PollResult> {
    const locks = this.locks;
    if (!locks) return await this.#cycle(deviceId, opts);
    const locked = async (run: () => Promise<PollResult>) => {
      try {
        return await run();
      } finally {
        await locks.unlock(deviceId);
      }
    };
    if (await locks.tryLock(deviceId)) return await locked(() => this.#cycle(deviceId, opts));
    // Held by a lease-aware instance (paused past its lease, say): the lease this poll holds fences it.
    if (!(await locks.heldByLegacy(deviceId).catch(() => true))) return await this.#cycle(deviceId, opts);
    if (!manual) throw new DeviceBusyError(`Device ${deviceId} is being polled elsewhere`);
    // A manual snapshot: wait for the other instance's poll (bounded by its time limit) and reuse it.
    const time = (d: Date | string | null) => d === null ? null : new Date(d).getTime();
    const before = time((await this.devices.get(deviceId)).last_poll_at);
    const deadline = Date.now() + this.deviceTimeoutMs + 5_000;
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      if (await locks.tryLock(deviceId)) {
        return await locked(async () => {
          const row = await this.devices.get(deviceId);
          if (time(row.last_poll_at) === before) return await this.#cycle(deviceId, opts); // it wrote nothing
          return await this.#recorded(row);
        });
      }
    }
    log.warn("Device {id} stayed locked by another instance past its time limit; polling anyway", {
      id: deviceId,
    });
    return await this.#cycle(deviceId, opts);
  }

  /** The poll result recorded on the device (by another instance's cycle). */
  async #recorded(row: DeviceRow): Promise<PollResult> {
    const at = new Date(row.last_poll_at as Date | string);
    // That poll's rows are its series' newest (migration 0017; a poll recorded before it counts none).
    const r = (await sql<{ n: number }>`select count(*)::int as n from snapshot_series se
      join snapshot_rows x on x.id = se.last_id where se.device_id = ${row.id} and x.collected_at = ${at}`
      .execute(this.db)).rows[0];
    return {
      ok: row.last_poll_status === "ok",
      lastPollStatus: row.last_poll_status as PollStatus,
      lastPollError: row.last_poll_error ?? "",
      lastPollAt: at.toISOString(),
      snapshots: Number(r?.n ?? 0),
    };
  }

  /** Live events of polls (docs/http-api.md "Live events"); see {@link PollServiceOptions.events}. */
  events?: EventBus;

  async #publish(
    row: DeviceRow,
    outcome: Outcome,
    at: Date,
    snapshots: Array<{ id: string; endpoint_label: string }>,
    executionId: string | null,
    announcements: Array<() => Promise<void>>,
  ): Promise<void> {
    const device = { deviceId: row.id, hostname: row.hostname, vendor: row.vendor };
    const publishing = [
      this.events!.publish("poll.finished", {
        ...device,
        status: outcome.status,
        summary: outcome.error,
        at: at.toISOString(),
      }),
    ];
    if (row.last_poll_status !== outcome.status) {
      publishing.push(this.events!.publish("device.status_changed", {
        ...device,
        from: row.last_poll_status,
        to: outcome.status,
        detail: outcome.error,
      }));
    }
    if (snapshots.length) {
      publishing.push(this.events!.publish("snapshot.stored", {
        ...device,
        snapshots: snapshots.map((s) => ({ id: s.id, endpointLabel: s.endpoint_label })),
        collectedAt: at.toISOString(),
        testRunExecutionId: executionId,
      }));
    }
    // What the features' write hooks announce (the runs feature's `alert.raised`), after the poll's events.
    for (const announce of announcements) publishing.push(announce());
    await Promise.all(publishing);
  }

  async #cycle(deviceId: string, opts: PollOptions): Promise<PollResult> {
    const started = performance.now();
    const row = await this.devices.get(deviceId);
    const reg = this.registry.adapters.get(row.vendor);
    let outcome: Outcome;
    const timeout = AbortSignal.timeout(this.deviceTimeoutMs);
    const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
    // Trust on first use: the certificate is pinned with the poll's results (one write per batch, not one
    // per new device: a first scan's pins no longer change the device list between batches).
    let pinned: string | null = null;
    try {
      const { conn, reg: active } = await this.devices.connect(row, this.limits, signal, (fp) => {
        pinned = fp;
      });
      try {
        const snapshots = await raceSignal(conn.session.collectAll(), signal, this.deviceTimeoutMs);
        const expected = active.adapter.labels;
        if (snapshots.length !== expected.length || snapshots.some((s, i) => s.label !== expected[i])) {
          throw new DeviceError(
            "adapter_error",
            `Adapter returned labels [${snapshots.map((s) => s.label).join(", ")}], expected [${
              expected.join(", ")
            }]`,
          );
        }
        const notes = conn.session.pollNotes?.() ?? [];
        outcome = {
          status: "ok",
          error: [`collected ${snapshots.length} snapshot(s)`, ...notes].join("; "),
          snapshots: await hashed(
            this.#hashes,
            snapshots.map((s) => ({
              label: s.label,
              payload: s.payload,
              volatile: volatileFor(this.registry, row.vendor, s.label),
            })),
            signal,
            this.deviceTimeoutMs,
          ),
        };
      } finally {
        await conn.close();
      }
    } catch (e) {
      const err = asDeviceError(e);
      outcome = { status: err.status, error: err.message, snapshots: [] };
    }
    outcome.pinnedCertSha256 = pinned;
    // The device's part is over (session closed, payloads hashed): the rest waits for the database.
    opts.deviceDone?.();
    if (opts.signal?.aborted) {
      // Cancelled by the worker (shutdown), not the device's fault: record nothing, it stays due.
      throw new PollCancelledError(`Poll of ${row.hostname} cancelled; nothing recorded`);
    }
    const { at, newPayloads, snapshots, executionId, announcements } = await this.#store.write(
      row,
      reg ? { name: reg.name, version: reg.version } : null,
      outcome,
      opts.guard,
      // The worker's scheduled poll (it alone passes deviceDone): may join a larger batch while the API is busy.
      opts.deviceDone !== undefined,
    );
    const seconds = (performance.now() - started) / 1000;
    this.metrics.polls.inc({ vendor: row.vendor, status: outcome.status });
    this.metrics.pollDuration.observe({ vendor: row.vendor }, seconds);
    if (outcome.status === "ok") this.metrics.snapshotsStored.inc({}, outcome.snapshots.length);
    this.metrics.payloadsStored.inc({}, newPayloads);
    logPoll(row, outcome, Math.round(seconds * 1000));
    if (this.events) {
      await this.#publish(row, outcome, at, snapshots ?? [], executionId ?? null, announcements ?? []);
    }
    return {
      ok: outcome.status === "ok",
      lastPollStatus: outcome.status,
      lastPollError: outcome.error,
      lastPollAt: at.toISOString(),
      snapshots: outcome.snapshots.length,
    };
  }
}

/**
 * The snapshots as the store writes them (`hashSnapshot`, on the hash workers when there are any), in order;
 * a payload without a JSON form is the adapter's fault (the first such payload names the error).
 */
async function hashed(
  pool: HashPool,
  jobs: HashJob[],
  signal: AbortSignal,
  ms: number,
): Promise<HashedSnapshot[]> {
  // On workers, the poll's time limit covers the hashing too (in this thread it cannot wait on anything).
  const out = await (pool.size ? raceSignal(pool.hashAll(jobs), signal, ms) : pool.hashAll(jobs));
  return out.map((h, i) => {
    if (!(h instanceof Error)) return h;
    throw new DeviceError(
      "adapter_error",
      `Adapter returned a "${jobs[i]!.label}" payload with no JSON form: ${h.message}`,
    );
  });
}

/** Settle with a timeout error when the signal fires, even if the adapter ignores it. */
function raceSignal<T>(p: Promise<T>, signal: AbortSignal, ms: number): Promise<T> {
  if (signal.aborted) {
    return Promise.reject(new DeviceError("timeout", `Poll exceeded its time limit of ${ms} ms`));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new DeviceError("timeout", `Poll exceeded its time limit of ${ms} ms`));
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
