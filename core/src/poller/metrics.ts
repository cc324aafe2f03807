/**
 * Every Prometheus metric of dutlab, with prom-client (one registry per service instance): process metrics,
 * HTTP request count and duration by route template and status, the poller's metrics and refused tokens.
 */
import type { ReservationService } from "../reservations/service.ts";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

/** The metrics of one service instance, served at `GET /metrics`. */
export class Metrics {
  readonly registry = new Registry();
  polls = new Counter({
    name: "dutlab_polls_total",
    help: "Poll cycles by vendor and resulting status",
    labelNames: ["vendor", "status"] as const,
    registers: [this.registry],
  });
  pollDuration = new Histogram({
    name: "dutlab_poll_duration_seconds",
    help: "Duration of one device poll cycle",
    labelNames: ["vendor"] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  snapshotsStored = new Counter({
    name: "dutlab_snapshots_stored_total",
    help: "Snapshots stored",
    registers: [this.registry],
  });
  payloadsStored = new Counter({
    name: "dutlab_snapshot_payloads_stored_total",
    help: "New distinct payloads stored",
    registers: [this.registry],
  });
  scanDuration = new Histogram({
    name: "dutlab_scan_duration_seconds",
    help: "Duration of a worker scan (selecting and polling due devices)",
    buckets: [0.1, 0.5, 1, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });
  overruns = new Counter({
    name: "dutlab_poll_overruns_total",
    help: "Scans that could not finish their due devices before the next scan",
    registers: [this.registry],
  });
  lockHeld = new Gauge({
    name: "dutlab_poll_lock_held",
    help: "1 when this instance holds the poll lock",
    registers: [this.registry],
  });
  leasesHeld = new Gauge({
    name: "dutlab_poll_leases_held",
    help: 'Device leases this instance holds now (docs/polling.md "Several poll instances")',
    registers: [this.registry],
  });
  leaseClaims = new Counter({
    name: "dutlab_poll_lease_claims_total",
    help: "Device leases claimed by this instance (scheduled polls and manual snapshots)",
    registers: [this.registry],
  });
  leaseTakeovers = new Counter({
    name: "dutlab_poll_lease_takeovers_total",
    help: "Leases claimed from another instance whose lease had expired",
    registers: [this.registry],
  });
  fencedWrites = new Counter({
    name: "dutlab_poll_fenced_writes_total",
    help: "Poll results dropped because the device's lease or due slot had moved on (never stored)",
    registers: [this.registry],
  });
  pollLateness = new Histogram({
    name: "dutlab_poll_lateness_seconds",
    help: "How long after its due time a device's lease was claimed for a scheduled poll",
    buckets: [0.1, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300],
    registers: [this.registry],
  });
  authRefused = new Counter({
    name: "dutlab_auth_refused_total",
    help: "Refused bearer-token attempts by reason (missing, invalid, forbidden)",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  httpRequests = new Counter({
    name: "dutlab_http_requests_total",
    help: "HTTP requests by method, route template and status",
    labelNames: ["method", "route", "status"] as const,
    registers: [this.registry],
  });
  httpDuration = new Histogram({
    name: "dutlab_http_request_duration_seconds",
    help: "Time to the response headers, by method, route template and status",
    labelNames: ["method", "route", "status"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [this.registry],
  });
  webhookAttempts = new Counter({
    name: "dutlab_webhook_attempts_total",
    help: "Webhook delivery attempts by result (delivered, retry, failed: given up)",
    labelNames: ["result"] as const,
    registers: [this.registry],
  });
  webhookDuration = new Histogram({
    name: "dutlab_webhook_attempt_duration_seconds",
    help: "Duration of one webhook call",
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  webhookFailing = new Gauge({
    name: "dutlab_webhook_subscriptions_failing",
    help: "Webhook subscriptions marked failing (repeated failed attempts in a row)",
    registers: [this.registry],
  });
  netboxJournalAttempts = new Counter({
    name: "dutlab_netbox_journal_attempts_total",
    help: "NetBox write-back attempts (one journal entry of one device) by result (posted, retry)",
    labelNames: ["result"] as const,
    registers: [this.registry],
  });
  netboxJournalDuration = new Histogram({
    name: "dutlab_netbox_journal_attempt_duration_seconds",
    help: "Duration of one NetBox write-back attempt (device lookup and journal entry)",
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  netboxJournalQueued = new Gauge({
    name: "dutlab_netbox_journal_queued",
    help: "NetBox journal entries waiting in the write-back queue by status (pending: not tried yet, " +
      "failed: to be retried), read from the database (all instances)",
    labelNames: ["status"] as const,
    registers: [this.registry],
  });
  eventClients = new Gauge({
    name: "dutlab_event_stream_clients",
    help: "Clients connected to GET /api/events on this instance",
    registers: [this.registry],
  });

  reservations = new Gauge({
    name: "dutlab_reservations",
    help: "Open reservations by state (held, queued), read from the database (all instances)",
    labelNames: ["state"] as const,
    registers: [this.registry],
  });
  reservationsEnded = new Counter({
    name: "dutlab_reservations_ended_total",
    help: "Reservations this instance ended without a release: lease expired, or queue wait timed out",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  reservationsGranted = new Counter({
    name: "dutlab_reservations_granted_total",
    help: "Reservations this instance granted (at once or from the queue)",
    registers: [this.registry],
  });

  /** Read the reservation figures at each scrape (the gauges from the database, the counters from `r`). */
  watchReservations(r: ReservationService): void {
    const seen = { expired: 0, timedOut: 0, granted: 0 };
    const gauge = this.reservations;
    const ended = this.reservationsEnded;
    const granted = this.reservationsGranted;
    // deno-lint-ignore no-explicit-any
    (gauge as any).collect = async () => {
      // The counters first, before any await: the registry reads every metric at once, so a counter set
      // after the gauge's database read would show in the next scrape only.
      ended.inc({ reason: "expired" }, r.counts.expired - seen.expired);
      ended.inc({ reason: "timed_out" }, r.counts.timedOut - seen.timedOut);
      granted.inc(r.counts.granted - seen.granted);
      Object.assign(seen, {
        expired: r.counts.expired,
        timedOut: r.counts.timedOut,
        granted: r.counts.granted,
      });
      const open = await r.open().catch(() => null);
      if (open) {
        gauge.set({ state: "held" }, open.held);
        gauge.set({ state: "queued" }, open.queued);
      }
    };
    ended.inc({ reason: "expired" }, 0);
    ended.inc({ reason: "timed_out" }, 0);
  }

  /** Read the number of failing webhook subscriptions (every instance's deliveries count) at each scrape. */
  watchWebhooks(failing: () => Promise<number>): void {
    const gauge = this.webhookFailing;
    // deno-lint-ignore no-explicit-any
    (gauge as any).collect = async () => {
      const n = await failing().catch(() => null);
      if (n !== null) gauge.set(n);
    };
  }

  /** Read the NetBox write-back queue at each scrape (DUT_NETBOX_WRITEBACK=on). */
  watchNetBoxJournal(read: () => Promise<{ pending: number; failed: number }>): void {
    const gauge = this.netboxJournalQueued;
    // deno-lint-ignore no-explicit-any
    (gauge as any).collect = async () => {
      const q = await read().catch(() => null);
      if (q) {
        gauge.set({ status: "pending" }, q.pending);
        gauge.set({ status: "failed" }, q.failed);
      }
    };
  }

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    // Left out: the event-loop lag family (Deno does not implement perf_hooks.monitorEventLoopDelay, so it
    // would report constants and NaN) and the active handles/requests/resources gauges (Node internals Deno
    // does not track; their `_total` gauge names also fail `promtool check metrics`).
    for (const name of this.registry.getMetricsAsArray().map((m) => m.name)) {
      if (/^nodejs_(eventloop_lag|active_)/.test(name)) this.registry.removeSingleMetric(name);
    }
  }

  /** The Prometheus text exposition (format 0.0.4). */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
