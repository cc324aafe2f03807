import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import type { Metrics } from "./metrics.ts";
import type { GuardGroup, WriteGuard } from "./store.ts";
import { PREPARED } from "../db/prepared.ts";
import { logger } from "../util/log.ts";

const log = logger("poller");

/** One device's lease, as this instance claimed it. */
export interface Lease {
  deviceId: string;
  /** The lease epoch it was claimed under: a write is refused once the device's epoch moved on. */
  epoch: number;
  /** The device's `last_poll_at` at the claim: the due slot this lease polls (null: never polled). */
  slotAt: string | null;
}

/** How a {@link PollLeases} is set up. */
export interface LeaseOptions {
  /** Lease length in seconds (`DUT_POLL_LEASE_SECONDS`). */
  leaseSeconds: number;
  /** Due devices claimed per round trip (`DUT_POLL_CLAIM_BATCH`). */
  batch: number;
  /** This instance's id (default: host, pid and a random suffix). */
  id?: string;
}

/** A poll instance seen recently (`deno task poll-instances`). */
export interface PollInstance {
  id: string;
  host: string;
  pid: number;
  startedAt: string;
  seenAt: string;
  /** Leases it holds now (counted from the leases, not its last report). */
  leases: number;
  claims: number;
  takeovers: number;
  fenced: number;
}

/** Columns of a claim's answer. */
interface ClaimRow {
  device_id: string;
  epoch: string | number;
  slot_at: Date | string | null;
  late_s: number | string | null;
  prev_owner: string | null;
}

const iso = (d: Date | string | null) => d === null ? null : new Date(d).toISOString();

/**
 * Per-device poll leases shared by every poll instance of one database (migration 0025, docs/polling.md
 * "Several poll instances"). An instance claims a bounded batch of due devices with `FOR UPDATE SKIP LOCKED`
 * (instances never wait for each other's claims), each claim bumping the device's lease epoch. The poll's
 * write carries that epoch and the due slot ({@link guard}): it is refused, counted in
 * `dutlab_poll_fenced_writes_total` and never stored, when the lease moved to another instance, expired, or
 * the slot was already polled. Held leases are renewed every third of a lease; an instance that dies loses
 * them when they expire and the next scan of any instance takes them over. On embedded PGlite the same
 * statements run with one instance.
 */
export class PollLeases {
  readonly id: string;
  #held = new Map<string, Lease>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #claims = 0;
  #takeovers = 0;
  #fenced = 0;
  /** The tail of this instance's claims, run one at a time (see {@link #serial}). */
  #claiming: Promise<unknown> = Promise.resolve();

  constructor(private db: Kysely<Database>, private metrics: Metrics, readonly opts: LeaseOptions) {
    this.id = opts.id ?? `${hostName()}:${Deno.pid}:${crypto.randomUUID().slice(0, 8)}`;
  }

  /** Leases this instance holds now. */
  get held(): number {
    return this.#held.size;
  }

  /**
   * Claim up to `limit` (at most the batch size) due devices whose lease is free or expired, oldest poll
   * first (spec 1.1.2's due rule), but none of `exclude` (those the scan polled already). Records claims, takeovers and each poll's lateness against its due time.
   */
  claimDue(limit = this.opts.batch, exclude: readonly string[] = []): Promise<Lease[]> {
    const n = Math.max(0, Math.min(limit, this.opts.batch));
    if (n === 0) return Promise.resolve([]);
    return this.#serial(() => this.#claimDue(n, exclude));
  }

  async #claimDue(n: number, exclude: readonly string[]): Promise<Lease[]> {
    // A lease row of this instance for a device it no longer holds is one whose release failed (the database
    // went away mid-poll): it is free for this instance at once rather than after its expiry.
    const held = [...this.#held.keys()];
    const r = await sql<ClaimRow>`with due as (
        select d.id, d.last_poll_at, l.owner as prev_owner,
          extract(epoch from now() - (d.last_poll_at + d.poll_interval_seconds * interval '1 second')) as late_s
        from devices d left join device_leases l on l.device_id = d.id
        where d.enabled
          and (d.last_poll_at is null or d.last_poll_at + d.poll_interval_seconds * interval '1 second' < now())
          and (l.owner is null or l.expires_at < now() or (l.owner = ${this.id} and d.id <> all(${held}::uuid[])))
          and d.id <> all(${[...exclude]}::uuid[])
        order by d.last_poll_at nulls first
        limit ${n}
        for update of d skip locked
      ), claimed as (${this.#upsert(sql`select id, last_poll_at from due`, held)})
      select c.device_id, c.epoch, due.last_poll_at as slot_at, due.late_s, due.prev_owner
      from claimed c join due on due.id = c.device_id`.execute(this.db);
    return this.#took(r.rows, true);
  }

  /**
   * Claim one device's lease whether due or not (a manual snapshot, spec 4.4); null when another holder's
   * lease is still running.
   */
  claimDevice(deviceId: string): Promise<Lease | null> {
    return this.#serial(() => this.#claimDevice(deviceId));
  }

  async #claimDevice(deviceId: string): Promise<Lease | null> {
    const r = await sql<ClaimRow>`with dev as (
        select d.id, d.last_poll_at, l.owner as prev_owner from devices d
        left join device_leases l on l.device_id = d.id
        where d.id = ${deviceId} and (l.owner is null or l.expires_at < now())
      ), claimed as (${this.#upsert(sql`select id, last_poll_at from dev`)})
      select c.device_id, c.epoch, dev.last_poll_at as slot_at, null as late_s, dev.prev_owner
      from claimed c join dev on dev.id = c.device_id`.execute(this.db);
    return this.#took(r.rows, false)[0] ?? null;
  }

  /**
   * Runs this instance's claims one at a time. A claim round treats a lease row of this instance that it does
   * not hold as one whose release failed and takes it at once; a claim of this instance committed but not yet
   * recorded as held (a manual snapshot's, in flight beside the round) would look the same and be taken over,
   * fencing the manual snapshot's write (a 500 once in CI). Claims are rare (a round at most once a second, a
   * manual snapshot's every 100 ms while it waits), so running them in turn costs nothing measurable.
   */
  #serial<T>(claim: () => Promise<T>): Promise<T> {
    const run = this.#claiming.then(claim, claim);
    this.#claiming = run.catch(() => {});
    return run;
  }

  /** The insert-or-take-over of the claimed rows (`source` selects `id, last_poll_at`). */
  #upsert(source: ReturnType<typeof sql>, ownStale: string[] | null = null) {
    // The conflict arm re-checks the newest committed lease row: of two racing claims, one wins.
    return sql`insert into device_leases as l (device_id, owner, expires_at, epoch, slot_at, claimed_at)
      select s.id, ${this.id}, now() + ${this.opts.leaseSeconds} * interval '1 second', 1, s.last_poll_at, now()
      from (${source}) s
      on conflict (device_id) do update set owner = excluded.owner, expires_at = excluded.expires_at,
        epoch = l.epoch + 1, slot_at = excluded.slot_at, claimed_at = excluded.claimed_at
      where l.owner is null or l.expires_at < now()
        or (${ownStale !== null} and l.owner = ${this.id} and l.device_id <> all(${ownStale ?? []}::uuid[]))
      returning l.device_id, l.epoch`;
  }

  #took(rows: ClaimRow[], scheduled: boolean): Lease[] {
    const out: Lease[] = [];
    let takeovers = 0;
    for (const r of rows) {
      const lease = { deviceId: r.device_id, epoch: Number(r.epoch), slotAt: iso(r.slot_at) };
      this.#held.set(lease.deviceId, lease);
      out.push(lease);
      if (r.prev_owner !== null && r.prev_owner !== this.id) {
        this.#takeovers++;
        takeovers++;
        this.metrics.leaseTakeovers.inc();
        log.info("Took over device {id} from {owner} (lease expired)", {
          id: r.device_id,
          owner: r.prev_owner,
        });
      }
      if (scheduled && r.late_s !== null) this.metrics.pollLateness.observe(Math.max(0, Number(r.late_s)));
    }
    if (out.length && this.#timer !== undefined && takeovers) {
      // Report takeovers at once (`poll_instances`), not at the next heartbeat: the taker may die before it.
      this.heartbeat().catch((e) => log.warn("Instance report failed: {error}", { error: String(e) }));
    }
    this.#claims += out.length;
    this.metrics.leaseClaims.inc(out.length);
    this.metrics.leasesHeld.set(this.#held.size);
    return out;
  }

  /**
   * The write's fence, inside the store's transaction: the lease row is locked (no takeover until the write
   * commits) and must still be this instance's, under the claimed epoch, unexpired, with the device's
   * `last_poll_at` still the claimed slot (a slot polled already is not written twice).
   *
   * The (device, due slot) key: the device row is the key and its `last_poll_at` the slot. Every write of a
   * poll moves `last_poll_at` in the transaction that stores its snapshots, so a slot is consumed once. The
   * device row is locked here too (`for update of l, d`): a replay of the same write racing the first one
   * waits for it and is then checked against the committed row (PostgreSQL re-reads locked rows that changed
   * meanwhile), so it finds the slot gone and stores nothing. No unique index on `snapshots` is needed for
   * this (it would be a third index on the largest table for the same guarantee).
   */
  guard(lease: Lease): WriteGuard {
    const guard: WriteGuard = async (tx) => (await this.#fence(tx, [lease]))[0]!; // one result per lease
    this.#leaseOf.set(guard, lease);
    guard.group = this.#guards;
    return guard;
  }

  /** The leases of this instance's guards, for checking a batch's guards together ({@link fence}). */
  #leaseOf = new WeakMap<WriteGuard, Lease>();
  #guards: GuardGroup = {
    check: (tx, guards) => this.#fence(tx, guards.map((g) => this.#leaseOf.get(g)!)), // only this group's guards
  };

  /**
   * The fences of `leases` (in device id order) in one statement: their lease and device rows locked in that
   * order (`order by` comes before the row locks), one result per lease, false when its row is gone.
   */
  async #fence(tx: Kysely<Database>, leases: Lease[]): Promise<boolean[]> {
    const r = await sql<{ i: string; ok: boolean | null }>`${sql.raw(PREPARED)}
      select v.i, (l.owner = ${this.id} and l.epoch = v.epoch and l.expires_at > now()
          and d.last_poll_at is not distinct from l.slot_at) as ok
        from unnest(${leases.map((l) => l.deviceId)}::uuid[], ${leases.map((l) => String(l.epoch))}::bigint[])
          with ordinality as v(device_id, epoch, i)
        join device_leases l on l.device_id = v.device_id join devices d on d.id = l.device_id
        order by l.device_id for update of l, d`.execute(tx);
    const ok = leases.map(() => false);
    for (const row of r.rows) ok[Number(row.i) - 1] = row.ok === true;
    leases.forEach((lease, i) => {
      if (ok[i]) return;
      this.#fenced++;
      this.metrics.fencedWrites.inc();
      log.warn("Dropped the poll result of device {id}: its lease (epoch {epoch}) or slot moved on", {
        id: lease.deviceId,
        epoch: lease.epoch,
      });
    });
    return ok;
  }

  /** Give a lease back (the poll is over): only if it is still this instance's under that epoch. */
  async release(lease: Lease): Promise<void> {
    if (this.#held.get(lease.deviceId) === lease) this.#held.delete(lease.deviceId);
    this.metrics.leasesHeld.set(this.#held.size);
    await sql`update device_leases set owner = null, expires_at = null
      where device_id = ${lease.deviceId} and owner = ${this.id} and epoch = ${lease.epoch}`.execute(this.db)
      .catch((e) => log.debug("Lease release failed (it expires): {error}", { error: String(e) }));
  }

  /** Renew every lease held and report this instance in `poll_instances`; then every third of a lease. */
  start(): void {
    if (this.#timer !== undefined) return;
    const beat = () =>
      this.heartbeat().catch((e) => log.warn("Lease renewal failed: {error}", { error: String(e) }));
    this.#timer = setInterval(beat, this.opts.leaseSeconds * 1000 / 3);
    beat();
  }

  /** One renewal of the held leases (those another instance took are not renewed) and instance report. */
  async heartbeat(): Promise<void> {
    const ids = [...this.#held.keys()];
    if (ids.length) {
      await sql`update device_leases set expires_at = now() + ${this.opts.leaseSeconds} * interval '1 second'
        where owner = ${this.id} and device_id = any(${ids}::uuid[])`.execute(this.db);
    }
    await sql`insert into poll_instances (id, host, pid, leases, claims, takeovers, fenced)
      values (${this.id}, ${hostName()}, ${Deno.pid}, ${ids.length}, ${this.#claims}, ${this.#takeovers},
        ${this.#fenced})
      on conflict (id) do update set seen_at = now(), leases = excluded.leases, claims = excluded.claims,
        takeovers = excluded.takeovers, fenced = excluded.fenced`.execute(this.db);
  }

  /** Stop renewing, give back every lease still held and drop this instance from the list. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#held.clear();
    this.metrics.leasesHeld.set(0);
    await sql`update device_leases set owner = null, expires_at = null where owner = ${this.id}`
      .execute(this.db).catch(() => {});
    await sql`delete from poll_instances where id = ${this.id}`.execute(this.db).catch(() => {});
  }
}

/**
 * Poll instances seen within `withinSeconds`, with the leases each holds now (unexpired leases counted
 * from `device_leases`), busiest first.
 */
export async function listPollInstances(db: Kysely<Database>, withinSeconds = 300): Promise<PollInstance[]> {
  const r = await sql<{
    id: string;
    host: string;
    pid: number;
    started_at: Date | string;
    seen_at: Date | string;
    leases: number;
    claims: string | number;
    takeovers: string | number;
    fenced: string | number;
  }>`select i.id, i.host, i.pid, i.started_at, i.seen_at, i.claims, i.takeovers, i.fenced,
      (select count(*)::int from device_leases l where l.owner = i.id and l.expires_at > now()) as leases
    from poll_instances i where i.seen_at > now() - ${withinSeconds} * interval '1 second'
    order by leases desc, i.id`.execute(db);
  return r.rows.map((x) => ({
    id: x.id,
    host: x.host,
    pid: x.pid,
    startedAt: iso(x.started_at)!,
    seenAt: iso(x.seen_at)!,
    leases: x.leases,
    claims: Number(x.claims),
    takeovers: Number(x.takeovers),
    fenced: Number(x.fenced),
  }));
}

function hostName(): string {
  try {
    return Deno.hostname();
  } catch {
    return "unknown";
  }
}
