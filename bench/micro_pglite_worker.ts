/**
 * Issue 53, PGlite off the event loop: the poll service's main-thread CPU per poll in its first scan, in
 * interleaved rounds of PGlite in the main thread (`DUT_PGLITE_WORKER=off`), PGlite in a Web Worker (`on`) and
 * PostgreSQL, against one device farm: a loaded, shared machine drifts, so the ratios within a round count.
 * One JSON line per run (with the 1-minute load average before it).
 *
 *     deno run -A --lock=deno.dev.lock bench/micro_pglite_worker.ts 100 3   # N devices, rounds
 *
 * @module
 */
import { startFarm } from "../bench/_farm_proc.ts";
import { pgliteTemplate } from "../bench/_db.ts";
const n = Number(Deno.args[0] ?? 100);
const rounds = Number(Deno.args[1] ?? 3);
const tmp = await Deno.makeTempDir({ prefix: "h53-ab-" });
const ctx = { quick: true, tmp, log: (m: string) => console.error(m), command: "ab" };
const template = await pgliteTemplate();
const farm = await startFarm(ctx, n);
const devFile = `${tmp}/devices-${n}.jsonl`;
await Deno.writeTextFile(devFile, farm.devices.slice(0, n).join("\n") + "\n");
const run = async (db: string, worker: string) => {
  const c = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--lock=deno.dev.lock",
      "bench/_poll_service.ts",
      "--devices",
      devFile,
      "--db",
      db,
      "--log-level",
      "warning",
    ],
    env: { BENCH_PGLITE_TEMPLATE: template, DUT_PGLITE_WORKER: worker },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const [o, e, s] = await Promise.all([
    new Response(c.stdout).text(),
    new Response(c.stderr).text(),
    c.status,
  ]);
  const last = o.trim().split("\n").pop() ?? "";
  if (!s.success || !last.startsWith("{")) throw new Error(e.slice(-2000));
  return JSON.parse(last);
};
const rows: Record<string, unknown>[] = [];
for (let r = 0; r < rounds; r++) {
  for (const [db, w] of [["pglite", "off"], ["pglite", "on"], ["postgres", "off"]] as const) {
    const load = (await Deno.readTextFile("/proc/loadavg")).split(" ")[0];
    const x = await run(db, w);
    const row = {
      round: r,
      db,
      worker: w,
      load,
      n,
      polled: x.polled,
      wallMs: Math.round(x.wallMs),
      mainCpu: +x.mainCpuMsPerPoll.toFixed(2),
      allCpu: +x.cpuMsPerPoll.toFixed(2),
      steadyMain: +x.steady.mainCpuMsPerPoll.toFixed(2),
      p95: Math.round(x.p95Ms),
      statuses: JSON.stringify(x.statuses),
    };
    rows.push(row);
    console.log(JSON.stringify(row));
  }
}
await farm.stop();
