/**
 * Section 1 of the report page, the executive summary: SLO and error budget, the latency aggregate, every
 * figure of the whole result, TLS decryption and its alerts.
 *
 * @module
 */
import type { Figure, ReportData } from "../../types.ts";
import { fmtDate, fmtDuration, fmtMs, fmtPct, int, num } from "./format.ts";
import { Chip, Invalidation, SloBadge } from "./parts.tsx";
import { SloExplained } from "./verdict.tsx";

export function Summary({ report }: { report: ReportData }) {
  const { slo, results } = report;
  const a = results.aggregate;
  const burned = slo.errorBudgetBurnedPct;
  const gaugeColour = burned > 100 ? "#b91c1c" : burned >= 75 ? "#d97706" : "#059669";
  const ratio = slo.targetP99Ms > 0 ? (slo.observedP99Ms / slo.targetP99Ms) * 100 : 0;
  const kpis: Array<[string, string, string, boolean?]> = [
    ["Samples", int.format(a.count), "requests"],
    ["Min", num.format(a.min_ms), "ms"],
    ["Mean", num.format(a.mean_ms), "ms"],
    ["p50", num.format(a.p50_ms), "ms"],
    ["p95", num.format(a.p95_ms), "ms"],
    ["p99", num.format(a.p99_ms), "ms", true],
    ["Max", num.format(a.max_ms), "ms"],
  ];
  const estimated =
    (slo.errorBudgetExactness ?? (results.source === "k6-summary" ? "estimated" : "exact")) ===
      "estimated";
  const prov = results.latencyProvenance ??
    (results.source === "k6-summary"
      ? { source: "load-generator", exactness: "exact", basis: "k6 http_req_duration trend (p50 = med)" }
      : { source: "service", exactness: "exact", basis: "percentiles of the submitted samples" });
  return (
    <section class="sheet" data-section="summary">
      <h2>1. Executive summary</h2>
      <Invalidation report={report} detailed />
      <div class="verdict">
        <div class="panel">
          <div class="label">Service level objective (p99 latency)</div>
          <div style="margin: 2mm 0">
            <SloBadge report={report} />
          </div>
          <div>
            Observed p99 <strong>{fmtMs(slo.observedP99Ms)}</strong> against a target of{" "}
            <strong>{fmtMs(slo.targetP99Ms)}</strong> ({fmtPct(ratio)} of target).
          </div>
          <SloExplained report={report} />
        </div>
        <div class="panel">
          <div class="label">
            Error budget burned{estimated ? " (estimated)" : " (exact)"}
          </div>
          <div class="big">{fmtPct(burned)}</div>
          <div class="gauge" aria-hidden="true">
            <div style={`width:${Math.max(0, Math.min(100, burned))}%;background:${gaugeColour}`} />
          </div>
          <div class="muted" style="font-size:8pt">
            A p99 objective lets 1 % of requests exceed the target; burned = share of requests slower than the
            target ÷ 1 %. {estimated
              ? "Estimated by the service from the load generator's exported percentiles (linear interpolation)."
              : "Exact: counted over every submitted sample."}
          </div>
        </div>
      </div>

      <h3>Latency, aggregate over the run</h3>
      <div class="kpis">
        {kpis.map(([label, value, unit, hl]) => (
          <div class={hl ? "kpi hl" : "kpi"}>
            <div class="label">{label}</div>
            <div class="value">{value}</div>
            <div class="unit">{unit}</div>
          </div>
        ))}
      </div>
      <p class="muted" style="font-size:8pt;margin-top:1.5mm">
        Source: {results.source === "k6-summary" ? "k6 summary" : "raw latency samples"}; percentiles{" "}
        {prov.source === "load-generator"
          ? "computed by the load generator (k6)"
          : "computed by the service"}, {prov.exactness} ({prov.basis}).
      </p>

      <h3>Whole result</h3>
      <WholeResult report={report} />

      <DecryptSection report={report} />
    </section>
  );
}

/** TLS decryption against the plan, and the decrypt-mode alerts of the run. */
function DecryptSection({ report }: { report: ReportData }) {
  const { tlsDecrypt } = report;
  const mismatch = (s: string) => s !== tlsDecrypt.required;
  return (
    <>
      <h3>TLS decryption</h3>
      <table>
        <thead>
          <tr>
            <th>Required by plan</th>
            <th>Active at start</th>
            <th>Active at end</th>
            <th>Assessment</th>
          </tr>
        </thead>
        <tbody>
          <tr>
            <td>
              <Chip state={tlsDecrypt.required} />
            </td>
            <td>
              <Chip state={tlsDecrypt.activeAtStart} />
            </td>
            <td>
              <Chip state={tlsDecrypt.activeAtEnd} />
            </td>
            <td>
              {tlsDecrypt.resultsInvalidated
                ? "Changed during the run: results invalidated"
                : mismatch(tlsDecrypt.activeAtStart) || mismatch(tlsDecrypt.activeAtEnd)
                ? "Differs from the plan"
                : "Matches the plan throughout"}
            </td>
          </tr>
        </tbody>
      </table>

      <h3>Decrypt-mode alerts</h3>
      {tlsDecrypt.alerts.length === 0
        ? <p class="muted">No TLSDecryptModeChanged alert was raised during the run.</p>
        : (
          <table>
            <thead>
              <tr>
                <th>Alert</th>
                <th>Time</th>
                <th>Device</th>
                <th>Change</th>
                <th>Snapshot</th>
              </tr>
            </thead>
            <tbody>
              {tlsDecrypt.alerts.map((al) => (
                <tr>
                  <td>{al.name}</td>
                  <td>{fmtDate(al.at)}</td>
                  <td>
                    {al.deviceHostname}
                    <span class="sub">{al.deviceId}</span>
                  </td>
                  <td>
                    <Chip state={al.from} /> → <Chip state={al.to} />
                  </td>
                  <td class="mono">{al.snapshotId}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
    </>
  );
}

const FIGURES: Array<[keyof NonNullable<ReportData["results"]["figures"]>, string]> = [
  ["durationS", "Duration of the load"],
  ["requests", "Requests"],
  ["requestsPerSecond", "Throughput, requests"],
  ["bitsPerSecond", "Throughput, bits"],
  ["failedRequests", "Failed requests"],
  ["errorRatePct", "Error rate"],
  ["bytesSent", "Bytes sent"],
  ["bytesReceived", "Bytes received"],
  ["iterations", "Iterations"],
];

/** 1,234.5 Mbit/s and the like for bit rates and byte counts; plain numbers otherwise. */
function fmtFigure(f: Figure): string {
  const scaled = (v: number, unit: string, base: number, prefixes: string[]) => {
    let i = 0;
    while (v >= base && i < prefixes.length - 1) {
      v /= base;
      i++;
    }
    return `${num.format(v)} ${prefixes[i]}${unit}`;
  };
  if (f.unit === "bit/s") return scaled(f.value, "bit/s", 1000, ["", "k", "M", "G", "T"]);
  if (f.unit === "bytes") {
    return `${scaled(f.value, "B", 1000, ["", "k", "M", "G", "T"])} (${int.format(f.value)} bytes)`;
  }
  if (f.unit === "s") return `${fmtDuration(f.value)} (${num.format(f.value)} s)`;
  if (f.unit === "%") {
    const small = f.value !== 0 && Math.abs(f.value) < 1;
    const opts = small ? { maximumSignificantDigits: 2 } : { maximumFractionDigits: 3 };
    return `${new Intl.NumberFormat("en-US", opts).format(f.value)} %`;
  }
  return `${num.format(f.value)} ${f.unit}`;
}

/** Every figure of the result, with where it came from and whether it is exact. */
function WholeResult({ report }: { report: ReportData }) {
  const { results, plan } = report;
  const f = results.figures;
  if (!f) {
    return (
      <p class="muted">
        This report was frozen before the whole result was recorded: only the latency aggregate above is
        available.
      </p>
    );
  }
  const thresholds = results.thresholds ?? [];
  return (
    <>
      <table data-figures="">
        <thead>
          <tr>
            <th>Figure</th>
            <th class="num">Value</th>
            <th>From</th>
            <th>Exact?</th>
            <th>How</th>
          </tr>
        </thead>
        <tbody>
          {FIGURES.map(([key, label]) => {
            const x = f[key];
            const over = key === "errorRatePct" && x && plan.maxErrorRatePct !== undefined &&
              x.value > plan.maxErrorRatePct;
            return (
              <tr class={over ? "hl-bad" : ""}>
                <td>
                  {label}
                  {key === "errorRatePct" && plan.maxErrorRatePct !== undefined && (
                    <span class="sub">plan allows ≤ {plan.maxErrorRatePct} %</span>
                  )}
                </td>
                <td class="num">{x ? fmtFigure(x) : <span class="muted">not reported</span>}</td>
                <td>
                  {x ? (x.source === "load-generator" ? "load generator" : "computed by the service") : "—"}
                </td>
                <td>{x ? x.exactness : "—"}</td>
                <td class="small">{x ? x.basis : "the input does not carry it"}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {(thresholds.length > 0 || results.checks) && (
        <table data-thresholds="">
          <thead>
            <tr>
              <th>Load generator threshold or check</th>
              <th>Result</th>
            </tr>
          </thead>
          <tbody>
            {thresholds.map((t) => (
              <tr class={t.ok ? "" : "hl-bad"}>
                <td>
                  <span class="mono">{t.metric}</span> <span class="mono">{t.expression}</span>
                </td>
                <td>
                  <span class={`chip ${t.ok ? "ok" : "bad"}`}>{t.ok ? "HELD" : "CROSSED"}</span>
                </td>
              </tr>
            ))}
            {results.checks && (
              <tr class={results.checks.fails > 0 ? "hl-warn" : ""}>
                <td>k6 checks</td>
                <td>
                  {int.format(results.checks.passes)} passed, {int.format(results.checks.fails)} failed
                </td>
              </tr>
            )}
          </tbody>
        </table>
      )}
    </>
  );
}
