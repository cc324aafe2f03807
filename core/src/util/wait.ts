/**
 * Waiting on work that may not finish: shutdown steps that must not hold an exit up.
 *
 * @module
 */

/**
 * Resolves when `work` settles (fulfilled or rejected: its outcome is dropped) or after `ms`, whichever comes
 * first; the timer is cleared either way, so it does not keep the process alive.
 */
export async function settleWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    work.catch(() => {}),
    new Promise<void>((r) => timer = setTimeout(r, ms)),
  ]);
  clearTimeout(timer);
}
