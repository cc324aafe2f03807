/**
 * The sweeper of `serve` (issue 52): every few seconds, expire the leases nobody renewed, time out queued
 * requests past their wait and grant what the queue can have. Any instance may run it at once (each step is a
 * transaction that skips rows another instance is ending), and every reservation call sweeps first, so a
 * stopped sweeper delays nothing a client looks at.
 *
 * @module
 */
import { logger } from "../util/log.ts";
import type { ReservationService } from "./service.ts";

/** How often `serve` sweeps. */
export const SWEEP_EVERY_MS = 5_000;

/** Start sweeping; returns the stop (awaited before the database closes). */
export function startSweeper(r: ReservationService, everyMs = SWEEP_EVERY_MS): () => Promise<void> {
  const log = logger("reservations");
  let running: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(async () => {
      try {
        const s = await r.sweep();
        if (s.expired || s.timedOut || s.granted) {
          log.info(
            "Reservations swept: {expired} expired, {timedOut} timed out, {granted} granted from the queue",
            { ...s },
          );
        }
      } catch (e) {
        log.warn("Reservation sweep failed (retried): {error}", { error: String(e) });
      }
    });
  }, everyMs);
  Deno.unrefTimer(timer);
  return async () => {
    clearInterval(timer);
    await running;
  };
}
