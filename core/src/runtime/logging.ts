import { configure, getJsonLinesFormatter, getStreamSink, getTextFormatter } from "@logtape/logtape";

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
