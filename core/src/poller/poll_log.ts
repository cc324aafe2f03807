/**
 * The log lines of polls (issue 49): every poll at debug level; a device named at warning level when its
 * status changes to a failure (info when it is back to `ok`), but only for the first few changes of each
 * interval. The other changes of the interval are counted and logged as one line per status with the count
 * and the first few hostnames, so a scan of 5,000 unreachable devices writes a handful of lines, not 5,000.
 *
 * Kept apart from the poll cycle (cycle.ts calls {@link logPoll} in one place).
 *
 * @module
 */
import type { DeviceRow } from "../devices/store.ts";
import { logger } from "../util/log.ts";
import { LogSummary } from "../util/log_summary.ts";
import type { Outcome } from "./store.ts";

const log = logger("poller");

/** Devices named one by one per interval; the rest are summarised. */
export const POLL_LOG_INDIVIDUAL = 5;
/** Hostnames named in a summary line. */
export const POLL_LOG_EXAMPLES = 5;

/**
 * The status changes of one interval (one minute: the default scan interval), summarised per status.
 * `flush()` writes the pending summary at once (tests, shutdown).
 */
export const pollLog = new LogSummary({
  intervalMs: 60_000,
  individual: POLL_LOG_INDIVIDUAL,
  examples: POLL_LOG_EXAMPLES,
  emit: (l) => {
    const props = {
      count: l.count,
      status: l.key,
      seconds: l.seconds,
      hostnames: l.examples.join(", "),
      more: l.count > l.examples.length ? `, and ${l.count - l.examples.length} more` : "",
    };
    if (l.key === "ok") log.info("{count} more device(s) ok again in {seconds} s: {hostnames}{more}", props);
    else {log.warn(
        "Polls of {count} more device(s) failed in {seconds} s: {status}: {hostnames}{more}",
        props,
      );}
  },
});

/**
 * Log one poll: at debug level always; when the device's status changed to a failure (or back to `ok`), by
 * name if it is among the first few of the interval, else counted for the interval's summary line.
 */
export function logPoll(row: DeviceRow, outcome: Outcome, ms: number): void {
  const props = {
    hostname: row.hostname,
    vendor: row.vendor,
    status: outcome.status,
    previous: row.last_poll_status ?? "never polled",
    detail: outcome.error,
    ms,
  };
  log.debug("Polled {hostname} ({vendor}): {status} {detail} in {ms} ms", props);
  if (outcome.status === row.last_poll_status) return;
  if (outcome.status === "ok" && row.last_poll_status === null) return;
  if (!pollLog.note(outcome.status, row.hostname)) return;
  if (outcome.status !== "ok") {
    log.warn("Poll of {hostname} ({vendor}) failed: {status} (was {previous}): {detail}", props);
  } else {
    log.info("Poll of {hostname} ({vendor}) is ok again (was {previous})", props);
  }
}
