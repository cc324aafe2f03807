/**
 * The print page of a run comparison (`GET /runs/compare?ids=...`, README "Comparing runs"), rendered on the
 * server with Preact and the report page's stylesheet and licensing sheet (page.tsx): A4 portrait, "page n
 * of N" and the licence in the footer of every page. The KPI chart is inline SVG; the page has no script.
 *
 * @module
 */
import { renderToString } from "preact-render-to-string";
import type { ComparedRun, Comparison, KpiName } from "../results/compare.ts";
import { KPI_SOURCE } from "../results/compare.ts";
import type { ReportData } from "../types.ts";
import { fmtDate } from "./page/format.ts";
import { Licence } from "./page/licence.tsx";
import { printStylesheet } from "./page/styles.ts";
import { VERDICT_KIND } from "./page/verdict.tsx";
import { LabDifferences, show } from "./compare_lab.tsx";

/** The licences of the compared runs (from their reports), one per licence id. */
export type CompareLicences = Array<ReportData["license"]>;

/** Render a comparison as a complete HTML5 document. `licences`: the distinct licences of its runs. */
export function renderComparePage(cmp: Comparison, licences: CompareLicences): string {
  return "<!DOCTYPE html>" + renderToString(<ComparePage cmp={cmp} licences={licences} />);
}

const num = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });
const sign = (n: number) => (n > 0 ? "+" : n < 0 ? "−" : "±") + num.format(Math.abs(n));
const shortId = (id: string) => id.slice(0, 8);

const CSS = `
table.cmp { font-size: 7.8pt; }
table.cmp td, table.cmp th { padding: .9mm 1.4mm; }
table.cmp .delta { display: block; font-size: 7pt; color: var(--muted); white-space: nowrap; }
table.cmp .delta.bad { color: var(--bad); font-weight: 700; }
tr.baseline td { background: #eff6ff; }
.chart { width: 100%; height: auto; display: block; margin: 1mm 0 3mm; break-inside: avoid; }
.chart text { font-family: inherit; }
.legend { font-size: 8pt; margin: 0 0 3mm; }
.legend span { margin-right: 4mm; }
ul.reasons { margin: 0; padding-left: 4mm; }
`;

const KPI_HEAD: Array<[KpiName, string, string]> = [
  ["p50Ms", "p50", "ms"],
  ["p95Ms", "p95", "ms"],
  ["p99Ms", "p99", "ms"],
  ["throughputRps", "Throughput", "req/s"],
  ["errorRatePct", "Error rate", "%"],
];

function KpiTd({ run, k }: { run: ComparedRun; k: KpiName }) {
  const c = run.kpis[k];
  return (
    <td class="num" data-kpi={k} data-regression={c.regression ? "yes" : undefined}>
      {c.value === null ? "—" : num.format(c.value)}
      {c.delta !== null && (
        <span class={`delta${c.regression ? " bad" : ""}`}>
          {sign(c.delta)}
          {c.deltaPct !== null && c.delta !== 0 ? ` (${sign(c.deltaPct)} %)` : ""}
        </span>
      )}
    </td>
  );
}

function KpiTable({ cmp }: { cmp: Comparison }) {
  return (
    <table class="cmp" data-table="kpis">
      <thead>
        <tr>
          <th>#</th>
          <th>Run</th>
          {KPI_HEAD.map(([k, label, unit]) => <th key={k} class="num">{label} ({unit})</th>)}
          <th>Verdict</th>
          <th>Flags</th>
        </tr>
      </thead>
      <tbody>
        {cmp.runs.map((r, i) => (
          <tr
            class={r.regression ? "hl-bad" : r.isBaseline ? "baseline" : ""}
            data-run={r.executionId}
            data-regression={r.regression ? "yes" : "no"}
          >
            <td>{i + 1}</td>
            <td>
              Run {r.runId}
              <span class="sub">{shortId(r.executionId)}</span>
              <span class="sub">{fmtDate(r.startedAt)}</span>
            </td>
            {KPI_HEAD.map(([k]) => <KpiTd key={k} run={r} k={k} />)}
            <td>
              <span class={`chip ${VERDICT_KIND[r.kpis.verdict.value ?? "none"] ?? "neutral"}`}>
                {(r.kpis.verdict.value ?? "n/a").toUpperCase()}
              </span>
            </td>
            <td>
              {r.isBaseline && <span class="chip neutral">BASELINE</span>}{" "}
              {r.regression && <span class="chip bad">REGRESSION</span>}{" "}
              {r.planDiffers && <span class="chip warn">PLAN</span>}{" "}
              {r.labDiffers && <span class="chip warn">LAB</span>}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** One line chart of some KPIs across the runs (x: run number), regression points in red. */
function Chart(
  { cmp, series, unit, title }: {
    cmp: Comparison;
    series: Array<{ k: KpiName; label: string; colour: string }>;
    unit: string;
    title: string;
  },
) {
  const W = 700, H = 190, L = 58, R = 12, T = 22, B = 28;
  const n = cmp.runs.length;
  const vals = series.flatMap((s) => cmp.runs.map((r) => r.kpis[s.k].value)).filter((v) => v !== null);
  if (!vals.length) {
    return <p class="muted">{title}: no run's report carries this figure.</p>;
  }
  const max = Math.max(...vals) || 1;
  const top = niceCeil(max);
  const x = (i: number) => L + (n === 1 ? 0 : i * (W - L - R) / (n - 1));
  const y = (v: number) => T + (H - T - B) * (1 - v / top);
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => f * top);
  return (
    <svg class="chart" viewBox={`0 0 ${W} ${H}`} role="img" aria-label={title} data-chart={title}>
      <text x={L} y={13} font-size="11" font-weight="600" fill="#111827">{title}</text>
      {ticks.map((t) => (
        <g>
          <line x1={L} x2={W - R} y1={y(t)} y2={y(t)} stroke="#e5e7eb" stroke-width="1" />
          <text x={L - 6} y={y(t) + 3.5} font-size="9" text-anchor="end" fill="#6b7280">
            {t === 0 ? "0" : String(Number(t.toPrecision(3)))} {unit}
          </text>
        </g>
      ))}
      {cmp.runs.map((r, i) => (
        <text
          x={x(i)}
          y={H - 10}
          font-size="9"
          text-anchor="middle"
          fill={r.regression ? "#b91c1c" : "#374151"}
        >
          {i + 1}
          {r.isBaseline ? " (base)" : ""}
        </text>
      ))}
      {series.map((s) => {
        const pts = cmp.runs.map((r, i) => [i, r.kpis[s.k].value, r] as const).filter(([, v]) => v !== null);
        return (
          <g data-series={s.k}>
            <polyline
              fill="none"
              stroke={s.colour}
              stroke-width="2"
              points={pts.map(([i, v]) => `${x(i).toFixed(1)},${y(v!).toFixed(1)}`).join(" ")}
            />
            {pts.map(([i, v, r]) => {
              const bad = r.kpis[s.k].regression;
              return (
                <circle
                  cx={x(i).toFixed(1)}
                  cy={y(v!).toFixed(1)}
                  r={bad ? 4.5 : 3}
                  fill={bad ? "#b91c1c" : s.colour}
                  stroke="#fff"
                  stroke-width="1"
                />
              );
            })}
          </g>
        );
      })}
    </svg>
  );
}

function niceCeil(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

const LAT = [
  { k: "p50Ms" as const, label: "p50", colour: "#059669" },
  { k: "p95Ms" as const, label: "p95", colour: "#0891b2" },
  { k: "p99Ms" as const, label: "p99", colour: "#1d4ed8" },
];

function Differences({ cmp }: { cmp: Comparison }) {
  const base = cmp.runs.find((r) => r.isBaseline)!;
  const plan = cmp.runs.filter((r) => r.planDiffers);
  return (
    <section class="sheet" data-section="differences">
      <h2>2. Differences against the baseline</h2>
      <h3>Runs cited</h3>
      <table class="cmp" data-table="runs">
        <thead>
          <tr>
            <th>#</th>
            <th>executionId</th>
            <th>reportSha256</th>
            <th>Plan (snapshot SHA-256)</th>
            <th>Licence</th>
          </tr>
        </thead>
        <tbody>
          {cmp.runs.map((r, i) => (
            <tr>
              <td>{i + 1}</td>
              <td>
                <code class="hex">{r.executionId}</code>
              </td>
              <td>
                <code class="hex">{r.reportSha256}</code>
              </td>
              <td>
                {r.planIdentifier}
                <span class="sub">{r.planSnapshotSha256.slice(0, 16)}…</span>
              </td>
              <td>{r.licenseId}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>Plan</h3>
      {plan.length === 0
        ? <p data-plan-diff="none">Every run used the baseline's plan (same plan snapshot SHA-256).</p>
        : (
          <table class="cmp" data-table="plan">
            <thead>
              <tr>
                <th>Run</th>
                <th>Parameter</th>
                <th>Baseline (run {base.runId})</th>
                <th>This run</th>
              </tr>
            </thead>
            <tbody>
              {plan.flatMap((r) =>
                r.planChanges.map((c) => (
                  <tr class="hl-warn">
                    <td>Run {r.runId}</td>
                    <td>
                      <code>{c.path}</code>
                    </td>
                    <td>{show(c.baseline)}</td>
                    <td>{show(c.value)}</td>
                  </tr>
                ))
              )}
            </tbody>
          </table>
        )}
      <h3>Lab at start</h3>
      <LabDifferences cmp={cmp} />
    </section>
  );
}

function ComparePage({ cmp, licences }: { cmp: Comparison; licences: CompareLicences }) {
  const plans = [...new Set(cmp.runs.map((r) => r.planIdentifier))];
  const [only] = licences;
  const licence = licences.length === 1 && only
    ? `Licence ${only.id} \u2014 ${only.name}`
    : `Licences ${licences.map((l) => l.id).join(", ")} (see the licensing pages)`;
  const css = printStylesheet({
    title: "Run comparison",
    header: `${cmp.runs.length} runs \u00b7 ${plans.join(", ")}`,
    licence,
  }) + CSS;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light" />
        <title>{`Run comparison — ${cmp.runs.length} runs of ${plans.join(", ")}`}</title>
        <style dangerouslySetInnerHTML={{ __html: css }} />
      </head>
      <body>
        <div class="topbar screen-only">
          <span>Comparison of {cmp.runs.length} runs</span>
          <span>Print or save as PDF: A4 portrait</span>
        </div>
        <main>
          <KpiSection cmp={cmp} />
          <Differences cmp={cmp} />
          {licences.map((l) => <Licence key={l.id} report={{ license: l }} />)}
        </main>
        <footer class="screen-footer screen-only">{licence}.</footer>
      </body>
    </html>
  );
}

/** The KPIs across the runs: regressions, the KPI table, its rule, the charts and the comparison's hash. */
function KpiSection({ cmp }: { cmp: Comparison }) {
  const base = cmp.runs.find((r) => r.isBaseline)!;
  const plans = [...new Set(cmp.runs.map((r) => r.planIdentifier))];
  const regressions = cmp.runs.filter((r) => r.regression);
  const t = cmp.thresholds;
  return (
    <section class="sheet" data-section="comparison">
      <span class="eyebrow">Run comparison</span>
      <h2>1. KPIs across {cmp.runs.length} runs</h2>
      <p>
        Plan{plans.length === 1 ? "" : "s"} <strong>{plans.join(", ")}</strong>. Baseline: run{" "}
        <strong>{base.runId}</strong> (<span class="mono">{base.executionId}</span>), started{" "}
        {fmtDate(base.startedAt)}. Runs oldest first; deltas against the baseline.
      </p>
      {regressions.length
        ? (
          <div class="callout" role="alert" data-regressions={regressions.length}>
            <strong class="title">
              {regressions.length} regression{regressions.length === 1 ? "" : "s"} against the baseline
            </strong>
            {regressions.map((r) => (
              <p data-regression-run={r.executionId}>
                Run <strong>{r.runId}</strong> ({shortId(r.executionId)}): {r.regressionReasons.join("; ")}.
              </p>
            ))}
          </div>
        )
        : (
          <div class="callout ok" data-regressions="0">
            <strong class="title">No regression against the baseline</strong>
          </div>
        )}
      <KpiTable cmp={cmp} />
      <p class="rule">
        Rule <span class="mono">{cmp.rule}</span>: a run is a regression when p50, p95 or p99 is more than
        {" "}
        {t.latencyPct} % above the baseline's, throughput more than {t.throughputPct}{" "}
        % below it, the error rate more than {t.errorRatePoints}{" "}
        percentage point above it, or its verdict is more severe. Figures from each run's frozen report:{" "}
        {Object.values(KPI_SOURCE).join(", ")}, verdict.value.
      </p>
      <Chart cmp={cmp} series={LAT} unit="ms" title="Latency (p50, p95, p99) per run" />
      <p class="legend">
        {LAT.map((s) => (
          <span>
            <span class="swatch" style={`background:${s.colour}`} />
            {s.label}
          </span>
        ))}
        <span>
          <span class="swatch" style="background:#b91c1c" />regression
        </span>
      </p>
      <Chart
        cmp={cmp}
        series={[{ k: "throughputRps", label: "throughput", colour: "#7c3aed" }]}
        unit="req/s"
        title="Throughput per run"
      />
      <Chart
        cmp={cmp}
        series={[{ k: "errorRatePct", label: "error rate", colour: "#ea580c" }]}
        unit="%"
        title="Error rate per run"
      />
      <div class="hashes">
        <div class="hash">
          <div class="label">Comparison SHA-256</div>
          <code class="hex" data-hash="comparison">{cmp.comparisonSha256}</code>
        </div>
        <p class="verify">
          SHA-256 of the RFC 8785 canonical JSON of the comparison (POST /api/test-runs/compare with the same
          executionIds and baseline) without its comparisonSha256 member.
        </p>
      </div>
    </section>
  );
}
