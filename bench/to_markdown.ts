/**
 * Markdown tables of a results file, one per scenario, for BENCHMARKS.md:
 * `deno run -A bench/to_markdown.ts bench/results-full.json`.
 *
 * @module
 */
import type { Figure } from "./_util.ts";

const file = Deno.args[0];
if (!file) {
  console.error("Usage: deno run -A bench/to_markdown.ts <results.json>");
  Deno.exit(2);
}
const results = JSON.parse(await Deno.readTextFile(file)) as {
  mode: string;
  command: string;
  startedAt: string;
  seconds: number;
  machine: Record<string, unknown>;
  figures: Figure[];
};
const m = results.machine;
console.log(
  `Run: \`${results.command}\` (${results.mode}), ${results.startedAt}, ${results.seconds} s; ` +
    `${m.nproc} CPU ${m.cpuModel}, ${m.memTotalGiB} GiB, load ${JSON.stringify(m.loadAvg)} → ` +
    `${JSON.stringify(m.loadAvgAtEnd)}, Deno ${m.deno}\n`,
);
const esc = (s: string) => s.replace(/\|/g, "\\|");
const params = (p: Record<string, unknown> = {}) =>
  Object.entries(p).filter(([, v]) => v !== null && typeof v !== "object").map(([k, v]) => `${k}=${v}`).join(
    ", ",
  );
for (const scenario of [...new Set(results.figures.map((f) => f.scenario))]) {
  const figs = results.figures.filter((f) => f.scenario === scenario);
  console.log(`#### ${scenario}\n`);
  console.log("| figure | value | parameters | target |");
  console.log("|---|---:|---|---|");
  for (const f of figs) {
    const target = f.target ? `${f.pass ? "met" : "**missed**"}: ${f.target}` : "";
    console.log(
      `| ${esc(f.name)} | ${f.value ?? "—"} ${f.unit} | ${esc(params(f.params))} | ${esc(target)} |`,
    );
  }
  const commands = [...new Set(figs.map((f) => f.command))];
  console.log(`\nCommand: ${commands.map((c) => `\`${c}\``).join(", ")}\n`);
}
