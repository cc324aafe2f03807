/**
 * Small pieces shared by several sections of the report page: icons, badges, chips, key/value tables and
 * the invalidation notice.
 *
 * @module
 */
import type { ComponentChildren } from "preact";
import type { ReportData } from "../../types.ts";
import { fmtDate } from "./format.ts";

export const Check = () => (
  <svg viewBox="0 0 16 16" aria-hidden="true">
    <path
      d="M3 8.5l3.2 3.2L13 5"
      fill="none"
      stroke="currentColor"
      stroke-width="2.4"
      stroke-linecap="round"
    />
  </svg>
);
export const Cross = () => (
  <svg viewBox="0 0 16 16" aria-hidden="true">
    <path
      d="M4 4l8 8M12 4l-8 8"
      fill="none"
      stroke="currentColor"
      stroke-width="2.4"
      stroke-linecap="round"
    />
  </svg>
);

export function SloBadge({ report }: { report: ReportData }) {
  const pass = report.slo.pass;
  return (
    <span class={`badge ${pass ? "ok" : "bad"}`} data-slo={pass ? "pass" : "fail"}>
      {pass ? <Check /> : <Cross />}
      {pass ? "SLO PASS" : "SLO FAIL"}
    </span>
  );
}

export function OutcomeBadge({ outcome }: { outcome: string }) {
  const kind = outcome === "passed"
    ? "ok"
    : outcome === "failed"
    ? "bad"
    : outcome === "aborted"
    ? "warn"
    : "neutral";
  return <span class={`badge ${kind}`}>Outcome: {outcome}</span>;
}

export function Chip({ state }: { state: string }) {
  const kind = state === "on" || state === "off" ? state : "unknown";
  return <span class={`chip ${kind}`}>{state}</span>;
}

export function Kv({ children }: { children: ComponentChildren }) {
  return (
    <table class="kv">
      <tbody>{children}</tbody>
    </table>
  );
}

/** A key/value row; `field` names the ReportData member shown. */
export function Row(
  { label, field, children }: { label: ComponentChildren; field?: string; children: ComponentChildren },
) {
  return (
    <tr>
      <th scope="row">
        {label}
        {field && <span class="key">{field}</span>}
      </th>
      <td>{children}</td>
    </tr>
  );
}

/** The invalidation notice and decrypt-mode alerts; `detailed` lists each alert (summary page). */
export function Invalidation({ report, detailed }: { report: ReportData; detailed: boolean }) {
  const { slo, tlsDecrypt } = report;
  const alerts = tlsDecrypt.alerts;
  if (!tlsDecrypt.resultsInvalidated && !slo.verdictNote && alerts.length === 0) return null;
  const title = tlsDecrypt.resultsInvalidated
    ? "SLO verdict invalidated"
    : alerts.length > 0
    ? "TLS decryption changed during the run"
    : "Verdict note";
  return (
    <div class="callout" role="alert" data-invalidation="">
      <strong class="title">{title}</strong>
      <p>
        {slo.verdictNote ??
          (tlsDecrypt.resultsInvalidated
            ? "A change of TLS decryption state during the run invalidated the results that span it."
            : "")}
      </p>
      {alerts.length > 0 && !detailed && (
        <p>
          {alerts.length}{" "}
          TLSDecryptModeChanged alert{alerts.length === 1 ? "" : "s"}: see the executive summary.
        </p>
      )}
      {detailed && alerts.map((al) => (
        <p data-alert="">
          <strong>{al.name}</strong> at {fmtDate(al.at)}: TLS decryption on{" "}
          <strong>{al.deviceHostname}</strong> changed from <strong>{al.from}</strong> to{" "}
          <strong>{al.to}</strong> (snapshot {al.snapshotId}).
        </p>
      ))}
    </div>
  );
}

/**
 * The run's start gate when it was overridden: a callout saying the run started over a failed pre-flight, who
 * overrode the gate, when and why. Nothing for an ungated run, a passed gate or a report frozen before gating.
 */
export function StartOverride({ report }: { report: ReportData }) {
  const gate = report.startGate;
  const o = gate?.override;
  if (!gate || !o) return null;
  return (
    <div class="callout" role="alert" data-start-override="">
      <strong class="title">Started over a failed pre-flight</strong>
      <p>
        The start gate ({gate.source === "plan" ? "the plan's startGate" : "requirePreflightPass"}) required a
        passing pre-flight; it did not pass, and <strong>{o.by}</strong> ({o.role}) overrode the gate at{" "}
        {fmtDate(o.at)}.
      </p>
      <p data-override-reason="">Reason: {o.reason}</p>
    </div>
  );
}

/** One line on the start gate, for the cover's facts (null for reports frozen before gating existed). */
export function startGateText(report: ReportData): string | null {
  const gate = report.startGate;
  if (!gate) return null;
  if (!gate.gated) return `not gated · pre-flight at start ${gate.preflightPass ? "passed" : "did not pass"}`;
  const by = gate.source === "plan" ? "gated by the plan (preflight-pass)" : "gated by the start request";
  return gate.override
    ? `${by} · pre-flight did not pass · overridden by ${gate.override.by}`
    : `${by} · pre-flight passed`;
}
