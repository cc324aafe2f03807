/**
 * The exit codes of `dutlab` (docs/ci.md "Command-line client"); stable: CI scripts branch on them.
 */
export const EXIT = {
  /** The command did what was asked; pre-flight passed; the verdict is pass. */
  ok: 0,
  /** Checks failed, the verdict is not pass, a regression, or the service refused the request (409, 422). */
  failed: 1,
  /** Usage: an unknown command or flag, a bad or missing value (also a 400 from the service). */
  usage: 2,
  /** The service is unreachable or unavailable (network error, 5xx), or the token is missing a right (401, 403). */
  unavailable: 3,
  /** Not found: no such device, run, plan, token or endpoint (404). */
  notFound: 4,
} as const;
/** One of the exit codes in {@link EXIT}. */
export type ExitCode = typeof EXIT[keyof typeof EXIT];

/** An error the command reports as one line on stderr, exiting with `code`. */
export class CliError extends Error {
  constructor(message: string, readonly code: ExitCode) {
    super(message);
  }
}

/** A usage error (exit 2). */
export const usage = (message: string) => new CliError(message, EXIT.usage);

/** Text as one line: line breaks and runs of whitespace become one space. */
export const oneLine = (s: string) => s.replace(/\s+/g, " ").trim();
