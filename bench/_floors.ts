/**
 * The floors of issue 53: the PGlite start-up and memory floor (bench/_pglite_floor.ts) run from a scenario,
 * and the figures that put a service start beside it.
 *
 * @module
 */
import { type Figure, freePort, round, statusMiB, stopChild, waitFor200 } from "./_util.ts";
import { PGLITE_SHARED_BUFFERS } from "../core/harness/core.ts";

/** The command line of the PGlite floor (bench/_pglite_floor.ts), as recorded with its figures. */
export const pgliteFloorCommand = (cold: boolean, sharedBuffers?: string) =>
  `deno run -A --lock=deno.dev.lock bench/_pglite_floor.ts --data ${
    cold ? "<new dir> --cold" : "<the same data dir>"
  }${sharedBuffers ? ` --shared-buffers ${sharedBuffers}` : ""}`;

/**
 * The PGlite floor (bench/_pglite_floor.ts, issue 53) on data directory `dir` (`cold`: made from the shipped
 * template by PGlite itself; `sharedBuffers`: PGlite's pool, else its default): milliseconds from spawn to
 * its first 200, and its RSS `idleMs` later (idle, after its one query).
 */
export async function pgliteFloor(
  dir: string,
  cold: boolean,
  sharedBuffers?: string,
  idleMs = 2_000,
): Promise<{ ms: number; rssMiB: number }> {
  const port = freePort();
  const t0 = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `--lock=${new URL("../deno.dev.lock", import.meta.url).pathname}`,
      new URL("./_pglite_floor.ts", import.meta.url).pathname,
      "--data",
      dir,
      ...(cold ? ["--cold"] : []),
      ...(sharedBuffers ? ["--shared-buffers", sharedBuffers] : []),
    ],
    env: { PORT: String(port) },
    stdin: "null",
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  try {
    const ms = await waitFor200(`http://127.0.0.1:${port}/`, t0, 120_000, child);
    await new Promise((r) => setTimeout(r, idleMs));
    return { ms, rssMiB: statusMiB("VmRSS", child.pid) };
  } finally {
    await stopChild(child, 15_000);
  }
}

export const FLOOR_NOTE =
  "bench/_pglite_floor.ts: the service's PGlite build opening the data dir, one query, " +
  "Deno.serve answering 200 (issue 53); run just before the start it divides";

/** The PGlite floor's start-up (issue 53) and the service's start ÷ it, with the target of the phase. */
export function floorFigures(
  fig: (f: Omit<Figure, "scenario" | "command"> & { command?: string }) => Figure,
  phase: "cold" | "restart",
  serviceMs: number,
  floorMs: number,
  /** A restart of another setting (its figures' names): the floor before it, and its ratio (no target). */
  of?: string,
): Figure[] {
  const ratio = serviceMs / floorMs;
  const limit = phase === "cold" ? 1 : 1.25;
  return [
    fig({
      name: phase === "cold"
        ? "PGlite floor: first open of a data dir made from the template to first 200 (cold)"
        : `PGlite floor: open of the same data dir to first 200 (${of ? `before the ${of}` : "restart"})`,
      value: round(floorMs),
      unit: "ms",
      command: phase === "cold" ? pgliteFloorCommand(true) : pgliteFloorCommand(false, PGLITE_SHARED_BUFFERS),
      note: FLOOR_NOTE,
    }),
    fig({
      name: `${phase === "cold" ? "cold start" : of ?? "restart"} ÷ PGlite floor`,
      value: round(ratio, 2),
      unit: "×",
      ...(of ? {} : { target: `<= ${limit}`, pass: ratio <= limit }),
    }),
  ];
}
