/**
 * `deno task bench [--quick] [--only poll,ingest,...]`: run the benchmark scenarios of issue 11, print a
 * table and write `bench/results/<timestamp>.json`. Each scenario runs in its own process
 * (`deno run -A bench/main.ts --scenario <name> [--quick]`, the command recorded with every figure);
 * scenarios that need more processes (device farm, service, floor client, server, load generator)
 * start them themselves.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { type Figure, lines, machine } from "./_util.ts";
import { compareFigures, formatCompare, readFigures } from "./_compare.ts";

/** What a scenario gets. */
export interface Ctx {
  quick: boolean;
  /** A temp dir for this scenario's files (deleted afterwards). */
  tmp: string;
  /** Progress line on stderr. */
  log(msg: string): void;
  /** The command that runs this scenario alone. */
  command: string;
}

export const SCENARIOS = [
  "poll",
  "ingest",
  "storage",
  "preflight",
  "api",
  "reports",
  "compare",
  "footprint",
  "diffs",
  "changes",
  "events",
  "evidence",
  "prune",
  "blackbox",
  "netbox",
  "webhooks",
  "scaleout",
  "labsize",
  "scan",
] as const;
type Scenario = typeof SCENARIOS[number];

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string" },
    scenario: { type: "string" },
    out: { type: "string" },
    keep: { type: "boolean", default: false },
    compare: { type: "string" },
    against: { type: "string" },
    threshold: { type: "string", default: "0.2" },
  },
});

const scenarioCommand = (name: string, quick: boolean) =>
  `deno run -A bench/main.ts --scenario ${name}${quick ? " --quick" : ""}`;

async function runScenario(name: Scenario, quick: boolean): Promise<Figure[]> {
  const mod = await import(`./scenarios/${name}.ts`) as { run(ctx: Ctx): Promise<Figure[]> };
  const tmp = await Deno.makeTempDir({ prefix: `dutlab-bench-${name}-` });
  const t0 = performance.now();
  try {
    return await mod.run({
      quick,
      tmp,
      command: scenarioCommand(name, quick),
      log: (msg) => console.error(`[${name} ${((performance.now() - t0) / 1000).toFixed(1)}s] ${msg}`),
    });
  } finally {
    if (!args.keep) await Deno.remove(tmp, { recursive: true }).catch(() => {});
    else console.error(`[${name}] kept ${tmp}`);
  }
}

async function printCompare(newFigures: Figure[]): Promise<number> {
  const rows = compareFigures(await readFigures(args.compare!), newFigures, Number(args.threshold));
  console.log(`\n== compare with ${args.compare} (worse beyond ${Number(args.threshold) * 100} %)`);
  for (const l of formatCompare(rows)) console.log(l);
  return rows.filter((r) => r.worse).length;
}

if (args.compare && args.against) {
  // Compare two results files without running anything.
  const worse = await printCompare(await readFigures(args.against));
  Deno.exit(worse ? 1 : 0);
}

if (args.scenario) {
  // Child mode: one scenario in this process; the result is the last stdout line.
  const figures = await runScenario(args.scenario as Scenario, args.quick!);
  console.log(`BENCH_RESULT ${JSON.stringify(figures)}`);
  Deno.exit(0);
}

const selected = (args.only ? args.only.split(",").map((s) => s.trim()) : [...SCENARIOS]) as Scenario[];
for (const s of selected) {
  if (!SCENARIOS.includes(s)) {
    console.error(`Unknown scenario "${s}"; known: ${SCENARIOS.join(", ")}`);
    Deno.exit(2);
  }
}

const quick = args.quick!;
const startedAt = new Date();
const machineAtStart = machine();
console.error(
  `dutlab bench (${quick ? "quick" : "full"}): ${machineAtStart.nproc} CPU (${machineAtStart.cpuModel}), ` +
    `${machineAtStart.memTotalGiB} GiB, load ${machineAtStart.loadAvg.join(" ")}`,
);
const all: Figure[] = [];
const runs: Array<{ scenario: string; seconds: number; ok: boolean; error?: string }> = [];
for (const name of selected) {
  const t0 = performance.now();
  // The scenario runs with the bench task's lockfile (deno.dev.lock): its test-only packages must not reach
  // deno.lock, the product's lockfile.
  const cmdArgs = [
    "run",
    "-A",
    "--lock=deno.dev.lock",
    "bench/main.ts",
    "--scenario",
    name,
    ...(quick ? ["--quick"] : []),
  ];
  if (args.keep) cmdArgs.push("--keep");
  const child = new Deno.Command(Deno.execPath(), {
    args: cmdArgs,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  })
    .spawn();
  const progress = (async () => {
    for await (const l of lines(child.stderr)) console.error(l);
  })();
  let result: Figure[] | null = null;
  const outText = new Response(child.stdout).text();
  const status = await child.status;
  await progress;
  const out = await outText;
  const line = out.split("\n").find((l) => l.startsWith("BENCH_RESULT "));
  if (line) result = JSON.parse(line.slice("BENCH_RESULT ".length));
  const seconds = (performance.now() - t0) / 1000;
  if (!status.success || !result) {
    console.error(`[${name}] FAILED (exit ${status.code})`);
    runs.push({ scenario: name, seconds, ok: false, error: out.slice(-1000) });
    continue;
  }
  runs.push({ scenario: name, seconds, ok: true });
  all.push(...result);
  printTable(name, result);
}

const machineAtEnd = machine();
const report = {
  mode: quick ? "quick" : "full",
  command: `deno task bench${quick ? " --quick" : ""}${args.only ? ` --only ${args.only}` : ""}`,
  startedAt: startedAt.toISOString(),
  finishedAt: new Date().toISOString(),
  seconds: Math.round((Date.now() - startedAt.getTime()) / 1000),
  machine: { ...machineAtStart, loadAvgAtEnd: machineAtEnd.loadAvg },
  runs,
  figures: all,
};
const out = args.out ?? `bench/results/${startedAt.toISOString().replace(/[:.]/g, "-")}.json`;
await Deno.mkdir(out.replace(/\/[^/]+$/, ""), { recursive: true });
await Deno.writeTextFile(out, JSON.stringify(report, null, 2) + "\n");
console.log(`\nWrote ${out} (${all.length} figures, ${report.seconds} s)`);
const worseCount = args.compare ? await printCompare(all) : 0;
if (runs.some((r) => !r.ok) || worseCount) Deno.exit(1);

function printTable(name: string, figures: Figure[]) {
  const rows = figures.map((f) => [
    f.scenario,
    f.name,
    f.value === null ? "—" : String(f.value),
    f.unit,
    Object.entries(f.params ?? {}).filter(([, v]) => typeof v !== "object").map(([k, v]) => `${k}=${v}`).join(
      " ",
    ),
    f.target ? `${f.pass ? "met" : "MISSED"} (${f.target})` : "",
  ]);
  const head = ["scenario", "figure", "value", "unit", "params", "target"];
  const widths = head.map((h, i) => Math.min(70, Math.max(h.length, ...rows.map((r) => r[i]!.length))));
  const fmt = (r: string[]) =>
    r.map((c, i) => (i === 2 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ");
  console.log(`\n== ${name} (${scenarioCommand(name, quick)})`);
  console.log(fmt(head));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const r of rows) console.log(fmt(r));
}
