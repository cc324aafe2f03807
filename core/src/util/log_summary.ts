/**
 * Log lines that summarise a flood (issue 49): of many events of one kind (refused requests, failed polls of
 * a scan), the first few are logged one by one and the rest are counted, then logged as one line per key
 * (reason, status) per interval with the count and the first few examples (sources, hostnames). The caller
 * logs every event at debug level itself, so `debug` keeps every line.
 *
 * @module
 */

/** One summary line's content: `count` events of `key` beyond those logged one by one. */
export interface LogSummaryLine {
  key: string;
  /** Events of this key not logged one by one in the interval. */
  count: number;
  /** The first few distinct examples among them (at most `examples`). */
  examples: string[];
  /** Length of the interval that ended, in seconds. */
  seconds: number;
}

/** Options of {@link LogSummary}. */
export interface LogSummaryOptions {
  /** Length of one interval; its summary is written when it ends (an unref'd timer) or at `flush()`. */
  intervalMs: number;
  /** Events logged one by one per interval, all keys together, before counting starts. */
  individual: number;
  /** Examples kept per key. */
  examples: number;
  /** Writes one summary line. */
  emit: (line: LogSummaryLine) => void;
}

/**
 * A per-interval counter of log events by key.
 *
 * @example
 * ```ts
 * const refused = new LogSummary({
 *   intervalMs: 60_000, individual: 3, examples: 5,
 *   emit: (l) => console.warn(`${l.count} more refused (${l.key}) from ${l.examples.join(", ")}`),
 * });
 * if (refused.note("missing", "127.0.0.1")) console.warn("Refused GET /api/devices: missing token");
 * refused.flush();
 * ```
 */
export class LogSummary {
  #logged = 0;
  #counts = new Map<string, { count: number; examples: string[] }>();
  #started = 0;
  #timer: ReturnType<typeof setTimeout> | null = null;

  constructor(readonly opts: LogSummaryOptions, readonly now: () => number = Date.now) {}

  /**
   * Record one event. True when the caller should log it on its own line (one of the first `individual`
   * of the interval); false when it is counted for the interval's summary line.
   */
  note(key: string, example: string): boolean {
    const t = this.now();
    if (this.#started === 0 || t - this.#started >= this.opts.intervalMs) {
      this.flush();
      this.#started = t;
    }
    if (this.#logged < this.opts.individual) {
      this.#logged++;
      return true;
    }
    let c = this.#counts.get(key);
    if (!c) this.#counts.set(key, c = { count: 0, examples: [] });
    c.count++;
    if (c.examples.length < this.opts.examples && !c.examples.includes(example)) c.examples.push(example);
    if (this.#timer === null) {
      const timer = setTimeout(() => {
        this.#timer = null;
        this.flush();
      }, Math.max(0, this.#started + this.opts.intervalMs - t));
      Deno.unrefTimer(timer as unknown as number);
      this.#timer = timer;
    }
    return false;
  }

  /** Write the summary lines of the current interval (one per key, keys in first-seen order) and start anew. */
  flush(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    const seconds = this.#started ? Math.max(1, Math.round((this.now() - this.#started) / 1000)) : 0;
    const counts = this.#counts;
    this.#counts = new Map();
    this.#logged = 0;
    this.#started = 0;
    for (const [key, c] of counts) this.opts.emit({ key, count: c.count, examples: c.examples, seconds });
  }
}
