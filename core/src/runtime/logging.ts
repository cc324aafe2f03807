import { configure, drain, getJsonLinesFormatter, getStreamSink, getTextFormatter } from "@logtape/logtape";
import { settleWithin } from "../util/wait.ts";

let configured = false;

/**
 * Configure logging once per process. `json` writes JSON lines (one object per line) to stderr;
 * otherwise a readable text line. Secrets never reach a log: call sites pass ids and hostnames only.
 */
export async function setupLogging(
  opts: { format: "text" | "json"; level: "debug" | "info" | "warning" | "error" },
) {
  if (configured) return;
  configured = true;
  await configure({
    reset: true,
    sinks: {
      console: getStreamSink(Deno.stderr.writable, {
        formatter: opts.format === "json" ? getJsonLinesFormatter() : getTextFormatter({ value: "bare" }),
      }),
    },
    loggers: [
      { category: ["dutlab"], lowestLevel: opts.level, sinks: ["console"] },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["console"] },
    ],
  });
}

/**
 * Wait (at most `ms`) until the log lines written so far have reached stderr. The stream sink writes
 * asynchronously, so a `Deno.exit` right after a log call could drop its line (seen in CI: the poller's
 * "Released the poll lock", logged just before a clean exit, was missing once in 771 tests).
 */
export function flushLogs(ms = 1_000): Promise<void> {
  return settleWithin(drain(), ms);
}
