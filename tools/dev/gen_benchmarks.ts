/**
 * BENCHMARKS.md, generated (issue 47 point 4): the figures of one named results file (its targets with their
 * floor or reference, and the key figures), followed by the method and reasoning of `bench/METHOD.md`.
 *
 * - `deno task bench:md` writes BENCHMARKS.md from `bench/results-full-s14.json` (`--results FILE` names
 *   another results file: record the newest full run there, then regenerate).
 * - `deno task bench:md --check` exits 1 when BENCHMARKS.md (or `--page PATH`) differs from the rendering.
 *
 * A selector below that matches no figure of the results file fails the generator, so a renamed figure cannot
 * silently drop out of the page.
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { Figure } from "../../bench/_util.ts";
import { fmtMarkdown } from "../_fmt_md.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
export const DEFAULT_RESULTS = "bench/results-full-s14.json";

interface Results {
  mode: string;
  command: string;
  startedAt: string;
  seconds: number;
  machine: {
    nproc: number;
    cpuModel: string;
    memTotalGiB: number;
    kernel: string;
    deno: string;
    loadAvg: number[];
    loadAvgAtEnd: number[];
  };
  runs: Array<{ scenario: string; seconds: number; ok: boolean }>;
  figures: Figure[];
}

/** A figure by scenario, name and some of its scalar params; exactly one must match. */
interface Selector {
  scenario: string;
  name: string;
  params?: Record<string, string | number>;
}

function find(results: Results, s: Selector): Figure {
  const hits = results.figures.filter((f) =>
    f.scenario === s.scenario && f.name === s.name &&
    Object.entries(s.params ?? {}).every(([k, v]) => f.params?.[k] === v)
  );
  if (hits.length !== 1) {
    throw new Error(
      `gen_benchmarks: ${hits.length} figures match ${
        JSON.stringify(s)
      } in the results file (exactly 1 needed)`,
    );
  }
  return hits[0]!;
}

const num = (v: number | null) =>
  v === null
    ? "—"
    : Math.abs(v) >= 1000
    ? v.toLocaleString("en-US", { maximumFractionDigits: 0 })
    : String(v);
const show = (f: Figure) => `${num(f.value)} ${f.unit}`;
const esc = (s: string) => s.replace(/\|/g, "\\|");
const scalars = (p: Record<string, unknown> = {}, keep?: string[]) =>
  Object.entries(p)
    .filter(([k, v]) => v !== null && typeof v !== "object" && (!keep || keep.includes(k)))
    .map(([k, v]) => `${k}=${v}`).join(", ");
/** The parameters that tell one target row from another of the same name. */
const KEY_PARAMS = ["n", "backend", "case", "snapshotRows", "payloads", "runs"];

/** What a target figure is measured against, from figures of the same run. */
function reference(results: Results, f: Figure): string {
  const p = f.params ?? {};
  if (f.scenario === "poll" && f.name.startsWith("ratio service ÷ floor")) {
    const n = p.n as number, backend = p.backend as string;
    const floor = find(results, {
      scenario: "poll",
      name: "floor: time to send all N devices' requests",
      params: { n },
    });
    const service = find(results, {
      scenario: "poll",
      name: f.name.includes("steady")
        ? "steady state (second scan, certificates pinned): time to poll all N devices"
        : "time to poll all N devices (one scan)",
      params: { n, backend },
    });
    return `service ${show(service)} ÷ floor ${show(floor)}`;
  }
  if (f.scenario === "blackbox" && / ÷ bare Deno\.serve start$/.test(f.name)) {
    return "a bare `Deno.serve` start timed just before each start (median ratio; floors: 7x)";
  }
  if (f.scenario === "blackbox" && f.name.startsWith("idle server RSS")) {
    return "Deno + PGlite alone hold 160-175 MiB (7x)";
  }
  if (/÷ paged device list/.test(f.name)) return "the paged device list (`limit=100`) in the same run";
  if (f.scenario === "storage" && f.name.startsWith("ratio content-addressed ÷ naive")) {
    const all = f.name.endsWith("all polls");
    const ca = find(results, {
      scenario: "storage",
      name: all
        ? "bytes per snapshot, content-addressed (95% unchanged), all polls"
        : "marginal bytes per snapshot, content-addressed (second half)",
    });
    const naive = find(results, {
      scenario: "storage",
      name: all
        ? "bytes per snapshot, every payload in full (naive), all polls"
        : "marginal bytes per snapshot, naive (second half)",
    });
    return `${show(ca)} ÷ ${show(naive)} (floor: section 3)`;
  }
  if (f.scenario === "preflight") {
    const flat = find(results, {
      scenario: "preflight",
      name: "flatness: p50 at the largest size ÷ p50 at 10^4 rows",
      params: { backend: p.backend as string },
    });
    return `flatness ${show(flat)} (p50 at 10^7 ÷ at 10^4 rows)`;
  }
  return "";
}

/** Figures without a target that a reader of the page needs beside the targets. */
const KEY_FIGURES: Array<Selector & { why: string }> = [
  { scenario: "poll", name: "floor: CPU per poll", params: { n: 1000 }, why: "the floor's own CPU" },
  {
    scenario: "poll",
    name: "service main-thread CPU per poll (first scan; second scan)",
    params: { n: 1000, backend: "postgres" },
    why: "the service's CPU (`second` = second scan)",
  },
  {
    scenario: "ingest",
    name: "service CPU per snapshot (95% unchanged)",
    params: { backend: "postgres" },
    why: "the whole cycle's CPU",
  },
  { scenario: "footprint", name: "bare Deno.serve script to first 200", why: "the start-up floor" },
  {
    scenario: "footprint",
    name: "cold start to first 200 from /readyz (empty PGlite data dir)",
    why: "embedded first start",
  },
  { scenario: "footprint", name: "restart to first 200 from /readyz (same PGlite data dir)", why: "restart" },
  {
    scenario: "footprint",
    name: "cold start to first 200 from /readyz (empty PGlite data dir) via `npx -y deno@2.9.6 task serve`",
    why: "the README's command",
  },
  { scenario: "footprint", name: "idle server RSS after a restart (PGlite)", why: "embedded, idle" },
  {
    scenario: "footprint",
    name: "service RSS while polling 1000 devices (peak; before the scan)",
    params: { backend: "postgres" },
    why: "polling 1,000 devices",
  },
  {
    scenario: "reports",
    name: "finish the run: aggregate, build and freeze the report",
    params: { backend: "postgres" },
    why: "1,001 linked snapshots, 100,000 samples",
  },
  {
    scenario: "reports",
    name: "signed report.pdf of a 10-page report, warm browser (render + attach evidence + PAdES signature)",
    why: "report.pdf",
  },
  {
    scenario: "reports",
    name: "report.pdf of the full report, warm browser (render + attach evidence)",
    params: { backend: "postgres" },
    why: "a 139-page report",
  },
  {
    scenario: "api",
    name: "GET /api/admin/dut/devices?limit=100 (first page of 1,000 devices): requests/s",
    params: { backend: "postgres" },
    why: "the reference of the read ratios",
  },
];

export function render(results: Results, resultsPath: string, method: string): string {
  const m = results.machine;
  const out: string[] = [];
  out.push(
    "# Benchmarks",
    "",
    "<!-- Generated by `npx -y deno@2.9.6 task bench:md` (tools/dev/gen_benchmarks.ts) from the results file named " +
      "below and bench/METHOD.md; edit those, not this page. `deno task checks` fails when it is stale. -->",
    "",
    "`npx -y deno@2.9.6 task bench` runs every scenario of `SCENARIOS` (bench/main.ts), each in its own process " +
      "(`deno run -A bench/main.ts --scenario <name>`, the command recorded with its figures), prints a table per " +
      "scenario and writes `bench/results/<timestamp>.json`; `--quick` is the short version, `--only poll,ingest` " +
      "picks scenarios, `--out FILE` names the results file. `--compare OLD.json` prints every figure beside the " +
      "same figure of an older run with the ratio new ÷ old and marks `WORSE` those worse by more than " +
      "`--threshold` (default 0.2); `--compare OLD.json --against NEW.json` compares two files without running " +
      "anything; either exits 1 when a figure is marked. `deno run -A bench/to_markdown.ts FILE` prints every " +
      "figure of a results file as tables.",
    "",
    "Requirements: PostgreSQL at `BENCH_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/test`; each " +
      "scenario uses a fresh schema and drops it), `npx` for autocannon, Chromium at `/usr/bin/chromium` or " +
      "`CHROMIUM_PATH`. Diagnosis knobs (not used for the figures below): `BENCH_POLL_SIZES=1000`, " +
      "`BENCH_POLL_PGLITE=0`, `BENCH_PROFILE_DIR=<dir>` (CPU profiles of the service and floor).",
    "",
    "## The run behind this page",
    "",
    `Results file \`${resultsPath}\`: \`${results.command}\` (${results.mode}), started ${results.startedAt}, ` +
      `${results.seconds.toLocaleString("en-US")} s, scenarios ${
        results.runs.map((r) => `${r.scenario}${r.ok ? "" : " (failed)"}`).join(", ")
      }. Machine: ${m.nproc} vCPUs (${m.cpuModel}), ${m.memTotalGiB} GiB, kernel ${m.kernel}, Deno ${m.deno}, ` +
      `load average ${m.loadAvg.join(" / ")} at the start and ${
        m.loadAvgAtEnd.join(" / ")
      } at the end. The ` +
      "VM's host is shared: compare runs made under similar load.",
    "",
    "## Targets",
    "",
    "Every figure of the run that has a target, with what it is measured against.",
    "",
    "| scenario | figure | parameters | value | target | met | measured against |",
    "| --- | --- | --- | ---: | --- | --- | --- |",
  );
  const targets = results.figures.filter((f) => f.target !== undefined);
  if (targets.length === 0) throw new Error(`gen_benchmarks: ${resultsPath} has no figure with a target`);
  for (const f of targets) {
    const met = f.pass === true ? "met" : f.pass === false ? "**missed**" : "—";
    out.push(
      `| ${f.scenario} | ${esc(f.name)} | ${esc(scalars(f.params, KEY_PARAMS))} | ${show(f)} | ${
        esc(f.target!)
      } | ` +
        `${met} | ${esc(reference(results, f))} |`,
    );
  }
  out.push("", "Commands of these figures:", "");
  for (const c of [...new Set(targets.map((f) => f.command))]) out.push(`- \`${c}\``);
  out.push(
    "",
    "## Key figures",
    "",
    "| scenario | figure | value | parameters | why it matters |",
    "| --- | --- | ---: | --- | --- |",
  );
  for (const s of KEY_FIGURES) {
    const f = find(results, s);
    out.push(`| ${f.scenario} | ${esc(f.name)} | ${show(f)} | ${esc(scalars(f.params))} | ${s.why} |`);
  }
  out.push("", method.trim(), "", "## Files", "");
  out.push(
    "- `bench/main.ts`: the orchestrator, `--scenario` child mode and `--compare`; `bench/scenarios/*.ts`: one " +
      "file per scenario.",
    "- `bench/_farm.ts`, `bench/_capture.ts`, `bench/_farm_proc.ts`: the device farm and its capture of the real " +
      "simulators; `bench/_poll_service.ts`, `bench/_floor.ts`: the service and the floor of scenario 1.",
    "- `bench/_replay.ts`, `bench/_store_sql.ts`: replay adapters and store drivers; `bench/_db.ts`, " +
      "`bench/_util.ts`, `bench/_compare.ts`: helpers; `bench/to_markdown.ts`: a results file as tables.",
    "- `bench/micro_*.ts`, `bench/compact_migration.ts`: micro-benchmarks for A/B runs (sections 2c, 3b, 4f, 10c, " +
      "10d).",
    "- `bench/results-*.json`: the results files of earlier runs, kept for `--compare`; this page is rendered " +
      `from \`${resultsPath}\`.`,
  );
  return out.join("\n") + "\n";
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      check: { type: "boolean", default: false },
      results: { type: "string", default: DEFAULT_RESULTS },
      page: { type: "string", default: "BENCHMARKS.md" },
    },
  });
  const resultsPath = values.results!;
  const pagePath = values.page!.startsWith("/") ? values.page! : `${ROOT}${values.page}`;
  const results = JSON.parse(await Deno.readTextFile(`${ROOT}${resultsPath}`)) as Results;
  const method = await Deno.readTextFile(`${ROOT}bench/METHOD.md`);
  const text = await fmtMarkdown(render(results, resultsPath, method));
  if (values.check) {
    const current = await Deno.readTextFile(pagePath).catch(() => "");
    if (current !== text) {
      console.error(
        `${values.page} is stale: it differs from the rendering of ${resultsPath} and bench/METHOD.md; ` +
          "run `npx -y deno@2.9.6 task bench:md`",
      );
      Deno.exit(1);
    }
    console.log(`${values.page} is current (rendered from ${resultsPath})`);
  } else {
    await Deno.writeTextFile(pagePath, text);
    console.log(`wrote ${values.page} from ${resultsPath} (${text.split("\n").length - 1} lines)`);
  }
}
