/**
 * Whether the HTTP API is answering requests: background work gives way while it is, so that a dashboard stays
 * fast during a poll scan (docs/polling.md "The API comes first", BENCHMARKS.md section 7x).
 *
 * The service has one event loop: a scan at full speed keeps it busy (TLS, HTTP, hashing and, embedded, the
 * database's WebAssembly), and every API request then waits in line behind the scan's work. A request counts
 * from its arrival until its handler has answered (a stream's body, such as the event stream, does not count),
 * and the API stays "busy" {@link QUIET_MS} after the last one, so a client's requests in a row count as one
 * busy stretch.
 *
 * @module
 */

/** How long after its last answer the API still counts as busy. */
export const QUIET_MS = 100;

/** Counts the API's requests in flight and says whether background work should give way now. */
export class Foreground {
  #inFlight = 0;
  #lastEnd = -Infinity;

  /** @param quietMs how long after its last answer the API still counts as busy */
  constructor(readonly quietMs: number = QUIET_MS) {}

  /** A request arrives; the function returned ends it (once, whatever the number of calls). */
  enter(): () => void {
    this.#inFlight++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#inFlight--;
      this.#lastEnd = performance.now();
    };
  }

  /** Whether a request is being answered, or one was answered within `quietMs`. */
  get busy(): boolean {
    return this.#inFlight > 0 || performance.now() - this.#lastEnd < this.quietMs;
  }
}
