/**
 * Reservations with leases (issue 52, docs/reservations.md). Every decision is one database transaction and
 * no state lives in memory, so several service instances never grant one device twice: a held device is a
 * row of `reservation_holds`, whose primary key is the device. A grant inserts every device's row or, when
 * one is taken, rolls back and grants nothing. An expired lease is released by whoever looks next (any
 * reservation call, and the sweeper every few seconds) with the reason recorded.
 *
 * @module
 */
import { type Kysely, sql, type Transaction } from "kysely";
import type { Database } from "../db/schema.ts";
import { ConflictError, InvalidInputError, NotFoundError } from "../errors.ts";
import type { EventBus } from "../events/bus.ts";
import { heldConflict, type Hold, holdsOf } from "./holds.ts";
import { reservationEvent } from "./notify.ts";
import { resolveSelector, TestbedStore } from "./testbeds.ts";

/** What a reservation request asks. */
export interface ReserveRequest {
  /** Who holds it: a token's name, a CI job URL, a person. */
  holder: string;
  purpose?: string | null;
  /** A testbed's name, or `deviceIds` (one of the two). */
  testbed?: string;
  deviceIds?: string[];
  /** The lease; the holder renews it before it ends. */
  leaseSeconds: number;
  /** Wait in the queue up to this long when a device is held (0 or absent: 409 at once). */
  waitSeconds?: number;
  /** Higher first among queued requests; equal priorities are first come, first served. */
  priority?: number;
  /** The token that made the request (audit). */
  createdBy?: string | null;
}

export type ReservationState = "queued" | "held" | "released" | "expired" | "timed_out";

/** A reservation as the API shows it. */
export interface ReservationView {
  id: string;
  holder: string;
  purpose: string | null;
  testbed: string | null;
  devices: Array<{ id: string; hostname: string }>;
  priority: number;
  state: ReservationState;
  leaseSeconds: number;
  requestedAt: string;
  waitUntil: string | null;
  grantedAt: string | null;
  expiresAt: string | null;
  endedAt: string | null;
  endReason: string | null;
  executionId: string | null;
}

/** What one sweep did. */
export interface SweepResult {
  expired: number;
  timedOut: number;
  granted: number;
}

/** Thrown inside a grant's transaction when a device is taken: the transaction rolls back. */
class Taken extends Error {}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());
const RETRYABLE = new Set(["40001", "40P01"]);

/** Reservations over one database. `now` is the clock every lease is measured with (tests move it). */
export class ReservationService {
  readonly testbeds: TestbedStore;
  /** Counters since start, read by the metrics. */
  readonly counts = { granted: 0, expired: 0, timedOut: 0, refused: 0 };

  constructor(
    private db: Kysely<Database>,
    private events?: EventBus,
    readonly now: () => Date = () => new Date(),
  ) {
    this.testbeds = new TestbedStore(db);
  }

  /** The devices a request names (a testbed's, or its ids), sorted by id; 422 when it names none. */
  async devicesOf(
    req: Pick<ReserveRequest, "testbed" | "deviceIds">,
  ): Promise<Array<{ id: string; hostname: string }>> {
    if ((req.testbed === undefined) === (req.deviceIds === undefined)) {
      throw new InvalidInputError("Give either testbed or deviceIds", {
        errors: [{ field: "testbed", message: "give either testbed or deviceIds" }],
        unprocessable: true,
      });
    }
    const devices = req.testbed !== undefined
      ? (await this.testbeds.get(req.testbed)).devices
      : await resolveSelector(this.db, { deviceIds: [...new Set(req.deviceIds)] });
    if (!devices.length) {
      throw new InvalidInputError(`The testbed ${JSON.stringify(req.testbed)} selects no device`, {
        errors: [{ field: "testbed", message: "selects no device" }],
        unprocessable: true,
      });
    }
    return [...devices].sort((a, b) => a.id < b.id ? -1 : 1);
  }

  /**
   * Reserve every device or none. Granted: `held`. A device held (or wanted by an earlier queued request
   * of at least this priority): with `waitSeconds`, `queued` until granted or timed out; without, a 409
   * naming who holds what until when.
   */
  async reserve(req: ReserveRequest): Promise<ReservationView> {
    const devices = await this.devicesOf(req);
    await this.sweep();
    const id = crypto.randomUUID();
    const ids = devices.map((d) => d.id);
    const attempt = () =>
      this.#grant(async (tx) => {
        const ahead = await sql<{ id: string }>`select id::text from reservations where state = 'queued'
          and priority >= ${req.priority ?? 0} and device_ids && ${ids}::uuid[] limit 1`.execute(tx);
        if (ahead.rows.length) throw new Taken();
        await this.#insert(tx, id, req, ids, "held");
        await this.#hold(tx, id, ids, req.leaseSeconds);
        await reservationEvent(tx, "dutlab.reservation.granted", id);
      });
    let holds: Hold[] = [];
    // A holder that released between the refused grant and the read of the holds: try again.
    for (let tries = 0; tries < 3; tries++) {
      if (await attempt()) return await this.#announce(id, "reservation.granted");
      holds = await holdsOf(this.db, ids);
      if (holds.length) break;
    }
    if (req.waitSeconds) {
      await this.#tx(async (tx) => {
        await this.#insert(tx, id, req, ids, "queued");
        await reservationEvent(tx, "dutlab.reservation.queued", id);
      });
      await this.sweep(); // the holder may have released meanwhile
      const v = await this.get(id);
      await this.#publish(v.state === "held" ? "reservation.granted" : "reservation.queued", v);
      return v;
    }
    this.counts.refused++;
    if (!holds.length) {
      throw new ConflictError(
        "Earlier queued requests wait for these devices: queue behind them (waitSeconds)",
        {
          errors: [{ field: "deviceIds", message: "wanted by an earlier queued request" }],
        },
      );
    }
    throw heldConflict("Not reserved", holds, "nothing was reserved; wait with waitSeconds");
  }

  /** Extend a held lease by `leaseSeconds` from now (default: its lease); 409 once it has ended. */
  async renew(id: string, leaseSeconds?: number): Promise<ReservationView> {
    await this.sweep();
    const now = this.now();
    const r = await sql<{ id: string }>`update reservations
      set expires_at = ${now}::timestamptz + make_interval(secs => coalesce(${
      leaseSeconds ?? null
    }::int, lease_seconds)),
        lease_seconds = coalesce(${leaseSeconds ?? null}::int, lease_seconds)
      where id = ${id}::uuid and state = 'held' returning id::text`.execute(this.db);
    const v = await this.get(id);
    if (!r.rows.length) {
      throw new ConflictError(`The reservation ${id} is ${v.state}${v.endReason ? `: ${v.endReason}` : ""}`, {
        extra: { state: v.state },
      });
    }
    return v;
  }

  /** Release a held reservation, or withdraw a queued one, with the reason; then grant what waited. */
  async release(id: string, reason: string): Promise<ReservationView> {
    await this.get(id);
    const now = this.now();
    const ended = await this.#tx(async (tx) => {
      const r = await sql<{ id: string }>`update reservations set state = 'released', ended_at = ${now},
        end_reason = ${reason} where id = ${id}::uuid and state in ('held','queued') returning id::text`
        .execute(tx);
      await tx.deleteFrom("reservation_holds").where("reservation_id", "=", id).execute();
      if (r.rows.length) await reservationEvent(tx, "dutlab.reservation.released", id);
      return r.rows.length > 0;
    });
    const v = await this.get(id);
    if (ended) await this.#publish("reservation.released", v);
    await this.sweep();
    return v;
  }

  /** Bind a held reservation to a run: it does not expire while the run is active. */
  async bindRun(id: string, executionId: string): Promise<void> {
    await this.db.updateTable("reservations").set({ execution_id: executionId }).where("id", "=", id)
      .where("state", "=", "held").execute();
  }

  /** Release every reservation a run held (its end). */
  async releaseRun(executionId: string): Promise<void> {
    const rows = await this.db.selectFrom("reservations").select(sql<string>`id::text`.as("id"))
      .where("execution_id", "=", executionId).where("state", "=", "held").execute();
    for (const r of rows) await this.release(r.id, `run ${executionId} finished`);
  }

  /**
   * Expire leases past their end (not while their run is active), time out queued requests past their wait,
   * and grant queued requests whose devices are free: higher priority first, then first come; a request
   * that cannot be granted blocks later ones that want its devices.
   */
  async sweep(): Promise<SweepResult> {
    const now = this.now();
    const expired = await this.#tx(async (tx) => {
      const r = await sql<{ id: string }>`update reservations r set state = 'expired', ended_at = ${now},
          end_reason = 'lease ended at ' || to_char(r.expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
            || ' without renewal (holder ' || r.holder || ')'
        where r.id in (select id from reservations where state = 'held' and expires_at <= ${now}
          and (execution_id is null or not exists (select 1 from test_runs t
            where t.execution_id = reservations.execution_id and t.status = 'active'))
          order by id for update skip locked)
        returning r.id::text`.execute(tx);
      const ids = r.rows.map((x) => x.id);
      if (ids.length) {
        await sql`delete from reservation_holds where reservation_id = any(${ids}::uuid[])`.execute(tx);
      }
      for (const id of ids) await reservationEvent(tx, "dutlab.reservation.expired", id);
      return ids;
    });
    const timedOut = await this.#tx(async (tx) => {
      const r = await sql<{ id: string }>`update reservations set state = 'timed_out', ended_at = ${now},
          end_reason = 'waited until ' || to_char(wait_until at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
            || ': the devices stayed held'
        where state = 'queued' and wait_until <= ${now} returning id::text`.execute(tx);
      for (const x of r.rows) await reservationEvent(tx, "dutlab.reservation.expired", x.id);
      return r;
    });
    this.counts.expired += expired.length;
    this.counts.timedOut += timedOut.rows.length;
    for (const id of expired) await this.#publish("reservation.expired", await this.get(id));
    for (const r of timedOut.rows) await this.#publish("reservation.expired", await this.get(r.id));
    return { expired: expired.length, timedOut: timedOut.rows.length, granted: await this.#promote() };
  }

  async #promote(): Promise<number> {
    const queued = await sql<{ id: string; device_ids: string[]; lease_seconds: number }>`select id::text,
      device_ids::text[] as device_ids, lease_seconds from reservations where state = 'queued'
      order by priority desc, requested_at, id`.execute(this.db);
    const blocked = new Set<string>();
    let granted = 0;
    for (const q of queued.rows) {
      const ids = [...q.device_ids].sort();
      const ok = !ids.some((d) => blocked.has(d)) && await this.#grant(async (tx) => {
        const r = await sql`update reservations set state = 'held' where id = ${q.id}::uuid
          and state = 'queued'`.execute(tx);
        if (Number(r.numAffectedRows ?? 0) !== 1) throw new Taken();
        await this.#hold(tx, q.id, ids, q.lease_seconds);
        await reservationEvent(tx, "dutlab.reservation.granted", q.id);
      });
      if (ok) {
        granted++;
        await this.#announce(q.id, "reservation.granted");
      } else ids.forEach((d) => blocked.add(d));
    }
    return granted;
  }

  /** Insert the holds of `ids` (sorted, so concurrent grants lock in one order) or throw {@link Taken}. */
  async #hold(tx: Transaction<Database>, id: string, ids: string[], leaseSeconds: number): Promise<void> {
    const r = await sql<{ device_id: string }>`insert into reservation_holds (device_id, reservation_id)
      select d, ${id}::uuid from unnest(${ids}::uuid[]) as d order by d
      on conflict (device_id) do nothing returning device_id`.execute(tx);
    if (r.rows.length !== ids.length) throw new Taken();
    // Read after the holds are taken: a previous holder's release committed before, so its end is earlier.
    const now = this.now();
    await sql`update reservations set granted_at = ${now},
      expires_at = ${now}::timestamptz + make_interval(secs => ${leaseSeconds}) where id = ${id}::uuid`
      .execute(tx);
  }

  async #insert(
    db: Kysely<Database>,
    id: string,
    req: ReserveRequest,
    ids: string[],
    state: ReservationState,
  ) {
    const now = this.now();
    await db.insertInto("reservations").values({
      id,
      holder: req.holder,
      purpose: req.purpose ?? null,
      testbed: req.testbed ?? null,
      device_ids: sql`${ids}::uuid[]` as unknown as string[],
      priority: req.priority ?? 0,
      state,
      lease_seconds: req.leaseSeconds,
      requested_at: now,
      wait_until: state === "queued" ? new Date(now.getTime() + (req.waitSeconds ?? 0) * 1000) : null,
      created_by: req.createdBy ?? null,
    }).execute();
  }

  /** Run a grant; false when a device was taken (everything rolled back). */
  async #grant(fn: (tx: Transaction<Database>) => Promise<void>): Promise<boolean> {
    try {
      await this.#tx(fn);
      this.counts.granted++;
      return true;
    } catch (e) {
      if (e instanceof Taken) return false;
      throw e;
    }
  }

  /** A transaction, retried on a deadlock or serialization failure (PostgreSQL). */
  async #tx<T>(fn: (tx: Transaction<Database>) => Promise<T>): Promise<T> {
    for (let attempt = 0;; attempt++) {
      try {
        return await this.db.transaction().execute(fn);
      } catch (e) {
        if (attempt < 5 && RETRYABLE.has((e as { code?: string }).code ?? "")) continue;
        throw e;
      }
    }
  }

  async #announce(id: string, type: "reservation.granted"): Promise<ReservationView> {
    const v = await this.get(id);
    await this.#publish(type, v);
    return v;
  }

  async #publish(
    type: "reservation.granted" | "reservation.queued" | "reservation.released" | "reservation.expired",
    v: ReservationView,
  ): Promise<void> {
    await this.events?.publish(type, {
      reservationId: v.id,
      holder: v.holder,
      testbed: v.testbed,
      deviceIds: v.devices.map((d) => d.id),
      state: v.state,
      expiresAt: v.expiresAt,
      reason: v.endReason,
    });
  }

  /** One reservation, or 404. */
  async get(id: string): Promise<ReservationView> {
    const [v] = await this.#views(sql`r.id = ${id}::uuid`);
    if (!v) throw new NotFoundError(`No reservation ${id}`);
    return v;
  }

  /** Current (held) and queued reservations, the calendar: held by lease end, then the queue in its order. */
  async list(opts: { includeEnded?: boolean; limit?: number } = {}): Promise<ReservationView[]> {
    await this.sweep();
    const where = opts.includeEnded ? sql`true` : sql`r.state in ('held','queued')`;
    return await this.#views(where, opts.limit ?? 500);
  }

  /** Numbers of held and queued reservations (the metrics' gauges). */
  async open(): Promise<{ held: number; queued: number }> {
    const r = await sql<{ state: string; n: number }>`select state, count(*)::int as n from reservations
      where state in ('held','queued') group by state`.execute(this.db);
    const n = (s: string) => r.rows.find((x) => x.state === s)?.n ?? 0;
    return { held: n("held"), queued: n("queued") };
  }

  /** The holds of devices (for the device list). */
  holds(deviceIds?: string[]): Promise<Hold[]> {
    return holdsOf(this.db, deviceIds);
  }

  async #views(where: ReturnType<typeof sql>, limit = 500): Promise<ReservationView[]> {
    const r = await sql<
      Record<string, unknown>
    >`select r.id::text, r.holder, r.purpose, r.testbed, r.priority,
        r.state, r.lease_seconds, r.requested_at, r.wait_until, r.granted_at, r.expires_at, r.ended_at,
        r.end_reason, r.execution_id::text,
        coalesce((select json_agg(json_build_object('id', d.id::text, 'hostname', d.hostname) order by d.hostname)
          from devices d where d.id = any(r.device_ids)), '[]'::json) as devices
      from reservations r where ${where}
      order by case r.state when 'held' then 0 when 'queued' then 1 else 2 end,
        case when r.state = 'held' then r.expires_at end, r.priority desc, r.requested_at, r.id
      limit ${limit}`.execute(this.db);
    return r.rows.map((x) => ({
      id: x.id as string,
      holder: x.holder as string,
      purpose: x.purpose as string | null,
      testbed: x.testbed as string | null,
      devices:
        (typeof x.devices === "string" ? JSON.parse(x.devices) : x.devices) as ReservationView["devices"],
      priority: x.priority as number,
      state: x.state as ReservationState,
      leaseSeconds: x.lease_seconds as number,
      requestedAt: iso(x.requested_at as Date)!,
      waitUntil: iso(x.wait_until as Date | null),
      grantedAt: iso(x.granted_at as Date | null),
      expiresAt: iso(x.expires_at as Date | null),
      endedAt: iso(x.ended_at as Date | null),
      endReason: x.end_reason as string | null,
      executionId: x.execution_id as string | null,
    }));
  }
}
