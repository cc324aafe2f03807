/** Minimal Prometheus text-format metrics (counters, gauges, one histogram kind). */
type Labels = Record<string, string>;
const key = (l: Labels) =>
  Object.entries(l).sort().map(([k, v]) => `${k}="${v.replace(/["\\\n]/g, "_")}"`).join(",");

class Counter {
  values = new Map<string, number>();
  constructor(readonly name: string, readonly help: string) {}
  inc(labels: Labels = {}, by = 1) {
    const k = key(labels);
    this.values.set(k, (this.values.get(k) ?? 0) + by);
  }
  render(type = "counter"): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${type}`];
    if (this.values.size === 0 && type === "counter") lines.push(`${this.name} 0`);
    for (const [k, v] of this.values) lines.push(`${this.name}${k ? `{${k}}` : ""} ${v}`);
    return lines.join("\n");
  }
}

class Gauge extends Counter {
  set(v: number, labels: Labels = {}) {
    this.values.set(key(labels), v);
  }
  override render(): string {
    return super.render("gauge");
  }
}

class Histogram {
  #data = new Map<string, { buckets: number[]; sum: number; count: number }>();
  constructor(readonly name: string, readonly help: string, readonly bounds: number[]) {}
  observe(v: number, labels: Labels = {}) {
    const k = key(labels);
    let d = this.#data.get(k);
    if (!d) this.#data.set(k, d = { buckets: this.bounds.map(() => 0), sum: 0, count: 0 });
    this.bounds.forEach((b, i) => {
      if (v <= b) d!.buckets[i]++;
    });
    d.sum += v;
    d.count++;
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const [k, d] of this.#data) {
      const pre = k ? `${k},` : "";
      this.bounds.forEach((b, i) => lines.push(`${this.name}_bucket{${pre}le="${b}"} ${d.buckets[i]}`));
      lines.push(`${this.name}_bucket{${pre}le="+Inf"} ${d.count}`);
      lines.push(
        `${this.name}_sum${k ? `{${k}}` : ""} ${d.sum}`,
        `${this.name}_count${k ? `{${k}}` : ""} ${d.count}`,
      );
    }
    return lines.join("\n");
  }
}

/** The poller's metrics, served at `GET /metrics`. */
export class Metrics {
  polls = new Counter("dutlab_polls_total", "Poll cycles by vendor and resulting status");
  pollDuration = new Histogram("dutlab_poll_duration_seconds", "Duration of one device poll cycle", [
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
  ]);
  snapshotsStored = new Counter("dutlab_snapshots_stored_total", "Snapshots stored");
  payloadsStored = new Counter("dutlab_snapshot_payloads_stored_total", "New distinct payloads stored");
  scanDuration = new Histogram(
    "dutlab_scan_duration_seconds",
    "Duration of a worker scan (selecting and polling due devices)",
    [
      0.1,
      0.5,
      1,
      5,
      10,
      30,
      60,
      120,
    ],
  );
  overruns = new Counter(
    "dutlab_poll_overruns_total",
    "Scans that could not finish their due devices before the next scan",
  );
  lockHeld = new Gauge("dutlab_poll_lock_held", "1 when this instance holds the poll lock");
  authRefused = new Counter("dutlab_auth_refused_total", "Refused token attempts by reason");

  render(): string {
    return [
      this.polls,
      this.pollDuration,
      this.snapshotsStored,
      this.payloadsStored,
      this.scanDuration,
      this.overruns,
      this.lockHeld,
      this.authRefused,
    ]
      .map((m) => m.render()).join("\n") + "\n";
  }
}
