/**
 * BENCHMARKS.md, generated (issue 47 point 4): how to run the benchmarks, the run the page comes from, a table
 * of the targets (each with its floor or reference from the same run, the ratio and whether it is met), a
 * compact table of figures per scenario, then the method and reasoning of `bench/METHOD.md`.
 *
 * - `deno task bench:md` writes BENCHMARKS.md from `bench/results-full-s24.json` (`--results FILE` names
 *   another results file: record the newest full run there, then regenerate).
 * - `deno task bench:md --check` exits 1 when BENCHMARKS.md (or `--page PATH`) differs from the rendering.
 *
 * The rows of the targets table are selectors (scenario, name, some params) in {@link TARGET_ROWS}. A selector
 * that matches no figure, or more than one, fails the generator, so a renamed figure cannot silently drop out
 * of the page; a figure with a target that no row names gets a row of its own.
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { Figure } from "../../bench/_util.ts";
import { fmtMarkdown } from "../_fmt_md.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
export const DEFAULT_RESULTS = "bench/results-full-s24.json";
/**
 * Results of single scenarios run after the full run (`deno task bench --only X --out FILE`): their figures are
 * added to the page, each file named with its own command, time and machine.
 */
export const EXTRA_RESULTS = [
  "bench/results-issue50-netbox.json",
  "bench/results-issue51-webhooks.json",
  "bench/results-issue48-scaleout.json",
  "bench/results-issue49-labsize.json",
  "bench/results-issue53-scan.json",
];

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
    loadAvgAtEnd?: number[];
  };
  runs: Array<{ scenario: string; seconds: number; ok: boolean }>;
  figures: Figure[];
}

/** A figure by scenario, name and some of its scalar params; exactly one figure must match. */
interface Selector {
  scenario: string;
  name: string;
  params?: Record<string, string | number>;
}

/** One row of the targets table. */
interface TargetRow {
  /** The figure in the value column. */
  value: Selector;
  /** A second figure of the same thing shown beside it (the p95 of a p50). */
  also?: Selector;
  /** What the value is measured against: a figure of the same run (with a label), or words. */
  ref?: (Selector & { label: string }) | string;
  /** The figure that records value ÷ reference, when the run has one (else the ratio is computed). */
  ratio?: Selector;
  /**
   * A target added after the recorded run (issue 53): its figures may be missing from it; the row then shows
   * this target and "not in this run" instead of failing the generator.
   */
  pending?: string;
}

const sel = (scenario: string, name: string, params?: Record<string, string | number>): Selector => ({
  scenario,
  name,
  ...(params ? { params } : {}),
});
const ref = (label: string, s: Selector) => ({ label, ...s });

const POLL_ALL = "time to poll all N devices (one scan)";
const POLL_STEADY = "steady state (second scan, certificates pinned): time to poll all N devices";
const FLOOR_TIME = "floor: time to send all N devices' requests";
const PAGED_RPS = "GET /api/admin/dut/devices?limit=100 (first page of 1,000 devices): requests/s";
const BB_PAGED_RPS = "GET /api/admin/dut/devices?limit=100 (first page of 200 devices): requests/s";
const LISTINGS: Array<[string, string]> = [
  ["GET /api/admin/dut/snapshots (unfiltered: latest 100): requests/s", "snapshots, latest 100"],
  [
    "GET /api/admin/dut/snapshots?payload=omit (latest 100 without payloads): requests/s",
    "snapshots, latest 100, payload=omit",
  ],
  [
    "GET /api/admin/dut/snapshots?deviceId=…&endpointLabel=… (one device and label): requests/s",
    "snapshots, one device and label",
  ],
];
const HISTORY = "change history of 10^6 snapshots";
const VOLATILE = `${HISTORY}, uptime moving every poll`;
const NO_FLOOR_RSS = "Deno + PGlite alone: 160-175 MiB (7x)";

function pollRows(n: number, backend: string, withCpu = false): TargetRow[] {
  const floor = ref("floor", sel("poll", FLOOR_TIME, { n }));
  const rows: TargetRow[] = [
    {
      value: sel("poll", POLL_ALL, { n, backend }),
      ref: floor,
      ratio: sel("poll", "ratio service ÷ floor (time to poll all)", { n, backend }),
    },
    {
      value: sel("poll", POLL_STEADY, { n, backend }),
      ref: floor,
      ratio: sel("poll", "ratio service ÷ floor, steady state (second scan)", { n, backend }),
    },
  ];
  if (withCpu) {
    rows.push({
      value: sel("poll", "service CPU per poll", { n, backend }),
      ref: ref("floor", sel("poll", "floor: CPU per poll", { n })),
      ratio: sel("poll", "ratio service ÷ floor (CPU per poll)", { n, backend }),
    });
  }
  return rows;
}

function historyRows(backend: string): TargetRow[] {
  const pair = (name: string): TargetRow => ({
    value: sel("changes", `${name}, ${backend}, p50`, { backend }),
    also: sel("changes", `${name}, ${backend}, p95`, { backend }),
  });
  const one = (name: string): TargetRow => ({ value: sel("changes", name, { backend }) });
  return [
    pair(`${HISTORY}, first page (limit 20)`),
    pair(`${HISTORY}, third page (limit 2, cursor)`),
    one(
      `start-up reconciliation after a dropped volatile path (recorded, re-mark in the background), ${backend}`,
    ),
    one(
      "change history first page right after that start-up (re-mark pending: a bounded read, rows compared in " +
        `full), ${backend}`,
    ),
    one(`change history first page once re-marked, p50, ${backend}`),
    pair(`${VOLATILE}, first page (limit 20)`),
    pair(`${VOLATILE}, third page (limit 2, cursor)`),
  ];
}

function listingRows(scenario: "api" | "blackbox", backend: string): TargetRow[] {
  const paged = ref(
    "paged device list",
    sel(scenario, scenario === "api" ? PAGED_RPS : BB_PAGED_RPS, { backend }),
  );
  const listings = scenario === "api" ? LISTINGS : [LISTINGS[0]!, LISTINGS[2]!];
  return listings.map(([name, ratioName]) => ({
    value: sel(scenario, name, { backend }),
    ref: paged,
    ratio: sel(scenario, `${ratioName} ÷ paged device list, requests/s`, { backend }),
  }));
}

function startRows(backend: string): TargetRow[] {
  return [
    {
      value: sel("blackbox", "cold start of `deno task serve` to first 200 from /readyz", { backend }),
      ref: ref(
        "bare Deno.serve",
        sel("blackbox", "bare Deno.serve script to first 200, before the cold start", { backend }),
      ),
      ratio: sel("blackbox", "cold start ÷ bare Deno.serve start", { backend }),
    },
    {
      value: sel("blackbox", "restart of `deno task serve` on the same data to first 200 from /readyz", {
        backend,
      }),
      ref: ref(
        "bare Deno.serve",
        sel("blackbox", "bare Deno.serve script to first 200, before the restart", { backend }),
      ),
      ratio: sel("blackbox", "restart ÷ bare Deno.serve start", { backend }),
    },
    {
      value: sel("blackbox", "idle server RSS after 200 devices × 3 manual polls", { backend }),
      ...(backend === "pglite" ? { ref: NO_FLOOR_RSS } : {}),
    },
  ];
}

function footprintStart(via: string): TargetRow[] {
  const bare = ref("bare Deno.serve", sel("footprint", `bare Deno.serve script to first 200${via}`));
  return [
    {
      value: sel("footprint", `cold start to first 200 from /readyz (empty PGlite data dir)${via}`),
      ref: bare,
      ratio: sel("footprint", `cold start ÷ bare Deno.serve start${via}`),
    },
    {
      value: sel("footprint", `restart to first 200 from /readyz (same PGlite data dir)${via}`),
      ref: bare,
      ratio: sel("footprint", `restart ÷ bare Deno.serve start${via}`),
    },
  ];
}

const BB_LITE = { backend: "pglite" };
/** bench/scenarios/blackbox.ts `MAIN_THREAD_RESTART`: the restart with `DUT_PGLITE_WORKER=off` (diagnosis). */
const MAIN_THREAD_RESTART = "restart of `deno task serve` on the same data with PGlite in the main thread";
const MAIN_CPU = "service main-thread CPU per poll (first scan; second scan)";

/** Issue 53: the embedded service against floors doing the same unavoidable work, then its guards. */
export const FLOOR_ROWS: TargetRow[] = [
  {
    value: sel(
      "blackbox",
      "restart of `deno task serve` on the same data to first 200 from /readyz",
      BB_LITE,
    ),
    ref: ref(
      "PGlite floor",
      sel("blackbox", "PGlite floor: open of the same data dir to first 200 (restart)", BB_LITE),
    ),
    ratio: sel("blackbox", "restart ÷ PGlite floor", BB_LITE),
    pending: "<= 1.25",
  },
  {
    value: sel("blackbox", `${MAIN_THREAD_RESTART} to first 200 from /readyz`, BB_LITE),
    ref: ref(
      "PGlite floor",
      sel(
        "blackbox",
        `PGlite floor: open of the same data dir to first 200 (before the ${MAIN_THREAD_RESTART})`,
        BB_LITE,
      ),
    ),
    ratio: sel("blackbox", `${MAIN_THREAD_RESTART} ÷ PGlite floor`, BB_LITE),
  },
  ...(["off", "on"] as const).map((pgliteWorker): TargetRow => ({
    value: sel("scan", "paged device list p99 during the first scan ÷ idle", {
      n: 1000,
      backend: "pglite",
      pgliteWorker,
    }),
    ref: "the same list on the same service, idle after the scan",
    pending: "<= 2",
  })),
  {
    value: sel("poll", MAIN_CPU, { n: 1000, backend: "pglite" }),
    ref: ref("PostgreSQL", sel("poll", MAIN_CPU, { n: 1000, backend: "postgres" })),
    ratio: sel("poll", "main-thread CPU per poll, first scan, PGlite ÷ PostgreSQL", { n: 1000 }),
    pending: "<= 1.3",
  },
  {
    value: sel("poll", MAIN_CPU, { n: 1000, backend: "pglite, main thread" }),
    ref: ref("PostgreSQL", sel("poll", MAIN_CPU, { n: 1000, backend: "postgres" })),
    ratio: sel("poll", "main-thread CPU per poll, first scan, PGlite in the main thread ÷ PostgreSQL", {
      n: 1000,
    }),
  },
  {
    value: sel("poll", "devices polled inside one 30 s scan at the first scan's rate, embedded", { n: 1000 }),
    pending: ">= 2000",
  },
  {
    value: sel("blackbox", "cold start of `deno task serve` to first 200 from /readyz", BB_LITE),
    ref: ref(
      "PGlite floor",
      sel(
        "blackbox",
        "PGlite floor: first open of a data dir made from the template to first 200 (cold)",
        BB_LITE,
      ),
    ),
    ratio: sel("blackbox", "cold start ÷ PGlite floor", BB_LITE),
    pending: "<= 1 (guard)",
  },
  {
    value: sel("blackbox", "idle server RSS after 200 devices × 3 manual polls − PGlite floor RSS", BB_LITE),
    ref: ref("PGlite floor", sel("blackbox", "PGlite floor: RSS idle after one query", BB_LITE)),
    pending: "<= 0 MiB (guard)",
  },
];

/** The rows of the guards table: every other figure with a target, and the key figures beside them. */
export const TARGET_ROWS: TargetRow[] = [
  ...pollRows(100, "postgres"),
  ...pollRows(100, "pglite"),
  ...pollRows(1000, "postgres", true),
  ...pollRows(1000, "pglite"),
  ...pollRows(1000, "postgres, no device locks"),
  ...pollRows(3000, "postgres"),
  { value: sel("ingest", "snapshots stored per second (every payload new)", { backend: "postgres" }) },
  { value: sel("ingest", "snapshots stored per second (95% unchanged)", { backend: "postgres" }) },
  { value: sel("ingest", "snapshots stored per second (95% unchanged)", { backend: "pglite" }) },
  {
    value: sel("ingest", "store only, PollStore, group commit (production) (95% unchanged)", {
      backend: "postgres",
    }),
    ref: ref(
      "one transaction per poll",
      sel("ingest", "store only, one transaction per poll (before group commit) (95% unchanged)", {
        backend: "postgres",
      }),
    ),
  },
  {
    value: sel("storage", "bytes per snapshot, content-addressed (95% unchanged), all polls"),
    ref: ref("naive", sel("storage", "bytes per snapshot, every payload in full (naive), all polls")),
    ratio: sel("storage", "ratio content-addressed ÷ naive, all polls"),
  },
  {
    value: sel("storage", "marginal bytes per snapshot, content-addressed (second half)"),
    ref: ref("naive", sel("storage", "marginal bytes per snapshot, naive (second half)")),
    ratio: sel("storage", "ratio content-addressed ÷ naive, marginal (steady state)"),
  },
  {
    value: sel("storage", "marginal bytes per unchanged snapshot: the snapshots table alone (second half)"),
    ref: "a naive row ≈ 1.1 kB (section 3)",
  },
  ...(["postgres", "pglite"] as const).map((backend): TargetRow => {
    const top = backend === "postgres" ? 10_000_000 : 100_000;
    return {
      value: sel("preflight", `pre-flight latency p50 at 10^${Math.log10(top)} rows`, { backend }),
      ref: ref("at 10^4 rows", sel("preflight", "pre-flight latency p50 at 10^4 rows", { backend })),
      ratio: sel("preflight", "flatness: p50 at the largest size ÷ p50 at 10^4 rows", { backend }),
    };
  }),
  ...listingRows("api", "postgres"),
  ...listingRows("api", "pglite"),
  {
    value: sel("api", "SSE: CPU added by 100 clients"),
    ref: ref("no client", sel("api", "SSE: server CPU, no client")),
  },
  {
    value: sel("events", "polling service: CPU added by 100 SSE clients"),
    ref: ref("no client", sel("events", "polling service: server CPU, no client")),
    ratio: sel("events", "polling service: CPU added by 100 SSE clients, relative to the service's own"),
  },
  ...(["pglite", "postgres"] as const).flatMap((backend) =>
    [
      "compareRuns, first read of the reports",
      "compareRuns, reports read before",
      "POST /api/test-runs/compare, reports read before",
    ]
      .map((name): TargetRow => ({ value: sel("compare", `${name}, 20 runs (p95)`, { backend }) }))
  ),
  {
    value: sel("diffs", "diff of two 1 MiB payloads, p50"),
    also: sel("diffs", "diff of two 1 MiB payloads, p95"),
  },
  ...historyRows("postgres"),
  ...historyRows("pglite"),
  { value: sel("prune", "errorsDuringPrune") },
  ...listingRows("blackbox", "pglite"),
  ...startRows("postgres"),
  ...listingRows("blackbox", "postgres"),
  ...footprintStart(" via `npx -y deno@2.9.6 task serve`").slice(0, 1),
  {
    value: sel("footprint", "service RSS while polling 1000 devices (peak; before the scan)", {
      backend: "postgres",
    }),
  },
  // Issue 51: webhook delivery from commit to receipt, and the outbox's cost on the poll write path.
  ...(["pglite", "postgres"] as const).flatMap((backend): TargetRow[] => [
    {
      value: sel("webhooks", "commit to receipt, 10 subscriptions: p50 (p99)", { backend }),
      also: sel("webhooks", "commit to receipt, 10 subscriptions: p99", { backend }),
    },
    {
      value: sel("webhooks", "poll scan of 250 devices, 10 subscriptions to device status changes, median", {
        backend,
      }),
      ref: ref(
        "no subscription",
        sel("webhooks", "poll scan of 250 devices, no subscription, median", { backend }),
      ),
    },
  ]),
  ...[1, 2, 3].flatMap(scaleoutRows),
  // Issue 49, a lab of 5,000 devices: the key figures beside the targeted ones.
  { value: sel("labsize", "finish the run over the lab: build and freeze report.json") },
  { value: sel("labsize", "report.json size") },
  { value: sel("labsize", "print page size (GET /runs/{id}/report)") },
  { value: sel("labsize", "report.pdf through the route, first request (browser start included)") },
];

/** Issue 48: N poll instances on one PostgreSQL (section 13): throughput (p99 lateness), CPU per poll. */
function scaleoutRows(instances: number): TargetRow[] {
  const one = sel("scaleout", "polls per minute", { instances: 1 });
  return [
    {
      value: sel("scaleout", "polls per minute", { instances }),
      also: sel("scaleout", "lateness p99", { instances }),
      ref: instances === 1 ? "3,000 devices at 60 s: 3,000 at most" : ref("1 instance", one),
    },
    {
      value: sel("scaleout", "all instances CPU per poll", { instances }),
      also: sel("scaleout", "PostgreSQL CPU per poll", { instances }),
    },
  ];
}

/** The one figure `s` names; throws when none or several match. */
export function find(figures: Figure[], s: Selector): Figure {
  const hits = figures.filter((f) =>
    f.scenario === s.scenario && f.name === s.name &&
    Object.entries(s.params ?? {}).every(([k, v]) => f.params?.[k] === v)
  );
  if (hits.length !== 1) {
    throw new Error(
      `gen_benchmarks: ${hits.length} figures match ${JSON.stringify(s)} (exactly 1 needed); ` +
        "a figure was renamed or removed: update TARGET_ROWS in tools/dev/gen_benchmarks.ts",
    );
  }
  return hits[0]!;
}

const num = (v: number) =>
  Math.abs(v) >= 1000 ? v.toLocaleString("en-US", { maximumFractionDigits: 0 }) : String(v);
/** The params whose value is the second number of a figure named "… (a; b)". */
const SECOND = ["second", "beforeScanMiB", "floor"];
function show(f: Figure): string {
  if (f.value === null) return "—";
  const p = f.params ?? {};
  const second = SECOND.find((k) => typeof p[k] === "number" && /\(.*; .*\)/.test(f.name));
  return `${num(f.value)}${second ? `; ${num(p[second] as number)}` : ""} ${f.unit}`;
}
const esc = (s: string) => s.replace(/\|/g, "\\|");
/** The parameters that tell one row from another of the same name. */
const KEY_PARAMS = [
  "n",
  "backend",
  "payloads",
  "case",
  "snapshotRows",
  "runs",
  "devices",
  "snapshots",
  "instances",
  "pgliteWorker",
];
const scalars = (p: Record<string, unknown> = {}, keep: string[]) =>
  Object.entries(p)
    .filter(([k, v]) => v !== null && typeof v !== "object" && keep.includes(k))
    .map(([k, v]) => `${k}=${typeof v === "number" ? num(v) : v}`).join(", ");

/** Variables of a recorded command that are the bench's secrets or its port, left out of the page. */
const NOISE_VARS =
  /^(HOST|PORT|ADMIN_TOKEN|DUT_CRED_ENC_KEY|DUT_REPORT_SIGNING_KEY|DUT_PDF_SIGNING_CERT|DUT_PDF_SIGNING_KEY)=/;
/** A figure's command without the bench's secrets, host and port. */
export function shortCommand(command: string): string {
  const words = command.match(/(?:[^\s']+|'[^']*')+/g) ?? [command];
  return words.filter((w) => !NOISE_VARS.test(w)).join(" ");
}

/** The cells of a {@link TargetRow.pending} row whose figures are not all in the run. */
function pendingCells(row: TargetRow, figs: Figure[]): string[] | null {
  const sels = [row.value, row.also, row.ratio, typeof row.ref === "string" ? undefined : row.ref];
  if (!row.pending || sels.every((s) => !s || tryFind(figs, s))) return null;
  const value = tryFind(figs, row.value);
  const refFig = row.ref && typeof row.ref !== "string" ? tryFind(figs, row.ref) : undefined;
  return [
    row.value.scenario,
    row.value.name,
    scalars(row.value.params, KEY_PARAMS),
    value ? show(value) : "not in this run",
    typeof row.ref === "string"
      ? row.ref
      : refFig
      ? `${row.ref!.label}: ${show(refFig)}`
      : row.ref
      ? "not in this run"
      : "—",
    "—",
    row.pending,
    "not in this run",
    value ? `\`${shortCommand(value.command)}\`` : "—",
  ];
}

function tryFind(figs: Figure[], s: Selector): Figure | undefined {
  const hits = figs.filter((f) =>
    f.scenario === s.scenario && f.name === s.name &&
    Object.entries(s.params ?? {}).every(([k, v]) => f.params?.[k] === v)
  );
  return hits.length === 1 ? hits[0] : undefined;
}

function targetCells(row: TargetRow, figs: Figure[]): string[] {
  const pending = pendingCells(row, figs);
  if (pending) return pending;
  const value = find(figs, row.value);
  const also = row.also ? find(figs, row.also) : undefined;
  const refFig = row.ref && typeof row.ref !== "string" ? find(figs, row.ref) : undefined;
  const ratio = row.ratio ? find(figs, row.ratio) : undefined;
  let ratioText = "—";
  if (ratio) ratioText = show(ratio);
  else if (refFig && refFig.unit === value.unit && value.value! > 0 && refFig.value! > 0) {
    ratioText = `${Math.round((value.value! / refFig.value!) * 100) / 100} ×`;
  }
  const refText = typeof row.ref === "string"
    ? row.ref
    : refFig && typeof row.ref !== "string"
    ? `${row.ref!.label}: ${show(refFig)}`
    : "—";
  const judged = [ratio, value, also].filter((f): f is Figure => f?.target !== undefined);
  const roles = new Map<Figure | undefined, string>([[ratio, "ratio"], [value, "value"], [also, "p95"]]);
  const sameTarget = new Set(judged.map((f) => f.target)).size <= 1;
  const verdict = (f: Figure) => f.pass === true ? "met" : f.pass === false ? "**missed**" : "—";
  const sameVerdict = new Set(judged.map(verdict)).size <= 1;
  const target = judged.length === 0
    ? "—"
    : sameTarget
    ? judged[0]!.target!
    : judged.map((f) => `${roles.get(f)}: ${f.target}`).join("; ");
  const met = judged.length === 0
    ? "—"
    : sameVerdict
    ? verdict(judged[0]!)
    : judged.map((f) => `${roles.get(f)} ${verdict(f)}`).join("; ");
  return [
    value.scenario,
    value.name.replace(/, p50$/, ", p50 (p95)"),
    scalars(value.params, KEY_PARAMS),
    also ? `${show(value)} (${show(also)})` : show(value),
    refText,
    ratioText,
    target,
    met,
    `\`${shortCommand(value.command)}\``,
  ];
}

/** Where a figure goes in its scenario's compact table: [row, column], or null to leave it out. */
type Place = (f: Figure) => [string, string] | null;

const backendOf = (f: Figure) => (f.params?.backend as string | undefined) ?? "—";
const byBackend: Place = (f) => [f.name.replace(`, ${f.params?.backend}`, ""), backendOf(f)];
const single: Place = (f) => [f.name, "value"];
const dropping = (minor: RegExp, place: Place): Place => (f) => minor.test(f.name) ? null : place(f);
/** `…: requests/s` and `…: p99 latency` in columns per back end; p50 latencies left out. */
const byBackendAndMetric: Place = (f) => {
  if (/: p50 latency$/.test(f.name)) return null;
  const m = f.name.match(/^(.*?)(?::|,) (requests\/s|p99 latency)$/);
  return m ? [m[1]!, `${backendOf(f)} ${m[2]}`] : [f.name, backendOf(f)];
};

/** The compact table of each scenario: its figures pivoted by back end or size, minor ones left out. */
const PLACES: Record<string, Place> = {
  poll: dropping(
    /^(polls\/s|p95 poll duration|farm|floor: polls\/s|floor with|TLS connections|polls ok|PostgreSQL server CPU|ratio service ÷ floor \(CPU)/,
    (f) => {
      const p = f.params ?? {};
      const floorName: Record<string, string> = {
        [FLOOR_TIME]: POLL_ALL,
        "floor: CPU per poll": "service CPU per poll",
      };
      return [floorName[f.name] ?? f.name, `N=${p.n} ${p.backend ?? "floor"}`];
    },
  ),
  ingest: (f) => {
    const m = f.name.match(/^(.*) \((every payload new|95% unchanged)\)$/);
    return m ? [m[1]!, `${backendOf(f)}, ${m[2]}`] : byBackend(f);
  },
  storage: dropping(
    /by relation$|^bytes per snapshot, every payload|^marginal bytes per snapshot, naive/,
    single,
  ),
  preflight: dropping(/asOf|statements/, (f) => {
    const p = f.params ?? {};
    const rows = (p.snapshotRows ?? p.to) as number;
    const name = f.name.startsWith("flatness") ? f.name : f.name.replace(/,? at 10\^\d+ rows$/, "");
    return [name, `${backendOf(f)}, 10^${Math.round(Math.log10(rows))}`];
  }),
  api: dropping(/^(server exit|SSE: server CPU, 100 clients)/, byBackendAndMetric),
  reports: dropping(
    /^(attach evidence|report\.pdf, first PDF|render the HTML print page|print the page to PDF|report\.pdf of a 10-page)/,
    byBackend,
  ),
  compare: byBackend,
  footprint: dropping(/^(idle server RSS after a cold start|peak server RSS during)/, (f) => {
    const p = f.params ?? {};
    if (p.n !== undefined) return [f.name.replace(/\d+ devices/, "N devices"), `N=${p.n} ${p.backend}`];
    const m = f.name.match(/^(.*) via `(.*)`$/);
    return m ? [m[1]!, m[2]!] : [f.name, "deno run -A server.ts"];
  }),
  diffs: (f) => [f.name.replace(/, p(50|95)$/, ""), `p${f.name.slice(-2)}`],
  changes: dropping(/^every change right after/, (f) => {
    const name = f.name.replace(`, ${f.params?.backend}`, "");
    const m = name.match(/^(.*), (p50|p95)$/);
    return m ? [m[1]!, `${backendOf(f)} ${m[2]}`] : [name, backendOf(f)];
  }),
  events: dropping(/relative to the service's own$|100 clients following/, single),
  evidence: single,
  prune: dropping(
    /^(buildSeconds|freedPayloads|bytesFreedReported|relationBytes|apiMax|apiP50During|pollRoundMax|longestBatch|backupArchiveBytes|deletedSnapshots)/,
    single,
  ),
  blackbox: dropping(/^(idle RSS of the task runner|peak server RSS|process group)/, byBackendAndMetric),
};

function scenarioTable(scenario: string, figs: Figure[]): string[] {
  const place = PLACES[scenario] ?? byBackend;
  const rows = new Map<string, Map<string, Figure>>();
  const cols: string[] = [];
  for (const f of figs) {
    // A figure with a target is never left out.
    const placed = place(f) ?? (f.target !== undefined ? byBackend(f) : null);
    if (!placed) continue;
    const [row, col] = placed;
    if (!cols.includes(col)) cols.push(col);
    const cells = rows.get(row) ?? new Map<string, Figure>();
    if (cells.has(col)) {
      throw new Error(`gen_benchmarks: two figures of ${scenario} in row "${row}", column ${col}`);
    }
    cells.set(col, f);
    rows.set(row, cells);
  }
  const out = [
    `| ${scenario} | ${cols.map(esc).join(" | ")} |`,
    `| --- | ${cols.map(() => "---:").join(" | ")} |`,
  ];
  for (const [row, cells] of rows) {
    const shown = cols.map((c) => {
      const f = cells.get(c);
      if (!f) return "";
      const mark = f.pass === false ? " ✗" : f.pass === true ? " ✓" : "";
      return `${show(f)}${mark}`;
    });
    out.push(`| ${esc(row)} | ${shown.map(esc).join(" | ")} |`);
  }
  return out;
}

const HEAD =
  "| scenario | figure | parameters | value | floor or reference | ratio | target | met | command |";
const HEAD_RULE = "| --- | --- | --- | ---: | --- | ---: | --- | --- | --- |";

export function render(
  results: Results,
  resultsPath: string,
  method: string,
  extras: Array<{ path: string; results: Results }> = [],
): string {
  const m = results.machine;
  // The scenarios of the extra files stand in the targets tables only (page length), from the page's run when it
  // has them (a full run newer than the file), else from the file.
  const tableless = new Set(extras.flatMap((e) => e.results.figures.map((f) => f.scenario)));
  const ran = new Set(results.figures.map((f) => f.scenario));
  extras = extras.filter((e) => e.results.figures.some((f) => !ran.has(f.scenario)));
  const figs = [
    ...results.figures,
    ...extras.flatMap((e) => e.results.figures.filter((f) => !ran.has(f.scenario))),
  ];
  const out: string[] = [];
  out.push(
    "# Benchmarks",
    "",
    "<!-- Generated by `npx -y deno@2.9.6 task bench:md` (tools/dev/gen_benchmarks.ts) from the results file named " +
      "below and bench/METHOD.md; edit those, not this page. `deno task checks` fails when it is stale. -->",
    "",
    "`deno task bench` runs every scenario of bench/main.ts, each in its own process (the command recorded " +
      "with its figures), and writes `bench/results/<timestamp>.json`: `--quick` short, `--only poll,ingest` some " +
      "scenarios, `--out FILE` the results file. `--compare OLD.json` prints every figure beside an older run's " +
      "(new ÷ old) and exits 1 when one is worse by more than `--threshold` (default 0.2); " +
      "`--compare OLD.json --against NEW.json` compares two files without running anything. Requirements: " +
      "PostgreSQL at `BENCH_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/test`, a fresh schema per " +
      "scenario), `npx` (autocannon), Chromium (`/usr/bin/chromium` or `CHROMIUM_PATH`). Diagnosis knobs: " +
      "`BENCH_POLL_SIZES=1000`, `BENCH_POLL_PGLITE=0`, `BENCH_PROFILE_DIR=<dir>` (CPU profiles), " +
      "`BENCH_V8_FLAGS=<flags>`, `DUT_POLL_WORKERS` (section 1x).",
    "",
    `Rendered from \`${resultsPath}\`: \`${results.command}\` (${results.mode}), started ${results.startedAt}, ` +
      `${results.seconds.toLocaleString("en-US")} s${
        results.runs.some((r) => !r.ok)
          ? ` (failed: ${results.runs.filter((r) => !r.ok).map((r) => r.scenario).join(", ")})`
          : ""
      }; ${m.nproc} CPUs (${m.cpuModel}), ${m.memTotalGiB} GiB, kernel ${m.kernel}, Deno ${m.deno}, ` +
      `load average ${m.loadAvg.join(" / ")} → ${(m.loadAvgAtEnd ?? []).join(" / ") || "?"}. ` +
      "The host is shared: compare runs made under similar load.",
    ...extras.map((e) =>
      `Also \`${e.path}\` (\`${e.results.command}\`, ${e.results.startedAt}, load ` +
      `${
        e.results.machine.loadAvg.join(" / ")
      }): its figures with a target are in the table below, all of them ` +
      "in `bench/to_markdown.ts`."
    ),
    "",
    "## Targets",
    "",
    'Issue 53: against floors doing the same unavoidable work (section 7x); "not in this run": newer than the run.',
    "",
    HEAD,
    HEAD_RULE,
  );
  for (const row of FLOOR_ROWS) {
    out.push(`| ${targetCells(row, figs).map((c, i) => (i === 8 ? c : esc(c))).join(" | ")} |`);
  }
  out.push(
    "",
    "## Guards",
    "",
    "Other figures with a target, and key figures (target —), against a figure of the same run.",
    "",
    HEAD,
    HEAD_RULE,
  );
  const rows = [...TARGET_ROWS];
  for (const f of figs) {
    if (f.target === undefined) continue;
    const named = [...FLOOR_ROWS, ...rows].some((r) =>
      [r.value, r.also, r.ratio].some((s) => s && tryFind(figs, s) === f)
    );
    if (!named) rows.push({ value: { scenario: f.scenario, name: f.name, params: keyParams(f) } });
  }
  for (const row of rows) {
    const cells = targetCells(row, figs);
    out.push(`| ${cells.map((c, i) => (i === 8 ? c : esc(c))).join(" | ")} |`);
  }
  out.push(
    "",
    "## Figures by scenario",
    "",
    "By back end or size; ✓ / ✗: target met / missed; minor figures left out (`bench/to_markdown.ts` has all).",
    "",
  );
  // The scenarios of the page's run; an extra file's figures stand in the targets table only (page length).
  for (const scenario of [...ran].filter((sc) => !tableless.has(sc))) {
    out.push(...scenarioTable(scenario, figs.filter((f) => f.scenario === scenario)), "");
  }
  out.push(method.trim(), "", "## Files", "");
  out.push(
    "- `bench/main.ts`: orchestrator, `--scenario` child mode, `--compare`; `bench/scenarios/*.ts`: the scenarios; " +
      "`bench/METHOD.md`: the method part of this page.",
    "- `bench/_farm.ts`, `_farm_proc.ts`, `_capture.ts`: the device farm; `_poll_service.ts`, `_floor.ts`: service " +
      "and floor of scenario 1; `_idle_polls.ts`, `_reads.ts`, `_sse.ts`, `_replay.ts`, `_store_sql.ts`: load and " +
      "replay; `_db.ts`, `_util.ts`, `_compare.ts`: helpers; `to_markdown.ts`: all figures of a results file.",
    "- `bench/micro_*.ts`, `bench/compact_migration.ts`: micro-benchmarks for A/B runs.",
    `- \`${resultsPath}\` is the run of this page; the other results files are older runs, kept for \`--compare\`.`,
  );
  return out.join("\n") + "\n";
}

/** The key params of a figure, as a selector's. */
function keyParams(f: Figure): Record<string, string | number> {
  const p: Record<string, string | number> = {};
  for (const k of KEY_PARAMS) {
    const v = f.params?.[k];
    if (typeof v === "string" || typeof v === "number") p[k] = v;
  }
  return p;
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
  const abs = (p: string) => p.startsWith("/") ? p : `${ROOT}${p}`;
  const pagePath = abs(values.page!);
  const results = JSON.parse(await Deno.readTextFile(abs(resultsPath))) as Results;
  const method = await Deno.readTextFile(`${ROOT}bench/METHOD.md`);
  const extras = await Promise.all(
    EXTRA_RESULTS.map(async (path) => ({
      path,
      results: JSON.parse(await Deno.readTextFile(abs(path))) as Results,
    })),
  );
  const text = await fmtMarkdown(render(results, resultsPath, method, extras));
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
